/**
 * A sign-in between its two steps on the sign-in page: the password was right and the account has
 * a second factor, but no session exists yet. The page carries `uid.exp.nonce.mac` in a hidden
 * field, `mac` an HMAC-SHA-256 (key derived from `SHIORI_SECRET`, as for the CSRF tokens of
 * src/identity/pages/forms/Csrf.ts) over the user id, the expiry, the nonce and the browser's CSRF
 * cookie. So it names one account, lives five minutes, works only in the browser that gave the
 * password, and cannot be forged or edited: without it the code step cannot be reached.
 *
 * It is also used once (migrations/0025_pending_sign_ins.ts): its nonce is a row, deleted by the
 * transaction that spends the code and starts the session (`consume`), so a second code with the
 * same value (say, another recovery code) is refused. The row is gone too once the account's
 * password is right again (`cancel`, from the password step of a newer sign-in) or the second
 * factor changes, and it keeps a digest of the password hash it was issued under: a password
 * change, whichever way it is made, leaves the row unusable.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { AppSecret } from "../../platform/Config.js"
import { hmacKeys, matchesAny } from "../../platform/KeyRing.js"
import { constantTimeEquals } from "../crypto/Secrets.js"

/** How long the code step may follow the password step. */
export const PENDING_SIGN_IN_SECONDS = 300

/** A verified pending sign-in: whose, and the row that `consume` spends. */
export interface Pending {
  readonly userId: number
  readonly nonce: string
}

export class PendingSignIn extends Context.Service<PendingSignIn>()("identity/PendingSignIn", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const { ring } = yield* AppSecret
    // Issued under the current key; one issued before a rotation still verifies (src/platform/KeyRing.ts).
    const keys = hmacKeys(ring, "shiori/pending-sign-in/v2")
    const macWith = (key: Buffer, userId: number, exp: number, nonce: string, binding: string) =>
      Crypto.createHmac("sha256", key).update(`${userId}\n${exp}\n${nonce}\n${binding}`).digest("base64url")
    // The account's password hash as it is now; a row issued under another one is void.
    const currentDigest = sql`sha256(convert_to(u.password_hash, 'UTF8'))`

    /**
     * A new pending sign-in of `userId` for the browser whose CSRF cookie is `binding`. The password
     * step that calls this has cancelled the account's older ones (src/identity/auth/Login.ts).
     */
    const issue = Effect.fn("PendingSignIn.issue")(function*(userId: number, binding: string) {
      const now = yield* Clock.currentTimeMillis
      const exp = Math.floor(now / 1000) + PENDING_SIGN_IN_SECONDS
      const nonce = Crypto.randomBytes(16).toString("base64url")
      yield* sql`
        INSERT INTO pending_sign_ins (nonce, user_id, password_digest, expires_at)
        SELECT ${nonce}, u.id, ${currentDigest}, to_timestamp(${exp}::float8)
        FROM users u WHERE u.id = ${userId}
      `.pipe(Effect.orDie)
      return `${userId}.${exp}.${nonce}.${macWith(keys[0]!, userId, exp, nonce, binding)}`
    })

    /** A genuine, unexpired, unused pending sign-in of this browser, issued under the current password. */
    const verify = Effect.fn("PendingSignIn.verify")(function*(token: string | undefined, binding: string | undefined) {
      if (token === undefined || binding === undefined || binding === "") return Option.none<Pending>()
      const match = /^([1-9][0-9]{0,17})\.([0-9]{1,12})\.([A-Za-z0-9_-]{22})\.([A-Za-z0-9_-]{43})$/.exec(token)
      if (match === null) return Option.none<Pending>()
      const userId = Number(match[1])
      const exp = Number(match[2])
      const nonce = match[3]!
      const now = yield* Clock.currentTimeMillis
      if (
        exp <= now / 1000 ||
        !matchesAny(keys, (key) => constantTimeEquals(match[4]!, macWith(key, userId, exp, nonce, binding)))
      ) {
        return Option.none<Pending>()
      }
      const rows = yield* sql`
        SELECT 1 AS one FROM pending_sign_ins p JOIN users u ON u.id = p.user_id
        WHERE p.nonce = ${nonce} AND p.user_id = ${userId} AND p.password_digest = ${currentDigest}
      `.pipe(Effect.orDie)
      return rows.length === 0 ? Option.none<Pending>() : Option.some<Pending>({ userId, nonce })
    })

    /**
     * Spends the pending sign-in: true for the one call that deletes its row while the password is
     * unchanged. Run it in the transaction that spends the code, so either both happen or neither.
     */
    const consume = (pending: Pending) =>
      sql`
        DELETE FROM pending_sign_ins p USING users u
        WHERE p.nonce = ${pending.nonce} AND p.user_id = ${pending.userId} AND u.id = p.user_id
          AND p.password_digest = ${currentDigest}
        RETURNING p.user_id
      `.pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

    /** Ends every pending sign-in of the account (a newer sign-in, a change of its second factor). */
    const cancel = (userId: number) =>
      sql`DELETE FROM pending_sign_ins WHERE user_id = ${userId}`.pipe(Effect.asVoid, Effect.orDie)

    return { issue, verify, consume, cancel } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
