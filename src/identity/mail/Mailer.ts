/**
 * The identity provider's mail: `send` only writes the message into `mail_outbox`
 * (migrations/0014_mail_outbox.ts). Inside the caller's `sql.withTransaction` the row is part of
 * that transaction: a verification code is mailed exactly when the code itself was committed, never
 * for a rolled-back one, and a committed one is never lost to an SMTP outage. No request waits on
 * SMTP: the delivery worker (src/identity/mail/MailDelivery.ts) sends the outbox in the background,
 * woken by the table's NOTIFY at commit.
 *
 * `mailbox` reads the outbox back for the development mailbox (src/identity/http/DevHttp.ts).
 * Message bodies carry codes: they are never logged.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { MaxLength } from "../../../schema/Identity/Limits.js"

export interface MailMessage {
  readonly to: string
  readonly subject: string
  /** The plain-text body, always sent. */
  readonly text: string
  /** An HTML alternative of the same content (sent as multipart/alternative, RFC 2046 section 5.1.4). */
  readonly html?: string | undefined
}

export interface OutboxMessage {
  readonly to: string
  readonly subject: string
  readonly text: string
  readonly html: string | null
  readonly createdAt: Date
}

/** Messages the development mailbox lists at most (the newest, oldest first). */
export const MAILBOX_LIMIT = 100

const OutboxRow = Schema.Struct({
  to_address: Schema.String,
  subject: Schema.String,
  text_body: Schema.String,
  html_body: Schema.NullOr(Schema.String),
  created_at: Schema.Date
})
const decodeRows = Schema.decodeUnknownEffect(Schema.Array(OutboxRow))

/**
 * A header line break would let a caller's value add headers of its own (nodemailer folds and
 * encodes values, but a recipient or subject with CR or LF is a bug wherever it came from).
 */
const singleLine = (value: string) => !/[\r\n\u0000]/.test(value)

export class Mailer extends Context.Service<Mailer>()("identity/Mailer", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** Queues one message, in the caller's transaction when there is one. */
    const send = Effect.fn("Mailer.send")(function*(message: MailMessage) {
      const to = message.to.trim()
      if (!singleLine(to) || !to.includes("@") || to.length > MaxLength.email || !singleLine(message.subject)) {
        return yield* Effect.die(new Error("Mailer.send: the recipient or subject is not a single-line value"))
      }
      yield* sql`
        INSERT INTO mail_outbox (to_address, subject, text_body, html_body)
        VALUES (${to}, ${message.subject}, ${message.text}, ${message.html ?? null})
      `.pipe(Effect.orDie)
    })

    /**
     * What the outbox holds for `to` (case-insensitively; every recipient without it), sent or not:
     * the newest `MAILBOX_LIMIT`, oldest first.
     */
    const mailbox = Effect.fn("Mailer.mailbox")(function*(to: string | undefined) {
      const recipient = to?.trim() ?? ""
      const rows = yield* sql`
        SELECT * FROM (
          SELECT id, to_address, subject, text_body, html_body, created_at FROM mail_outbox
          WHERE ${recipient === "" ? sql`true` : sql`lower(to_address) = lower(${recipient})`}
          ORDER BY id DESC LIMIT ${MAILBOX_LIMIT}
        ) newest ORDER BY id
      `.pipe(Effect.flatMap(decodeRows), Effect.orDie)
      return rows.map((row): OutboxMessage => ({
        to: row.to_address,
        subject: row.subject,
        text: row.text_body,
        html: row.html_body,
        createdAt: row.created_at
      }))
    })

    return { send, mailbox } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
