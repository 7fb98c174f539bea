/**
 * Emailed 6-digit codes (migrations/0016_account_codes.ts, migrations/0024_email_code_flows.ts):
 * proof that whoever registers an account, moves one to a new address or recovers one reads that
 * address's mail.
 *
 * - A code belongs to the flow that asked for it, and only that flow can try it. Registration and
 *   recovery are anonymous: asking for a code answers an opaque pending value (256 random bits; only
 *   its SHA-256 is stored) that must come back with the code. An email change belongs to the
 *   signed-in account. So a stranger asking codes for someone's address never replaces theirs, and a
 *   stranger's wrong guesses, made with the stranger's own pending value, never spend their tries.
 * - Sending is limited per requester, never per target address alone, so one requester's limits
 *   never refuse another: per client address (`IDENTITY_CODE_IP_BURST`, refilled at
 *   `IDENTITY_CODE_IP_PER_MINUTE`) and per (requester, target address) one a minute and five an hour,
 *   the requester being the client address for registration and recovery and the account for an
 *   email change. Only then, for a mail that is actually going out, a target address takes at most
 *   20 code mails an hour from everyone together: that keeps a botnet from mail-bombing one address,
 *   and it is generous enough that blocking an address through it takes four client addresses, each
 *   at its own limit, that mail the owner twenty times an hour. A refusal is 429 10013 with
 *   `Retry-After`, before anything is written. The caller decides what the mail says (registration
 *   mails the owner of a known address a warning instead of a code), so the limits and the answer
 *   are the same whatever the address.
 * - A code lives 10 minutes and takes 5 tries. Each try is counted in its own statement, committed
 *   whatever the caller's transaction does, so a guesser cannot take the count back by failing
 *   later; the sixth try is 429 10012 and the code is spent.
 * - Only an HMAC of the code is stored, keyed from `SHIORI_SECRET`: the table alone does not give
 *   the million candidates away to an offline search.
 * - `markUsed` marks the code used inside the caller's transaction, so a code is used exactly when
 *   what it proves (a new account, a changed address, a new password) is committed, and two
 *   requests racing with the same code cannot both succeed.
 */
