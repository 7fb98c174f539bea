/**
 * What every form of the provider's pages needs (src/identity/frontend/Csrf.ts): the browser's CSRF
 * cookie, minted on first sight (`shiori_csrf`, `__Host-shiori_csrf` over https), tokens bound to it
 * and, once signed in, to the session; and `return_to` followed only when it is a path on this
 * server under the issuer's path, so no page can be used as an open redirect.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpServerResponse } from "effect/http"
import { EnvelopeCodes } from "../../../schema/Identity/Envelope.js"
import type { EndUser } from "../auth/EndUsers.js"
import type { CsrfPurpose } from "../frontend/Csrf.js"
import { Csrf } from "../frontend/Csrf.js"
import { messagePage } from "../frontend/Pages.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import { page } from "./Responses.js"

export interface CsrfCookie {
  readonly value: string
  /** Minted for this response: it must set the cookie. */
  readonly fresh: boolean
}

export class PageForms extends Context.Service<PageForms>()("identity/PageForms", {
  make: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const csrf = yield* Csrf
    const ctx = { basePath: config.basePath }
    const cookieName = config.cookies.csrf

    /** A same-origin path under the issuer's path, or none. */
    const safeReturnTo = (value: string | undefined): Option.Option<string> => {
      if (value === undefined || !value.startsWith(`${config.basePath}/`) || /[\\\s]/.test(value)) {
        return Option.none()
      }
      try {
        const url = new URL(value, config.origin)
        return url.origin === config.origin && url.pathname.startsWith(`${config.basePath}/`)
          ? Option.some(`${url.pathname}${url.search}`)
          : Option.none()
      } catch {
        return Option.none()
      }
    }

    const csrfCookie = (request: HttpServerRequest.HttpServerRequest): CsrfCookie => {
      const existing = request.cookies[cookieName]
      return existing !== undefined && /^[A-Za-z0-9_-]{43}$/.test(existing)
        ? { value: existing, fresh: false }
        : { value: csrf.newCookieValue(), fresh: true }
    }

    const binding = (cookie: string, endUser: Option.Option<EndUser>) =>
      `${cookie}|${Option.match(endUser, { onNone: () => "", onSome: (u) => u.session.id })}`

    const withCsrfCookie = (response: HttpServerResponse.HttpServerResponse, cookie: CsrfCookie) =>
      cookie.fresh
        ? HttpServerResponse.setCookieUnsafe(response, cookieName, cookie.value, {
          path: config.cookies.path,
          httpOnly: true,
          secure: config.secureCookies,
          sameSite: "lax"
        })
        : response

    /** A token for a form `purpose` rendered for this browser (and session). */
    const issueToken = (cookie: CsrfCookie, purpose: CsrfPurpose, endUser: Option.Option<EndUser>) =>
      csrf.issue(purpose, binding(cookie.value, endUser))

    const verifyToken = (
      request: HttpServerRequest.HttpServerRequest,
      token: string | undefined,
      purpose: CsrfPurpose,
      endUser: Option.Option<EndUser>
    ) => {
      const cookie = request.cookies[cookieName]
      return cookie === undefined ? Effect.succeed(false) : csrf.verify(token, purpose, binding(cookie, endUser))
    }

    /** 403 page for a form whose token is missing, forged or expired. */
    const formExpired = () => {
      const entry = EnvelopeCodes.CSRF_TOKEN_INVALID
      return page(
        messagePage(ctx, {
          title: entry.message,
          message: "This form has expired or did not come from this site. Go back, reload the page and try again."
        }),
        { status: entry.status }
      )
    }

    return { ctx, safeReturnTo, csrfCookie, binding, withCsrfCookie, issueToken, verifyToken, formExpired } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([IdentityConfig.layer, Csrf.layer]))
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
}
