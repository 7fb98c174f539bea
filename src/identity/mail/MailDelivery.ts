/**
 * The delivery worker: sends `mail_outbox` (migrations/0014_mail_outbox.ts) over SMTP (`SMTP_URL`)
 * from a fiber that lives as long as the identity server's stack. Without `SMTP_URL` it does not
 * run and messages stay in the outbox (the development mailbox shows them, src/identity/http/DevHttp.ts).
 *
 * Every identity process may run it at once. A worker claims a few due rows in one statement
 * (`FOR UPDATE SKIP LOCKED`, so claims never wait on each other) and pushes their `next_attempt_at`
 * `LEASE_SECONDS` ahead: a row one worker is sending is due for nobody else until its attempt has long
 * ended. Then it marks the row sent, or backs off: `next_attempt_at` moves `2^(attempts-1)` times
 * `RETRY_BASE_SECONDS` ahead, at most `RETRY_MAX_SECONDS`; a message SMTP refused for good (a 5xx
 * reply to its envelope or content, RFC 5321 section 4.2.1) or that failed `MAX_ATTEMPTS` times is
 * marked failed. A message is sent twice only if the process stops (or the database fails) between
 * the server's acceptance and the mark, or an attempt outlives its lease: mail is at least once.
 *
 * The worker sleeps until the next row is due, at most `MailPollSeconds`, and wakes at once when an
 * insert commits (the table's NOTIFY, src/platform/Notifications.ts keeps the LISTEN).
 *
 * Logs name the outbox row and the SMTP error code, never a body, a recipient or `SMTP_URL`.
 */
