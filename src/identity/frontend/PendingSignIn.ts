/**
 * A sign-in between its two steps on the sign-in page: the password was right and the account has
 * a second factor, but no session exists yet. The page carries `uid.exp.mac` in a hidden field,
 * `mac` an HMAC-SHA-256 (key derived from `SHIORI_SECRET`, as for the CSRF tokens of
 * src/identity/frontend/Csrf.ts) over the user id, the expiry and the browser's CSRF cookie. So it
 * names one account, lives five minutes, works only in the browser that gave the password, and
 * cannot be forged or edited: without it the code step cannot be reached.
 */
import { Clock, Context, Effect, Layer, Option, Redacted } from "effect"
import * as Crypto from "node:crypto"
import { AppSecret } from "../../platform/Config.js"
import { constantTimeEquals } from "../crypto/Secrets.js"

/** How long the code step may follow the password step. */
export const PENDING_SIGN_IN_SECONDS = 300

export class PendingSignIn extends Context.Service<PendingSignIn>()("identity/PendingSignIn", {
  make: Effect.gen(function*() {
    const { secret } = yield* AppSecret
    const key = Crypto.createHmac("sha256", Redacted.value(secret)).update("shiori/pending-sign-in/v1").digest()
    const mac = (userId: number, exp: number, binding: string) =>
      Crypto.createHmac("sha256", key).update(`${userId}\n${exp}\n${binding}`).digest("base64url")

    /** `binding`: the browser's CSRF cookie. */
    const issue = (userId: number, binding: string) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const exp = Math.floor(now / 1000) + PENDING_SIGN_IN_SECONDS
        return `${userId}.${exp}.${mac(userId, exp, binding)}`
      })

    /** The user id of a genuine, unexpired pending sign-in of this browser. */
    const verify = (token: string | undefined, binding: string | undefined) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        if (token === undefined || binding === undefined || binding === "") return Option.none<number>()
        const match = /^([1-9][0-9]{0,17})\.([0-9]{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token)
        if (match === null) return Option.none<number>()
        const userId = Number(match[1])
        const exp = Number(match[2])
        return exp > now / 1000 && constantTimeEquals(match[3]!, mac(userId, exp, binding))
          ? Option.some(userId)
          : Option.none<number>()
      })

    return { issue, verify } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
