/**
 * CSRF tokens of the sign-in pages (docs/decisions.md, "Identity: pages"): `exp.mac`, where `mac`
 * is an HMAC-SHA-256 (key derived from `SHIORI_SECRET`) over the form's purpose, a random
 * per-browser cookie and, once signed in, the session. A token therefore works only in the browser
 * that loaded the form, for that form, for one hour; another site can neither read nor forge it
 * (double-submit cookie, signed).
 */
import { Clock, Context, Effect, Layer, Redacted } from "effect"
import * as Crypto from "node:crypto"
import { AppSecret } from "../../platform/Config.js"
import { constantTimeEquals, randomToken } from "../crypto/Secrets.js"

export const CSRF_COOKIE = "shiori_csrf"
const TTL_SECONDS = 3600

export type CsrfPurpose = "login" | "consent" | "logout" | "two-factor" | "register" | "account" | "recovery"

export class Csrf extends Context.Service<Csrf>()("identity/Csrf", {
  make: Effect.gen(function*() {
    const { secret } = yield* AppSecret
    const key = Crypto.createHmac("sha256", Redacted.value(secret)).update("shiori/csrf/v1").digest()
    const mac = (purpose: CsrfPurpose, binding: string, exp: number) =>
      Crypto.createHmac("sha256", key).update(`${purpose}\n${binding}\n${exp}`).digest("base64url")

    const issue = (purpose: CsrfPurpose, binding: string) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const exp = Math.floor(now / 1000) + TTL_SECONDS
        return `${exp}.${mac(purpose, binding, exp)}`
      })

    const verify = (token: string | undefined, purpose: CsrfPurpose, binding: string) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        if (token === undefined || binding === "") return false
        const match = /^([0-9]{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token)
        if (match === null) return false
        const exp = Number(match[1])
        return exp > now / 1000 && constantTimeEquals(match[2]!, mac(purpose, binding, exp))
      })

    return { issue, verify, newCookieValue: randomToken } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
