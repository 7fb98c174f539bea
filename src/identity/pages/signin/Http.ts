/**
 * Handlers of the `pages` group: the provider's sign-in, consent and logout pages
 * (docs/decisions.md, "Identity: pages").
 *
 * Every form carries a CSRF token bound to a random `shiori_csrf` cookie (and to the session once
 * signed in); over https the cookie is `__Host-shiori_csrf` (src/identity/shared/IdentityConfig.ts), so no
 * other host of the domain can plant one. `return_to` is followed only when it is a path on this
 * server under the issuer's path, so the sign-in page cannot be used as an open redirect.
 *
 * An account with a second factor signs in in two steps: the right password answers the code form
 * (src/identity/frontend/TwoFactorPages.ts) with a signed pending sign-in
 * (src/identity/frontend/PendingSignIn.ts) instead of a session; the code form posts back here with
 * it, and only a right code starts the session. The pending sign-in is spent with that code, so it
 * starts one session at most; a spent, cancelled or expired one sends the browser back to the
 * password.
 */
import { Effect, Option, Result } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import type { AuthorizeParams } from "../../../schema/Identity/Authorize.js"
import { EnvelopeCodes } from "../../../schema/Identity/Envelope.js"
import type { ConsentForm, LoginForm, LogoutForm, LogoutParams } from "../../../schema/Identity/Pages.js"
import type { LoginPageParams } from "../../../schema/Identity/Pages.js"
import { clientAddress } from "../../platform/ClientAddress.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import type { EndUser } from "../auth/EndUsers.js"
import { EndUsers } from "../auth/EndUsers.js"
import { Login } from "../auth/Login.js"
import { Csrf } from "../frontend/Csrf.js"
import { consentPage, loginPage, logoutPage, messagePage, STYLESHEET } from "../frontend/Pages.js"
import { PendingSignIn } from "../frontend/PendingSignIn.js"
import { signInCodePage } from "../frontend/TwoFactorPages.js"
import { Authorize, authorizeQuery } from "../oauth/Authorize.js"
import { Logout } from "../oauth/Logout.js"
import { Sessions } from "../sessions/Sessions.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import { isSupportedScope, SCOPE_DESCRIPTIONS } from "../shared/Scopes.js"
import { PASSWORD_ONLY } from "../twofactor/TwoFactor.js"
import { outcomeResponse } from "./OAuthHttp.js"
import { PageForms } from "./PageForms.js"
import { page, redirectTo } from "./Responses.js"

type Response = Effect.Effect<HttpServerResponse.HttpServerResponse, never, HttpServerRequest.HttpServerRequest>

