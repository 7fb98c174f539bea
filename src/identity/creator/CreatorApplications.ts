/**
 * Creator applications (schema/Api/IdentityCreatorApi.ts; migrations/0017_creator_applications.ts):
 * a signed-in user asks for the `creator` role, an operator decides with the CLI.
 *
 * - `apply` refuses, in this order: a body outside the request schema's bounds or with a member it
 *   does not name, `"status": "approved"` say (17004), a user who
 *   already holds `creator` (17003), an undecided application (17002), a declined one decided less
 *   than 30 days ago (17001, `Retry-After` until then). The user's roles and newest application are
 *   read in one statement, so they come from one snapshot. Two simultaneous applications both pass
 *   the checks; the table's partial unique index keeps one, the other's unique violation is 17002.
 *   Time is the database's throughout (`now()`), like the rows' own timestamps.
 * - `decide` is one transaction: the application leaves `pending` only if it still is (two
 *   operators deciding at once: the second finds it decided and changes nothing), an approval adds
 *   `creator` to `users.roles`, and the applicant's mail is queued (src/identity/mail/Mailer.ts), so
 *   a decision is mailed exactly when it is committed.
 */
import { Context, Data, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql"
import {
  CreatorApplication,
  CreatorApplicationRequest,
  CreatorApplicationStatus,
  REAPPLY_AFTER_DAYS
} from "../../../schema/Identity/Creator.js"
import { isUniqueViolation } from "../../platform/SqlState.js"
import { Mailer } from "../mail/Mailer.js"
import { html } from "../pages/shared/Html.js"
import { refused, retryAfter } from "../shared/Refused.js"
import { Users } from "../users/Users.js"

export type Decision = "approve" | "decline"

/** An application as the operator sees it: with its applicant and who decided it. */
export interface ApplicationEntry {
  readonly application: CreatorApplication
  readonly userId: number
  readonly email: string
  readonly name: string
  readonly decidedBy: string | null
}

/** `decide` on an application that is no longer pending; nothing was changed. */
export class AlreadyDecided extends Data.TaggedError("AlreadyDecided")<{
  readonly status: CreatorApplicationStatus
  readonly decidedAt: Date | null
}> {}

const Row = Schema.Struct({
  id: Schema.String,
  user_id: Schema.Union([Schema.Number, Schema.NumberFromString]),
  status: CreatorApplicationStatus,
  statement: Schema.String,
  portfolio_url: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  decided_at: Schema.NullOr(Schema.Date),
  decided_by: Schema.NullOr(Schema.String)
})
const decodeRows = Schema.decodeUnknownEffect(Schema.Array(Row))

const EntryRow = Schema.Struct({ ...Row.fields, email: Schema.String, name: Schema.String })
const decodeEntries = Schema.decodeUnknownEffect(Schema.Array(EntryRow))

const StandingRow = Schema.Struct({
  creator: Schema.Boolean,
  status: Schema.NullOr(CreatorApplicationStatus),
  /** Seconds until a declined application's wait is over (negative once it is). */
  wait_seconds: Schema.NullOr(Schema.Number)
})
const decodeStanding = Schema.decodeUnknownEffect(Schema.Array(StandingRow))

const StatusRow = Schema.Struct({ status: CreatorApplicationStatus, decided_at: Schema.NullOr(Schema.Date) })
const decodeStatus = Schema.decodeUnknownEffect(Schema.Array(StatusRow))

/** As the endpoint declares (schema/Api/IdentityCreatorApi.ts): a member the body's schema does not name is refused. */
const decodeRequest = Schema.decodeUnknownEffect(CreatorApplicationRequest, { onExcessProperty: "error" })

const seconds = (date: Date) => Math.floor(date.getTime() / 1000)

const toApplication = (row: typeof Row.Type) =>
  new CreatorApplication({
    id: row.id,
    status: row.status,
    statement: row.statement,
    portfolio_url: row.portfolio_url,
    created_at: seconds(row.created_at),
    decided_at: row.decided_at === null ? null : seconds(row.decided_at)
  })

const toEntry = (row: typeof EntryRow.Type): ApplicationEntry => ({
  application: toApplication(row),
  userId: row.user_id,
  email: row.email,
  name: row.name,
  decidedBy: row.decided_by
})

// v3's `Schema.UUID` checked the dashed hexadecimal shape only, which is `isGUID` (not `isUUID`'s version bits).
const isUuid = Schema.is(Schema.String.check(Schema.isGUID()))

/** The one pending application a user may have (migrations/0017). */
const isPendingConflict = (error: SqlError.SqlError) => isUniqueViolation(error, "creator_applications_pending_key")

/** The applicant's mail: plain text and the same as HTML (values escaped). */
const decisionMail = (entry: ApplicationEntry) => {
  const greeting = entry.name.trim() === "" ? "Hello," : `Hello ${entry.name},`
  if (entry.application.status === "approved") {
    const lines = [
      "Your application to publish as a creator on shiori was approved: your account now holds the creator role.",
      "Applications you use see it the next time they sign you in or refresh your session (within 15 minutes)."
    ]
    return {
      subject: "Your creator application was approved",
      text: `${greeting}\n\n${lines.join("\n\n")}\n`,
      html: html`<p>${greeting}</p><p>${lines[0]}</p><p>${lines[1]}</p>`.value
    }
  }
  const decidedAt = (entry.application.decided_at ?? seconds(new Date())) * 1000
  const again = new Date(decidedAt + REAPPLY_AFTER_DAYS * 86_400_000).toISOString().slice(0, 10)
  const lines = [
    "Your application to publish as a creator on shiori was not approved this time.",
    `You may apply again from ${again} (UTC).`
  ]
  return {
    subject: "Your creator application was declined",
    text: `${greeting}\n\n${lines.join("\n\n")}\n`,
    html: html`<p>${greeting}</p><p>${lines[0]}</p><p>${lines[1]}</p>`.value
  }
}

export class CreatorApplications extends Context.Service<CreatorApplications>()("identity/CreatorApplications", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const users = yield* Users
    const mailer = yield* Mailer

    /** A new pending application of `userId` from a request body (already parsed from JSON). */
    const apply = Effect.fn("CreatorApplications.apply")(function*(userId: number, body: unknown) {
      const request = yield* decodeRequest(body).pipe(Effect.mapError(() => refused("APPLICATION_INVALID")))
      const standing = yield* sql`
        SELECT 'creator' = ANY(u.roles) AS creator, a.status,
               CASE WHEN a.status = 'declined' THEN
                 extract(epoch FROM a.decided_at + make_interval(days => ${REAPPLY_AFTER_DAYS}) - now())::float8
               END AS wait_seconds
        FROM users u
        LEFT JOIN LATERAL (
          SELECT status, decided_at FROM creator_applications
          WHERE user_id = u.id ORDER BY created_at DESC LIMIT 1
        ) a ON true
        WHERE u.id = ${userId}
      `.pipe(Effect.flatMap(decodeStanding), Effect.orDie)
      const current = standing[0]
      // The account went away after its token was checked.
      if (current === undefined) return yield* refused("TOKEN_INVALID")
      if (current.creator) return yield* refused("ALREADY_CREATOR")
      if (current.status === "pending") return yield* refused("APPLICATION_PENDING")
      if (current.wait_seconds !== null && current.wait_seconds > 0) {
        return yield* refused("ALREADY_APPLIED", retryAfter(current.wait_seconds))
      }
      // The role is checked again as the row is written: an approval committed since the read wins.
      const rows = yield* sql`
        INSERT INTO creator_applications (user_id, statement, portfolio_url)
        SELECT id, ${request.statement}, ${request.portfolio_url ?? null} FROM users
        WHERE id = ${userId} AND NOT ('creator' = ANY(roles))
        RETURNING *
      `.pipe(
        Effect.catchTag(
          "SqlError",
          (error) => isPendingConflict(error) ? refused("APPLICATION_PENDING") : Effect.die(error)
        ),
        Effect.flatMap((rows) => Effect.orDie(decodeRows(rows)))
      )
      const row = rows[0]
      if (row === undefined) return yield* refused("ALREADY_CREATOR")
      return toApplication(row)
    })

    /** The user's newest application, if they ever applied. */
    const mine = Effect.fn("CreatorApplications.mine")(function*(userId: number) {
      const rows = yield* sql`
        SELECT * FROM creator_applications WHERE user_id = ${userId} ORDER BY created_at DESC LIMIT 1
      `.pipe(Effect.flatMap(decodeRows), Effect.orDie)
      return Option.map(Option.fromNullishOr(rows[0]), toApplication)
    })

    /** Every application (or only the pending ones), oldest first: the order they are to be decided in. */
    const list = Effect.fn("CreatorApplications.list")(function*(options: { readonly pendingOnly: boolean }) {
      const rows = yield* sql`
        SELECT a.*, u.email, u.name FROM creator_applications a JOIN users u ON u.id = a.user_id
        WHERE ${options.pendingOnly ? sql`a.status = 'pending'` : sql`true`}
        ORDER BY a.created_at, a.id
      `.pipe(Effect.flatMap(decodeEntries), Effect.orDie)
      return rows.map(toEntry)
    })

    /**
     * Approves or declines a pending application; `decidedBy` names the operator. Fails with 17005
     * for an unknown id and `AlreadyDecided` for one no longer pending, changing nothing.
     */
    const decide = Effect.fn("CreatorApplications.decide")(
      function*(id: string, decision: Decision, decidedBy: string) {
        if (!isUuid(id)) return yield* refused("APPLICATION_NOT_FOUND")
        const status: CreatorApplicationStatus = decision === "approve" ? "approved" : "declined"
        return yield* Effect.gen(function*() {
          const rows = yield* sql`
            UPDATE creator_applications a SET status = ${status}, decided_at = now(), decided_by = ${decidedBy}
            FROM users u
            WHERE a.id = ${id} AND a.status = 'pending' AND u.id = a.user_id
            RETURNING a.*, u.email, u.name
          `.pipe(Effect.flatMap(decodeEntries), Effect.orDie)
          const row = rows[0]
          if (row === undefined) {
            const found = yield* sql`SELECT status, decided_at FROM creator_applications WHERE id = ${id}`.pipe(
              Effect.flatMap(decodeStatus),
              Effect.orDie
            )
            const existing = found[0]
            if (existing === undefined) return yield* refused("APPLICATION_NOT_FOUND")
            return yield* new AlreadyDecided({ status: existing.status, decidedAt: existing.decided_at })
          }
          const entry = toEntry(row)
          if (decision === "approve") {
            yield* users.grantRole(entry.userId, "creator", Option.none()).pipe(Effect.orDie)
          }
          yield* mailer.send({ to: entry.email, ...decisionMail(entry) })
          return entry
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", (error) => Effect.die(error)))
      }
    )

    return { apply, mine, list, decide } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
