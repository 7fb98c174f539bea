/**
 * Handlers of the `pages` group: the provider's sign-in, consent and logout pages (DECISIONS 12).
 *
 * Every form carries a CSRF token bound to a random `shiori_csrf` cookie (and to the session once
 * signed in); over https the cookie is `__Host-shiori_csrf` (src/identity/IdentityConfig.ts), so no
 * other host of the domain can plant one. `return_to` is followed only when it is a path on this
 * server under the issuer's path, so the sign-in page cannot be used as an open redirect.
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import type { AuthorizeParams } from "../../../schema/Identity/Authorize.js"
import { EnvelopeCodes } from "../../../schema/Identity/Envelope.js"
import type { ConsentForm, LoginForm, LogoutForm, LogoutParams } from "../../../schema/Identity/Pages.js"
import type { LoginPageParams } from "../../../schema/Identity/Pages.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import type { EndUser } from "../auth/EndUsers.js"
import { EndUsers } from "../auth/EndUsers.js"
import { Login } from "../auth/Login.js"
import { Csrf } from "../frontend/Csrf.js"
import type { CsrfPurpose } from "../frontend/Csrf.js"
import { consentPage, loginPage, logoutPage, messagePage, STYLESHEET } from "../frontend/Pages.js"
import { IdentityConfig } from "../IdentityConfig.js"
import { Authorize, authorizeQuery } from "../oauth/Authorize.js"
import { Logout } from "../oauth/Logout.js"
import { isSupportedScope, SCOPE_DESCRIPTIONS } from "../oauth/Scopes.js"
import { Sessions } from "../sessions/Sessions.js"
import { clientAddress } from "./ClientAddress.js"
import { outcomeResponse } from "./OAuthHttp.js"
import { page, redirectTo } from "./Responses.js"

type Response = Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>

const LOGIN_MESSAGES = {
  WRONG_PASSWORD: "The email or password is not right.",
  ACCOUNT_BANNED: "This account is banned.",
  TOO_MANY_ATTEMPTS: "Too many attempts. Wait a little, then try again."
} as const

export const HttpPagesLive = HttpApiBuilder.group(IdentityApi, "pages", (handlers) =>
  Effect.gen(function*() {
    const config = yield* IdentityConfig
    const csrf = yield* Csrf
    const endUsers = yield* EndUsers
    const login = yield* Login
    const sessions = yield* Sessions
    const authorize = yield* Authorize
    const logout = yield* Logout
    const ctx = { basePath: config.basePath }
    const csrfCookieName = config.cookies.csrf

    /** A same-origin path under the issuer's path, or none (DECISIONS 12: no open redirect). */
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

    /** The browser's CSRF cookie, minted on first sight; `fresh` tells the response to set it. */
    const csrfCookie = (request: HttpServerRequest.HttpServerRequest) => {
      const existing = request.cookies[csrfCookieName]
      return existing !== undefined && /^[A-Za-z0-9_-]{43}$/.test(existing)
        ? { value: existing, fresh: false }
        : { value: csrf.newCookieValue(), fresh: true }
    }
    const binding = (cookie: string, endUser: Option.Option<EndUser>) =>
      `${cookie}|${Option.match(endUser, { onNone: () => "", onSome: (u) => u.session.id })}`
    const withCsrfCookie = (
      response: HttpServerResponse.HttpServerResponse,
      cookie: { value: string; fresh: boolean }
    ) =>
      cookie.fresh
        ? HttpServerResponse.unsafeSetCookie(response, csrfCookieName, cookie.value, {
          path: config.cookies.path,
          httpOnly: true,
          secure: config.secureCookies,
          sameSite: "lax"
        })
        : response
    const verifyCsrf = (
      request: HttpServerRequest.HttpServerRequest,
      token: string | undefined,
      purpose: CsrfPurpose,
      endUser: Option.Option<EndUser>
    ) => {
      const cookie = request.cookies[csrfCookieName]
      return cookie === undefined ? Effect.succeed(false) : csrf.verify(token, purpose, binding(cookie, endUser))
    }
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
    const signedOut = (location: Option.Option<string>) =>
      Option.match(location, {
        onSome: (href) => redirectTo(href, 303),
        onNone: () => page(messagePage(ctx, { title: "Signed out", message: "You are signed out of shiori." }))
      })

    const renderLogin = (request: HttpServerRequest.HttpServerRequest, input: {
      readonly email: string
      readonly returnTo: Option.Option<string>
      readonly selectAccount: boolean
      readonly error?: string
      readonly status?: number
      readonly headers?: Record<string, string>
    }) =>
      Effect.gen(function*() {
        const cookie = csrfCookie(request)
        const current = input.selectAccount && Option.isSome(input.returnTo)
          ? yield* endUsers.fromCookie(request)
          : Option.none<EndUser>()
        const token = yield* csrf.issue("login", binding(cookie.value, Option.none()))
        const body = loginPage(ctx, {
          csrf: token,
          email: input.email,
          returnTo: Option.getOrElse(input.returnTo, () => ""),
          error: input.error,
          current: Option.match(current, {
            onNone: () => undefined,
            onSome: (user) => ({ email: user.user.email, continueTo: Option.getOrElse(input.returnTo, () => "") })
          })
        })
        return withCsrfCookie(
          page(body, { status: input.status ?? 200, headers: input.headers ?? {} }),
          cookie
        )
      })

    const stylesheetHandler = (): Response =>
      Effect.succeed(
        HttpServerResponse.text(STYLESHEET, {
          contentType: "text/css; charset=utf-8",
          headers: { "cache-control": "public, max-age=3600" }
        })
      )
    const loginPageHandler = ({ urlParams }: { readonly urlParams: LoginPageParams }): Response =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        return yield* renderLogin(request, {
          email: urlParams.login_hint ?? "",
          returnTo: safeReturnTo(urlParams.return_to),
          selectAccount: urlParams.select_account === "1"
        })
      })
    const submitLoginHandler = ({ payload }: { readonly payload: LoginForm }): Response =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const returnTo = safeReturnTo(payload.return_to)
        const email = payload.email ?? ""
        if (!(yield* verifyCsrf(request, payload.csrf, "login", Option.none()))) {
          return yield* renderLogin(request, {
            email,
            returnTo,
            selectAccount: false,
            error: "This form has expired. Please sign in again.",
            status: 403
          })
        }
        if (email === "" || payload.password === undefined || payload.password === "") {
          return yield* renderLogin(request, {
            email,
            returnTo,
            selectAccount: false,
            error: "Enter your email and password.",
            status: 400
          })
        }
        return yield* login.login({
          email,
          password: payload.password,
          ip: clientAddress(request, config.trustedProxies),
          userAgent: request.headers["user-agent"] ?? ""
        }).pipe(
          Effect.map(({ cookie }) =>
            sessions.setCookie(
              Option.match(returnTo, {
                onSome: (path) => redirectTo(`${config.origin}${path}`, 303),
                onNone: () => page(messagePage(ctx, { title: "Signed in", message: `You are signed in as ${email}.` }))
              }),
              cookie
            )
          ),
          Effect.catchTag("LoginFailed", (failed) =>
            renderLogin(request, {
              email,
              returnTo,
              selectAccount: false,
              error: LOGIN_MESSAGES[failed.code],
              status: EnvelopeCodes[failed.code].status,
              headers: failed.retryAfterSeconds === undefined ? {} : { "retry-after": String(failed.retryAfterSeconds) }
            }))
        )
      })
    const consentPageHandler = ({ urlParams }: { readonly urlParams: AuthorizeParams }): Response =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const endUser = yield* endUsers.fromCookie(request)
        const query = authorizeQuery(urlParams)
        if (Option.isNone(endUser)) {
          const back = new URLSearchParams({ return_to: `${config.basePath}/ui/consent?${query}` })
          return redirectTo(`${config.issuer}/ui/login?${back.toString()}`)
        }
        const valid = yield* Effect.either(authorize.consentView(urlParams))
        if (valid._tag === "Left") return outcomeResponse(request, valid.left)
        const { client, scopes } = valid.right
        const cookie = csrfCookie(request)
        const token = yield* csrf.issue("consent", binding(cookie.value, endUser))
        return withCsrfCookie(
          page(consentPage(ctx, {
            csrf: token,
            request: query,
            clientName: client.name === "" ? client.clientId : client.name,
            logoUrl: client.logoUrl,
            userEmail: endUser.value.user.email,
            scopes: scopes.map((scope) => ({
              scope,
              description: isSupportedScope(scope) ? SCOPE_DESCRIPTIONS[scope] : ""
            }))
          })),
          cookie
        )
      })
    const submitConsentHandler = ({ payload }: { readonly payload: ConsentForm }): Response =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const endUser = yield* endUsers.fromCookie(request)
        if (Option.isNone(endUser)) {
          return page(
            messagePage(ctx, {
              title: "Signed out",
              message: "Your session has ended. Go back to the application and start again."
            }),
            { status: 401 }
          )
        }
        if (!(yield* verifyCsrf(request, payload.csrf, "consent", endUser))) return formExpired()
        if (payload.decision !== "approve" && payload.decision !== "deny") {
          return page(messagePage(ctx, { title: "Choose Allow or Deny", message: "No decision was sent." }), {
            status: 400
          })
        }
        const outcome = yield* authorize.decideConsent(
          payload.request ?? "",
          endUser.value,
          payload.decision === "approve"
        )
        return outcome._tag === "Redirect" ? redirectTo(outcome.location, 303) : outcomeResponse(request, outcome)
      })
    const logoutPageHandler = ({ urlParams }: { readonly urlParams: LogoutParams }): Response =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const redirect = urlParams.redirect ?? urlParams.post_logout_redirect_uri
        const target = yield* logout.target({ clientId: urlParams.client_id, redirect, state: urlParams.state })
        const endUser = yield* endUsers.fromCookie(request)
        if (Option.isNone(endUser)) return signedOut(target.location)
        if (yield* logout.hintConfirms(urlParams.id_token_hint, endUser.value, urlParams.client_id)) {
          yield* sessions.end(endUser.value.session.id)
          return sessions.clearCookie(signedOut(target.location))
        }
        const cookie = csrfCookie(request)
        const token = yield* csrf.issue("logout", binding(cookie.value, endUser))
        return withCsrfCookie(
          page(logoutPage(ctx, {
            csrf: token,
            userEmail: endUser.value.user.email,
            clientName: Option.getOrUndefined(Option.map(target.client, (c) => c.name === "" ? c.clientId : c.name)),
            clientId: urlParams.client_id ?? "",
            redirect: redirect ?? "",
            state: urlParams.state ?? ""
          })),
          cookie
        )
      })
    const submitLogoutHandler = ({ payload }: { readonly payload: LogoutForm }): Response =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const target = yield* logout.target({
          clientId: payload.client_id === "" ? undefined : payload.client_id,
          redirect: payload.redirect === "" ? undefined : payload.redirect,
          state: payload.state
        })
        const endUser = yield* endUsers.fromCookie(request)
        if (Option.isNone(endUser)) return signedOut(target.location)
        if (!(yield* verifyCsrf(request, payload.csrf, "logout", endUser))) return formExpired()
        if (payload.decision !== "logout") {
          return page(messagePage(ctx, {
            title: "Still signed in",
            message: `You are still signed in as ${endUser.value.user.email}.`,
            link: Option.getOrUndefined(
              Option.map(target.location, (href) => ({ href, text: "Back to the application" }))
            )
          }))
        }
        yield* sessions.end(endUser.value.session.id)
        return sessions.clearCookie(signedOut(target.location))
      })
    return handlers
      .handle("stylesheet", stylesheetHandler, runToCompletion)
      .handle("loginPage", loginPageHandler, runToCompletion)
      .handle("submitLogin", submitLoginHandler, runToCompletion)
      .handle("consentPage", consentPageHandler, runToCompletion)
      .handle("submitConsent", submitConsentHandler, runToCompletion)
      .handle("logoutPage", logoutPageHandler, runToCompletion)
      .handle("submitLogout", submitLogoutHandler, runToCompletion)
  }))