const LOGIN_MESSAGES = {
  WRONG_PASSWORD: "The email or password is not right.",
  ACCOUNT_BANNED: "This account is banned.",
  TOO_MANY_ATTEMPTS: "Too many attempts. Wait a little, then try again.",
  TWO_FACTOR_REQUIRED: "Enter the code from your authenticator app.",
  TWO_FACTOR_INVALID: "That code is not right, or was already used. Enter the code the app shows now.",
  TOKEN_INVALID: "This sign-in expired or was already used. Please sign in again."
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
    const pendingSignIns = yield* PendingSignIn
    const forms = yield* PageForms
    const ctx = forms.ctx

    const { binding, csrfCookie, formExpired, safeReturnTo, withCsrfCookie } = forms
    const verifyCsrf = forms.verifyToken
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

    /** After a sign-in: to `return_to`, or the signed-in page; with the session cookie. */
    const signedIn = (cookie: string, returnTo: Option.Option<string>, email: string) =>
      sessions.setCookie(
        Option.match(returnTo, {
          onSome: (path) => redirectTo(`${config.origin}${path}`, 303),
          onNone: () => page(messagePage(ctx, { title: "Signed in", message: `You are signed in as ${email}.` }))
        }),
        cookie
      )

    /** The code form of a sign-in whose password was right. */
    const renderCodeStep = (request: HttpServerRequest.HttpServerRequest, input: {
      readonly pending: string
      readonly email: string
      readonly returnTo: Option.Option<string>
      readonly error?: { readonly field: "otp" | "recovery_code"; readonly message: string }
      readonly status?: number
      readonly headers?: Record<string, string>
    }) =>
      Effect.gen(function*() {
        const cookie = csrfCookie(request)
        const token = yield* csrf.issue("login", binding(cookie.value, Option.none()))
        const body = signInCodePage(ctx, {
          csrf: token,
          pending: input.pending,
          email: input.email,
          returnTo: Option.getOrElse(input.returnTo, () => ""),
          error: input.error
        })
        return withCsrfCookie(page(body, { status: input.status ?? 200, headers: input.headers ?? {} }), cookie)
      })

    const stylesheetHandler = (): Response =>
      Effect.succeed(
        HttpServerResponse.text(STYLESHEET, {
          contentType: "text/css; charset=utf-8",
          headers: { "cache-control": "public, max-age=3600" }
        })
      )
    const loginPageHandler = ({ query }: { readonly query: LoginPageParams }): Response =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        return yield* renderLogin(request, {
          email: query.login_hint ?? "",
          returnTo: safeReturnTo(query.return_to),
          selectAccount: query.select_account === "1"
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
        if (payload.pending !== undefined) return yield* submitCode(request, payload, returnTo)
        if (email === "" || payload.password === undefined || payload.password === "") {
          return yield* renderLogin(request, {
            email,
            returnTo,
            selectAccount: false,
            error: "Enter your email and password.",
            status: 400
          })
        }
        const client = {
          ip: clientAddress(request, config.trustedProxies),
          userAgent: request.headers["user-agent"] ?? ""
        }
        return yield* login.checkPassword({ email, password: payload.password, ip: client.ip }).pipe(
          Effect.flatMap(({ secondFactor, user }) =>
            secondFactor
              // No session yet: the code form, carrying the pending sign-in.
              ? Effect.flatMap(
                pendingSignIns.issue(user.id, csrfCookie(request).value),
                (pending) => renderCodeStep(request, { pending, email: user.email, returnTo })
              )
              : Effect.map(login.start(user, client, PASSWORD_ONLY), ({ cookie }) => signedIn(cookie, returnTo, email))
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
    /** The second step: the pending sign-in of this browser and a code, then the session. */
    const submitCode = (
      request: HttpServerRequest.HttpServerRequest,
      payload: LoginForm,
      returnTo: Option.Option<string>
    ) =>
      Effect.gen(function*() {
        const email = payload.email ?? ""
        const pending = payload.pending ?? ""
        const verified = yield* pendingSignIns.verify(pending, request.cookies[config.cookies.csrf])
        if (Option.isNone(verified)) {
          return yield* renderLogin(request, {
            email,
            returnTo,
            selectAccount: false,
            error: LOGIN_MESSAGES.TOKEN_INVALID,
            status: EnvelopeCodes.TOKEN_INVALID.status
          })
        }
        const otp = payload.otp === undefined || payload.otp.trim() === "" ? undefined : payload.otp
        const recoveryCode = otp === undefined && payload.recovery_code !== undefined &&
            payload.recovery_code.trim() !== ""
          ? payload.recovery_code
          : undefined
        const field = payload.recovery_code !== undefined ? "recovery_code" as const : "otp" as const
        if (otp === undefined && recoveryCode === undefined) {
          return yield* renderCodeStep(request, {
            pending,
            email,
            returnTo,
            error: { field, message: "Enter the code." },
            status: 400
          })
        }
        const client = {
          ip: clientAddress(request, config.trustedProxies),
          userAgent: request.headers["user-agent"] ?? ""
        }
        return yield* login.resume(verified.value, { otp, recoveryCode, ...client }).pipe(
          Effect.map(({ cookie }) => signedIn(cookie, returnTo, email)),
          Effect.catchTag("LoginFailed", (failed) =>
            failed.code === "WRONG_PASSWORD" || failed.code === "ACCOUNT_BANNED" || failed.code === "TOKEN_INVALID"
              ? renderLogin(request, {
                email,
                returnTo,
                selectAccount: false,
                error: LOGIN_MESSAGES[failed.code],
                status: EnvelopeCodes[failed.code].status
              })
              : renderCodeStep(request, {
                pending,
                email,
                returnTo,
                error: { field, message: LOGIN_MESSAGES[failed.code] },
                status: EnvelopeCodes[failed.code].status,
                headers: failed.retryAfterSeconds === undefined
                  ? {}
                  : { "retry-after": String(failed.retryAfterSeconds) }
              }))
        )
      })
    const consentPageHandler = ({ query: params }: { readonly query: AuthorizeParams }): Response =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const endUser = yield* endUsers.fromCookie(request)
        const query = authorizeQuery(params)
        if (Option.isNone(endUser)) {
          const back = new URLSearchParams({ return_to: `${config.basePath}/ui/consent?${query}` })
          return redirectTo(`${config.issuer}/ui/login?${back.toString()}`)
        }
        const valid = yield* Effect.result(authorize.consentView(params))
        if (Result.isFailure(valid)) return outcomeResponse(request, valid.failure)
        const { client, scopes } = valid.success
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
    const logoutPageHandler = ({ query }: { readonly query: LogoutParams }): Response =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const redirect = query.redirect ?? query.post_logout_redirect_uri
        const target = yield* logout.target({ clientId: query.client_id, redirect, state: query.state })
        const endUser = yield* endUsers.fromCookie(request)
        if (Option.isNone(endUser)) return signedOut(target.location)
        if (yield* logout.hintConfirms(query.id_token_hint, endUser.value, query.client_id)) {
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
            clientId: query.client_id ?? "",
            redirect: redirect ?? "",
            state: query.state ?? ""
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
