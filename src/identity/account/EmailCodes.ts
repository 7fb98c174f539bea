/**
 * Emailed 6-digit codes (migrations/0016_account_codes.ts): proof that whoever registers an account
 * or moves one to a new address reads that address's mail.
 *
 * - Sending is limited per address (one a minute, five an hour) and per client address, before
 *   anything is written; a refusal is 429 10013 with `Retry-After`. The caller decides what the mail
 *   says (registration mails the owner of a known address a warning instead of a code), so the
 *   limits and the answer are the same whatever the address.
 * - A code lives 10 minutes and takes 5 tries. Each try is counted in its own statement, committed
 *   whatever the caller's transaction does, so a guesser cannot take the count back by failing
 *   later; the sixth try is 429 10012 and the code is spent.
 * - Only an HMAC of the code is stored, keyed from `SHIORI_SECRET`: the table alone does not give
 *   the million candidates away to an offline search.
 * - `markUsed` marks the code used inside the caller's transaction, so a code is used exactly when
 *   what it proves (a new account, a changed address) is committed, and two requests racing with
 *   the same code cannot both succeed.
 */
import { Config, Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { AppSecret } from "../../platform/Config.js"
import type { BucketPolicy } from "../../platform/RateLimiter.js"
import { RateLimiter } from "../../platform/RateLimiter.js"
import { constantTimeEquals } from "../crypto/Secrets.js"
import { addressBucket } from "../http/ClientAddress.js"
import { refused, retryAfter } from "../Refused.js"

export type CodePurpose = "register" | "email_change"

/** How long a code stays valid, and how many tries it takes. */
export const CODE_TTL_SECONDS = 600
export const CODE_MAX_ATTEMPTS = 5

const perAddressMinute: BucketPolicy = { capacity: 1, refillPerSecond: 1 / 60 }
const perAddressHour: BucketPolicy = { capacity: 5, refillPerSecond: 5 / 3600 }

const CodeRow = Schema.Struct({
  id: Schema.String,
  code_hash: Schema.String,
  attempts: Schema.Number
})
const decodeCodes = Schema.decodeUnknownEffect(Schema.Array(CodeRow))

export class EmailCodes extends Context.Service<EmailCodes>()("identity/EmailCodes", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const limiter = yield* RateLimiter
    const { secret } = yield* AppSecret
    const perClientAddress: BucketPolicy = {
      capacity: yield* Config.Int("IDENTITY_CODE_IP_BURST").pipe(Config.withDefault(10)),
      refillPerSecond: (yield* Config.Number("IDENTITY_CODE_IP_PER_MINUTE").pipe(Config.withDefault(1))) / 60
    }
    const key = Crypto.createHmac("sha256", Redacted.value(secret)).update("shiori/email-code/v1").digest()
    const hashOf = (purpose: CodePurpose, email: string, code: string) =>
      Crypto.createHmac("sha256", key).update(`${purpose}\u0000${email}\u0000${code}`).digest("hex")

    /**
     * Admits one code for `email` asked from `ip` (429 10013 otherwise). Run it before deciding
     * what to mail, so every address meets the same limits.
     */
    const admitSend = Effect.fn("EmailCodes.admitSend")(function*(email: string, ip: string) {
      const address = email.toLowerCase()
      for (
        const [bucket, policy] of [
          [`code:ip:${addressBucket(ip)}`, perClientAddress],
          [`code:to:${address}`, perAddressMinute],
          [`code:to-hour:${address}`, perAddressHour]
        ] as const
      ) {
        const taken = yield* limiter.take(bucket, policy)
        if (!taken.allowed) return yield* refused("CODE_REQUESTED_TOO_SOON", retryAfter(taken.retryAfterSeconds))
      }
    })

    /**
     * A new code for (purpose, email, account), replacing any older one; returns the code to mail.
     * Call inside the transaction that queues the mail.
     */
    const issue = Effect.fn("EmailCodes.issue")(function*(
      purpose: CodePurpose,
      email: string,
      userId: number | null
    ) {
      const address = email.toLowerCase()
      const code = String(Crypto.randomInt(0, 1_000_000)).padStart(6, "0")
      yield* sql`
        INSERT INTO email_codes (purpose, email, user_id, code_hash, expires_at)
        VALUES (${purpose}, ${address}, ${userId}, ${hashOf(purpose, address, code)},
                now() + make_interval(secs => ${CODE_TTL_SECONDS}))
        ON CONFLICT (purpose, email, coalesce(user_id, 0)) DO UPDATE
          SET code_hash = excluded.code_hash, attempts = 0, created_at = now(),
              expires_at = excluded.expires_at, consumed_at = NULL
      `.pipe(Effect.orDie)
      return code
    })

    /**
     * Checks `code`, counting the try: call it outside any transaction, so the try stays counted
     * whatever happens next. Wrong, expired, used or unknown: 400 10004; past its tries: 429 10012.
     * Returns the code's id for `markUsed`.
     */
    const verify = Effect.fn("EmailCodes.verify")(function*(
      purpose: CodePurpose,
      email: string,
      userId: number | null,
      code: string
    ) {
      const address = email.toLowerCase()
      const tried = yield* sql`
        UPDATE email_codes SET attempts = attempts + 1
        WHERE purpose = ${purpose} AND email = ${address} AND coalesce(user_id, 0) = ${userId ?? 0}
          AND consumed_at IS NULL AND expires_at > now() AND attempts < ${CODE_MAX_ATTEMPTS}
        RETURNING id, code_hash, attempts
      `.pipe(Effect.flatMap(decodeCodes), Effect.orDie)
      const row = Option.fromNullishOr(tried[0])
      if (Option.isNone(row)) {
        const spent = yield* sql`
          SELECT 1 FROM email_codes
          WHERE purpose = ${purpose} AND email = ${address} AND coalesce(user_id, 0) = ${userId ?? 0}
            AND consumed_at IS NULL AND expires_at > now() AND attempts >= ${CODE_MAX_ATTEMPTS}
        `.pipe(Effect.orDie)
        return yield* refused(spent.length > 0 ? "TOO_MANY_ATTEMPTS" : "VERIFICATION_CODE_INVALID")
      }
      if (!constantTimeEquals(row.value.code_hash, hashOf(purpose, address, code))) {
        return yield* refused(
          row.value.attempts >= CODE_MAX_ATTEMPTS ? "TOO_MANY_ATTEMPTS" : "VERIFICATION_CODE_INVALID"
        )
      }
      return row.value.id
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

    return { admitSend, issue, verify, markUsed } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
