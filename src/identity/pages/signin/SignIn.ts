/**
 * The sign-in page's flow (docs/decisions.md, "Identity: pages"). Its form carries a CSRF token
 * bound to the browser's CSRF cookie (src/identity/pages/forms/Csrf.ts); `return_to` is followed only
 * when it is a path on this server (src/identity/pages/forms/FormValidation.ts).
 *
 * An account with a second factor signs in in two steps: the right password answers the code form
 * (src/identity/pages/twofactor/View.ts) with a signed pending sign-in
 * (src/identity/twofactor/PendingSignIn.ts) instead of a session; the code form posts back here with
 * it, and only a right code starts the session. The pending sign-in is spent with that code, so it
 * starts one session at most; a spent, cancelled or expired one sends the browser back to the
 * password.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http"
import { EnvelopeCodes } from "../../../../schema/Identity/Envelope.js"
import type { LoginForm, LoginPageParams } from "../../../../schema/Identity/Pages.js"
import { clientAddress } from "../../../platform/ClientAddress.js"
import type { EndUser } from "../../auth/EndUsers.js"
import { EndUsers } from "../../auth/EndUsers.js"
import { Login } from "../../auth/Login.js"
import { page, redirectTo } from "../../http/Responses.js"
import { Sessions } from "../../sessions/Sessions.js"
import { IdentityConfig } from "../../shared/IdentityConfig.js"
import { PendingSignIn } from "../../twofactor/PendingSignIn.js"
import { PASSWORD_ONLY } from "../../twofactor/TwoFactor.js"
import { Csrf } from "../forms/Csrf.js"
import { FormValidation, nonEmpty } from "../forms/FormValidation.js"
import { messagePage, STYLESHEET } from "../shared/Layout.js"
import { signInCodePage } from "../twofactor/View.js"
import { loginPage } from "./View.js"

const LOGIN_MESSAGES = {
  WRONG_PASSWORD: "The email or password is not right.",
  ACCOUNT_BANNED: "This account is banned.",
  TOO_MANY_ATTEMPTS: "Too many attempts. Wait a little, then try again.",
  TWO_FACTOR_REQUIRED: "Enter the code from your authenticator app.",
  TWO_FACTOR_INVALID: "That code is not right, or was already used. Enter the code the app shows now.",
  TOKEN_INVALID: "This sign-in expired or was already used. Please sign in again."
} as const

/** The password step's fields: both filled in, or the one message for the form. */
const PasswordStep = Schema.Struct({
  email: nonEmpty("Enter your email and password."),
  password: nonEmpty("Enter your email and password.")
})

export class SignIn extends Context.Service<SignIn>()("identity/pages/SignIn", {
  make: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const csrf = yield* Csrf
    const forms = yield* FormValidation
    const endUsers = yield* EndUsers
    const login = yield* Login
    const sessions = yield* Sessions
    const pendingSignIns = yield* PendingSignIn
    const ctx = { basePath: config.basePath }

    const renderLogin = (request: HttpServerRequest.HttpServerRequest, input: {
      readonly email: string
      readonly returnTo: Option.Option<string>
      readonly selectAccount: boolean
      readonly error?: string | undefined
      readonly status?: number
      readonly headers?: Record<string, string>
    }) =>
      Effect.gen(function*() {
        const current = input.selectAccount && Option.isSome(input.returnTo)
          ? yield* endUsers.fromCookie(request)
          : Option.none<EndUser>()
        const form = yield* csrf.issue(request, "login", Option.none())
        const body = loginPage(ctx, {
          csrf: form.token,
          email: input.email,
          returnTo: Option.getOrElse(input.returnTo, () => ""),
          error: input.error,
          current: Option.match(current, {
            onNone: () => undefined,
            onSome: (user) => ({ email: user.user.email, continueTo: Option.getOrElse(input.returnTo, () => "") })
          })
        })
        return form.send(page(body, { status: input.status ?? 200, headers: input.headers ?? {} }))
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
        const form = yield* csrf.issue(request, "login", Option.none())
        const body = signInCodePage(ctx, {
          csrf: form.token,
          pending: input.pending,
          email: input.email,
          returnTo: Option.getOrElse(input.returnTo, () => ""),
          error: input.error
        })
        return form.send(page(body, { status: input.status ?? 200, headers: input.headers ?? {} }))
      })

    const clientOf = (request: HttpServerRequest.HttpServerRequest) => ({
      ip: clientAddress(request, config.trustedProxies),
      userAgent: request.headers["user-agent"] ?? ""
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
        const verified = yield* pendingSignIns.verify(pending, csrf.cookieOf(request))
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
        return yield* login.resume(verified.value, { otp, recoveryCode, ...clientOf(request) }).pipe(
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

    /** The password step: a right password starts the session, or the code step when a second factor is on. */
    const submitPassword = (
      request: HttpServerRequest.HttpServerRequest,
      payload: LoginForm,
      returnTo: Option.Option<string>
    ) =>
      Effect.gen(function*() {
        const email = payload.email ?? ""
        const filled = yield* Effect.result(forms.decode(PasswordStep, payload))
        if (filled._tag === "Failure") {
          return yield* renderLogin(request, {
            email,
            returnTo,
            selectAccount: false,
            error: filled.failure.email ?? filled.failure.password,
            status: 400
          })
        }
        const client = clientOf(request)
        return yield* login.checkPassword({ email, password: filled.success.password, ip: client.ip }).pipe(
          Effect.flatMap(({ secondFactor, user }) =>
            secondFactor
              // No session yet: the code form, carrying the pending sign-in.
              ? Effect.flatMap(
                Effect.flatMap(
                  csrf.issue(request, "login", Option.none()),
                  (form) => pendingSignIns.issue(user.id, form.cookie)
                ),
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

    /** GET: the form, or with `select_account=1` and a live session, the offer to continue as that user. */
    const showForm = (request: HttpServerRequest.HttpServerRequest, query: LoginPageParams) =>
      renderLogin(request, {
        email: query.login_hint ?? "",
        returnTo: forms.returnTo(query.return_to),
        selectAccount: query.select_account === "1"
      })

    /** POST: a valid CSRF token, then the code step (the form carries a pending sign-in) or the password step. */
    const submit = (request: HttpServerRequest.HttpServerRequest, payload: LoginForm) =>
      Effect.gen(function*() {
        const returnTo = forms.returnTo(payload.return_to)
        if (!(yield* csrf.verify(request, payload.csrf, "login", Option.none()))) {
          return yield* renderLogin(request, {
            email: payload.email ?? "",
            returnTo,
            selectAccount: false,
            error: "This form has expired. Please sign in again.",
            status: 403
          })
        }
        return yield* payload.pending !== undefined
          ? submitCode(request, payload, returnTo)
          : submitPassword(request, payload, returnTo)
      })

    /** The pages' one stylesheet, served here so their CSP needs no inline styles. */
    const stylesheet = () =>
      HttpServerResponse.text(STYLESHEET, {
        contentType: "text/css; charset=utf-8",
        headers: { "cache-control": "public, max-age=3600" }
      })

    return { showForm, submit, stylesheet } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
