/**
 * CSRF tokens of the provider's forms (docs/decisions.md, "Identity: pages"): `exp.mac`, where `mac`
 * is an HMAC-SHA-256 (key derived from `SHIORI_SECRET`) over the form's purpose, a random
 * per-browser cookie and, once signed in, the session. A token therefore works only in the browser
 * that loaded the form, for that form, for one hour; another site can neither read nor forge it
 * (double-submit cookie, signed).
 *
 * The cookie is `shiori_csrf`, `__Host-shiori_csrf` over https (src/identity/shared/IdentityConfig.ts),
 * so no other host of the domain can plant one; it is minted on a browser's first form.
 */
import { Clock, Context, Effect, Layer, Option } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpServerResponse } from "effect/http"
import * as Crypto from "node:crypto"
import { EnvelopeCodes } from "../../../../schema/Identity/Envelope.js"
import { AppSecret } from "../../../platform/Config.js"
import { hmacKeys, matchesAny } from "../../../platform/KeyRing.js"
import type { EndUser } from "../../auth/EndUsers.js"
import { constantTimeEquals, randomToken } from "../../crypto/Secrets.js"
import { page } from "../../http/Responses.js"
import { IdentityConfig } from "../../shared/IdentityConfig.js"
import { messagePage } from "../shared/Layout.js"

const TTL_SECONDS = 3600

export type CsrfPurpose = "login" | "consent" | "logout" | "two-factor" | "register" | "account" | "recovery"

/** The token of a form rendered for a browser, and the cookie it is bound to. */
export interface FormToken {
  readonly token: string
  /** The browser's CSRF cookie: the one it sent, or one minted for this answer. */
  readonly cookie: string
  /** The answer carrying the form: sets the cookie when it was minted for it. */
  readonly send: (response: HttpServerResponse.HttpServerResponse) => HttpServerResponse.HttpServerResponse
}

export class Csrf extends Context.Service<Csrf>()("identity/Csrf", {
  make: Effect.gen(function*() {
    const { ring } = yield* AppSecret
    const config = yield* IdentityConfig
    const cookieName = config.cookies.csrf
    const ctx = { basePath: config.basePath }
    // Issued under the current key; a form loaded before a rotation still posts (src/platform/KeyRing.ts).
    const keys = hmacKeys(ring, "shiori/csrf/v1")
    const macWith = (key: Buffer, purpose: CsrfPurpose, binding: string, exp: number) =>
      Crypto.createHmac("sha256", key).update(`${purpose}\n${binding}\n${exp}`).digest("base64url")
    const mac = (purpose: CsrfPurpose, binding: string, exp: number) => macWith(keys[0]!, purpose, binding, exp)
    const binding = (cookie: string, endUser: Option.Option<EndUser>) =>
      `${cookie}|${Option.match(endUser, { onNone: () => "", onSome: (u) => u.session.id })}`

    /** The browser's CSRF cookie as it sent it, if any. */
    const cookieOf = (request: HttpServerRequest.HttpServerRequest): string | undefined => request.cookies[cookieName]

    /** A token for a form `purpose` rendered for this browser (and session). */
    const issue = (
      request: HttpServerRequest.HttpServerRequest,
      purpose: CsrfPurpose,
      endUser: Option.Option<EndUser>
    ) =>
      Effect.map(Clock.currentTimeMillis, (now): FormToken => {
        const existing = cookieOf(request)
        const fresh = existing === undefined || !/^[A-Za-z0-9_-]{43}$/.test(existing)
        const cookie = fresh ? randomToken() : existing
        const exp = Math.floor(now / 1000) + TTL_SECONDS
        return {
          token: `${exp}.${mac(purpose, binding(cookie, endUser), exp)}`,
          cookie,
          send: (response) =>
            fresh
              ? HttpServerResponse.setCookieUnsafe(response, cookieName, cookie, {
                path: config.cookies.path,
                httpOnly: true,
                secure: config.secureCookies,
                sameSite: "lax"
              })
              : response
        }
      })

    /** Whether `token` was issued for `purpose` to this browser (and session) within the hour. */
    const verify = (
      request: HttpServerRequest.HttpServerRequest,
      token: string | undefined,
      purpose: CsrfPurpose,
      endUser: Option.Option<EndUser>
    ) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const cookie = cookieOf(request)
        if (cookie === undefined || token === undefined) return false
        const match = /^([0-9]{1,12})\.([A-Za-z0-9_-]{43})$/.exec(token)
        if (match === null) return false
        const exp = Number(match[1])
        const bound = binding(cookie, endUser)
        return exp > now / 1000 &&
          matchesAny(keys, (key) => constantTimeEquals(match[2]!, macWith(key, purpose, bound, exp)))
      })

    /** The 403 page for a form whose token is missing, forged or expired. */
    const expired = () => {
      const entry = EnvelopeCodes.CSRF_TOKEN_INVALID
      return page(
        messagePage(ctx, {
          title: entry.message,
          message: "This form has expired or did not come from this site. Go back, reload the page and try again."
        }),
        { status: entry.status }
      )
    }

    return { issue, verify, expired, cookieOf } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