import { Context, Duration, Effect, Layer, Option, Queue, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import Nodemailer from "nodemailer"
import { keepListening } from "../../platform/Notifications.js"
import { MailConfig } from "./MailConfig.js"

export const MAIL_CHANNEL = "mail_outbox"

/** Rows one worker claims and sends at once. */
const BATCH_SIZE = 5
/** How long a claimed row is nobody else's: far beyond an attempt's `SEND_TIMEOUT`. */
const LEASE_SECONDS = 300
/** An attempt is abandoned (and retried) after this long. */
const SEND_TIMEOUT = Duration.seconds(60)
const RETRY_BASE_SECONDS = 2
const RETRY_MAX_SECONDS = 3600
/** About a day of attempts with the delays above. */
const MAX_ATTEMPTS = 30
/**
 * The longest sleep, in seconds: a notification lost while the listener reconnects costs at most
 * this. A reference so a test can set it far out and show that a NOTIFY, not the poll, woke the worker.
 */
export const MailPollSeconds = Context.Reference<number>("identity/MailPollSeconds", { defaultValue: () => 5 })

/** The delay before attempt `attempts + 1`, after `attempts` failed ones. */
export const retryDelaySeconds = (attempts: number): number =>
  Math.min(RETRY_MAX_SECONDS, RETRY_BASE_SECONDS * 2 ** Math.max(0, attempts - 1))

const ClaimedRow = Schema.Struct({
  id: Schema.NumberFromString,
  to_address: Schema.String,
  subject: Schema.String,
  text_body: Schema.String,
  html_body: Schema.NullOr(Schema.String),
  attempts: Schema.Number
})
type ClaimedRow = typeof ClaimedRow.Type
const decodeClaimed = Schema.decodeUnknownEffect(Schema.Array(ClaimedRow))

/** What nodemailer's errors carry besides their message. */
interface SmtpError {
  readonly code?: unknown
  readonly responseCode?: unknown
  readonly message?: unknown
}

/** Refused for good: a 5xx reply to the envelope or the message itself (not to authentication). */
const isPermanent = (error: SmtpError) =>
  typeof error.responseCode === "number" && error.responseCode >= 500 && error.responseCode < 600 &&
  (error.code === "EENVELOPE" || error.code === "EMESSAGE")

const describe = (error: SmtpError) =>
  [error.code, error.responseCode, error.message].filter((part) => part !== undefined).join(" ").slice(0, 500)

export class MailDelivery extends Context.Service<MailDelivery>()("identity/MailDelivery", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* MailConfig

    const smtpUrl = config.smtpUrl
    if (Option.isNone(smtpUrl)) {
      if (config.production) yield* Effect.logWarning("SMTP_URL is not set: mail stays in the outbox")
      return { running: false as boolean }
    }

    const transport = yield* Effect.acquireRelease(
      Effect.sync(() =>
        Nodemailer.createTransport({
          url: Redacted.value(smtpUrl.value),
          connectionTimeout: 10_000,
          greetingTimeout: 10_000,
          socketTimeout: 30_000
        })
      ),
      (transport) => Effect.sync(() => transport.close())
    )

    const claim = sql`
      UPDATE mail_outbox SET attempts = attempts + 1,
        next_attempt_at = now() + make_interval(secs => ${LEASE_SECONDS}::float8)
      WHERE id IN (
        SELECT id FROM mail_outbox
        WHERE sent_at IS NULL AND failed_at IS NULL AND next_attempt_at <= now()
        ORDER BY next_attempt_at, id
        LIMIT ${BATCH_SIZE} FOR UPDATE SKIP LOCKED
      )
      RETURNING id::text AS id, to_address, subject, text_body, html_body, attempts
    `.pipe(Effect.flatMap(decodeClaimed))

    const sendOne = (row: ClaimedRow) =>
      Effect.tryPromise({
        try: () =>
          transport.sendMail({
            from: config.from,
            to: row.to_address,
            subject: row.subject,
            text: row.text_body,
            ...(row.html_body === null ? {} : { html: row.html_body })
          }),
        catch: (error): SmtpError => typeof error === "object" && error !== null ? error : { message: String(error) }
      }).pipe(
        Effect.timeoutOrElse({
          duration: SEND_TIMEOUT,
          orElse: () => Effect.fail<SmtpError>({ code: "ETIMEDOUT" })
        }),
        Effect.matchEffect({
          onSuccess: () => sql`UPDATE mail_outbox SET sent_at = now(), last_error = NULL WHERE id = ${row.id}`,
          onFailure: (error) => {
            const giveUp = isPermanent(error) || row.attempts >= MAX_ATTEMPTS
            const log = Effect.logWarning(giveUp ? "mail not deliverable; giving up" : "mail delivery failed").pipe(
              Effect.annotateLogs({
                outbox_id: row.id,
                attempts: row.attempts,
                smtp_code: String(error.code ?? ""),
                smtp_response: String(error.responseCode ?? "")
              })
            )
            const mark = giveUp
              ? sql`UPDATE mail_outbox SET failed_at = now(), last_error = ${describe(error)} WHERE id = ${row.id}`
              : sql`
                UPDATE mail_outbox SET last_error = ${describe(error)},
                  next_attempt_at = now() + make_interval(secs => ${retryDelaySeconds(row.attempts)}::float8)
                WHERE id = ${row.id}
              `
            return Effect.andThen(log, mark)
          }
        }),
        Effect.asVoid
      )

    /** Claims and sends one batch; answers how many rows it claimed. */
    const deliverBatch = Effect.gen(function*() {
      const rows = yield* claim
      yield* Effect.forEach(rows, sendOne, { concurrency: BATCH_SIZE, discard: true })
      return rows.length
    })

    const pollSeconds = yield* MailPollSeconds
    /** Seconds until the next pending row is due (0: now), at most `pollSeconds`. */
    const untilNextDue = sql<{ wait: number | null }>`
      SELECT extract(epoch FROM min(next_attempt_at) - now())::float8 AS wait FROM mail_outbox
      WHERE sent_at IS NULL AND failed_at IS NULL
    `.pipe(Effect.map((rows) => Math.min(pollSeconds, Math.max(0, rows[0]?.wait ?? pollSeconds))))

    const wake = yield* Queue.sliding<void>(1)
    yield* keepListening(MAIL_CHANNEL, {
      onConnected: Queue.offer(wake, undefined),
      onNotification: () => Queue.offer(wake, undefined)
    })

    const round = Effect.gen(function*() {
      while ((yield* deliverBatch) === BATCH_SIZE) {
        // A full batch: more may be due right away.
      }
      const wait = yield* untilNextDue
      if (wait > 0) yield* Effect.timeoutOption(Queue.take(wake), Duration.seconds(wait))
      // Drop a wake-up that arrived meanwhile (without waiting for one).
      yield* Queue.clear(wake)
    })

    yield* round.pipe(
      Effect.catchCause((cause) =>
        Effect.andThen(Effect.logWarning("mail delivery round failed", cause), Effect.sleep(Duration.seconds(1)))
      ),
      Effect.forever,
      Effect.annotateLogs({ worker: "mail" }),
      Effect.forkScoped
    )
    return { running: true as boolean }
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