import { Config, Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { addressBucket } from "../../platform/ClientAddress.js"
import { AppSecret } from "../../platform/Config.js"
import { hmacKeys, matchesAny } from "../../platform/KeyRing.js"
import type { BucketPolicy } from "../../platform/RateLimiter.js"
import { RateLimiter } from "../../platform/RateLimiter.js"
import { constantTimeEquals, randomToken, sha256Hex } from "../crypto/Secrets.js"
import { refused, retryAfter } from "../shared/Refused.js"

export type CodePurpose = "register" | "email_change" | "recovery"

/**
 * Whose code it is: the holder of a pending value (registration, recovery) or a signed-in account
 * (an email change).
 */
export type CodeFlow =
  | { readonly purpose: "register" | "recovery"; readonly pending: string }
  | { readonly purpose: "email_change"; readonly userId: number }

/** How long a code stays valid, and how many tries it takes. */
export const CODE_TTL_SECONDS = 600
export const CODE_MAX_ATTEMPTS = 5

const perRequesterMinute: BucketPolicy = { capacity: 1, refillPerSecond: 1 / 60 }
const perRequesterHour: BucketPolicy = { capacity: 5, refillPerSecond: 5 / 3600 }
/** Code mails one address receives from every requester together. */
export const MAILS_PER_ADDRESS_HOUR = 20
const perTargetHour: BucketPolicy = { capacity: MAILS_PER_ADDRESS_HOUR, refillPerSecond: MAILS_PER_ADDRESS_HOUR / 3600 }

/** The shape of a pending value (`randomToken`): anything else is refused without a query. */
const PENDING = /^[A-Za-z0-9_-]{43}$/

const CodeRow = Schema.Struct({
  id: Schema.String,
  email: Schema.String,
  user_id: Schema.NullOr(Schema.Union([Schema.Number, Schema.NumberFromString])),
  code_hash: Schema.String,
  attempts: Schema.Number
})
const decodeCodes = Schema.decodeUnknownEffect(Schema.Array(CodeRow))

/** The mail that carries a code; `purpose` completes "Your code to ...". */
export const codeMail = (code: string, purpose: string) => ({
  subject: `Your shiori code: ${code}`,
  text:
    `Your code to ${purpose} is ${code}.\n\nIt is valid for 10 minutes. If you did not ask for it, ignore this mail.\n`,
  html: `<p>Your code to ${purpose} is <strong>${code}</strong>.</p>` +
    `<p>It is valid for 10 minutes. If you did not ask for it, ignore this mail.</p>`
})

/** A code that matched: its id for `markUsed`, the address it went to and the account it names. */
export interface VerifiedCode {
  readonly id: string
  readonly email: string
  readonly userId: number | null
}

export class EmailCodes extends Context.Service<EmailCodes>()("identity/EmailCodes", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const limiter = yield* RateLimiter
    const { ring } = yield* AppSecret
    const perClientAddress: BucketPolicy = {
      capacity: yield* Config.Int("IDENTITY_CODE_IP_BURST").pipe(Config.withDefault(10)),
      refillPerSecond: (yield* Config.Number("IDENTITY_CODE_IP_PER_MINUTE").pipe(Config.withDefault(1))) / 60
    }
    // Stored under the current key; a code mailed before a rotation is compared under each key of
    // the ring (src/platform/KeyRing.ts). Rows are found by flow, never by this hash.
    const keys = hmacKeys(ring, "shiori/email-code/v1")
    const hashWith = (key: Buffer, purpose: CodePurpose, email: string, code: string) =>
      Crypto.createHmac("sha256", key).update(`${purpose}\u0000${email}\u0000${code}`).digest("hex")
    const hashOf = (purpose: CodePurpose, email: string, code: string) => hashWith(keys[0]!, purpose, email, code)

    /**
     * Admits one code mail to `email` for a requester (429 10013 otherwise): the client address
     * `ip`, and for an email change the account `userId`. Run it before deciding what to mail, so
     * every address meets the same limits.
     */
    const admitSend = Effect.fn("EmailCodes.admitSend")(function*(
      purpose: CodePurpose,
      email: string,
      ip: string,
      userId: number | null
    ) {
      const address = email.toLowerCase()
      const requester = userId === null ? `ip:${addressBucket(ip)}` : `user:${userId}`
      for (
        const [bucket, policy] of [
          [`code:ip:${addressBucket(ip)}`, perClientAddress],
          [`code:${purpose}:${requester}:to:${address}`, perRequesterMinute],
          [`code:${purpose}:${requester}:to-hour:${address}`, perRequesterHour],
          // Last: only a mail every other limit let through counts against the address.
          [`code:mail-to:${address}`, perTargetHour]
        ] as const
      ) {
        const taken = yield* limiter.take(bucket, policy)
        if (!taken.allowed) return yield* refused("CODE_REQUESTED_TOO_SOON", retryAfter(taken.retryAfterSeconds))
      }
    })

    const randomCode = () => String(Crypto.randomInt(0, 1_000_000)).padStart(6, "0")

    /**
     * A new code for an anonymous flow (registration, recovery) to `email`, naming the account
     * `userId` (recovery of a known address) or none: returns the code to mail and the pending
     * value its requester gets. Call inside the transaction that queues the mail.
     */
    const issuePending = Effect.fn("EmailCodes.issuePending")(function*(
      purpose: "register" | "recovery",
      email: string,
      userId: number | null
    ) {
      const address = email.toLowerCase()
      const code = randomCode()
      const pending = randomToken()
      yield* sql`
        INSERT INTO email_codes (purpose, email, user_id, pending_hash, code_hash, expires_at)
        VALUES (${purpose}, ${address}, ${userId}, ${sha256Hex(pending)}, ${hashOf(purpose, address, code)},
                now() + make_interval(secs => ${CODE_TTL_SECONDS}))
      `.pipe(Effect.orDie)
      return { code, pending }
    })

    /**
     * A new code for the account `userId` to move to `email`, replacing its older one for that
     * address; returns the code to mail. Call inside the transaction that queues the mail.
     */
    const issueForAccount = Effect.fn("EmailCodes.issueForAccount")(function*(userId: number, email: string) {
      const address = email.toLowerCase()
      const code = randomCode()
      yield* sql`
        INSERT INTO email_codes (purpose, email, user_id, code_hash, expires_at)
        VALUES ('email_change', ${address}, ${userId}, ${hashOf("email_change", address, code)},
                now() + make_interval(secs => ${CODE_TTL_SECONDS}))
        ON CONFLICT (user_id, email) WHERE purpose = 'email_change' DO UPDATE
          SET code_hash = excluded.code_hash, attempts = 0, created_at = now(),
              expires_at = excluded.expires_at, consumed_at = NULL
      `.pipe(Effect.orDie)
      return code
    })

    const flowRow = (flow: CodeFlow, email: string | undefined) =>
      flow.purpose === "email_change"
        ? sql`purpose = 'email_change' AND user_id = ${flow.userId} AND email = ${(email ?? "").toLowerCase()}`
        : sql`purpose = ${flow.purpose} AND pending_hash = ${sha256Hex(flow.pending)}`

    /**
     * Checks `code` for the flow's code, counting the try on that code only: call it outside any
     * transaction, so the try stays counted whatever happens next. `email` is the address the
     * request names (registration, email change; recovery names none): a code mailed elsewhere does
     * not match. Wrong, expired, used, unknown or another flow's: 400 10004; past its tries: 429
     * 10012.
     */
    const verify = Effect.fn("EmailCodes.verify")(function*(
      flow: CodeFlow,
      code: string,
      email: string | undefined
    ) {
      if (flow.purpose !== "email_change" && !PENDING.test(flow.pending)) {
        return yield* refused("VERIFICATION_CODE_INVALID")
      }
      const tried = yield* sql`
        UPDATE email_codes SET attempts = attempts + 1
        WHERE ${flowRow(flow, email)}
          AND consumed_at IS NULL AND expires_at > now() AND attempts < ${CODE_MAX_ATTEMPTS}
        RETURNING id, email, user_id, code_hash, attempts
      `.pipe(Effect.flatMap(decodeCodes), Effect.orDie)
      const row = Option.fromNullishOr(tried[0])
      if (Option.isNone(row)) {
        const spent = yield* sql`
          SELECT 1 FROM email_codes
          WHERE ${flowRow(flow, email)}
            AND consumed_at IS NULL AND expires_at > now() AND attempts >= ${CODE_MAX_ATTEMPTS}
        `.pipe(Effect.orDie)
        return yield* refused(spent.length > 0 ? "TOO_MANY_ATTEMPTS" : "VERIFICATION_CODE_INVALID")
      }
      const address = email === undefined ? row.value.email : email.toLowerCase()
      const stored = row.value.code_hash
      if (!matchesAny(keys, (key) => constantTimeEquals(stored, hashWith(key, flow.purpose, address, code)))) {
        return yield* refused(
          row.value.attempts >= CODE_MAX_ATTEMPTS ? "TOO_MANY_ATTEMPTS" : "VERIFICATION_CODE_INVALID"
        )
      }
      return { id: row.value.id, email: row.value.email, userId: row.value.user_id } satisfies VerifiedCode
    })

    /**
     * Marks a verified code used, inside the transaction of what it proves: two requests racing
     * with one code cannot both commit (400 10004 for the second).
     */
    const markUsed = Effect.fn("EmailCodes.markUsed")(function*(id: string) {
      const used = yield* sql`
        UPDATE email_codes SET consumed_at = now()
        WHERE id = ${id} AND consumed_at IS NULL AND expires_at > now()
        RETURNING id
      `.pipe(Effect.orDie)
      if (used.length === 0) return yield* refused("VERIFICATION_CODE_INVALID")
    })

    return { admitSend, issuePending, issueForAccount, verify, markUsed } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
