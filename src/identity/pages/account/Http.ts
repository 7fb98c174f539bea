/**
 * Handlers of the `accountPages` group: registration and the account page. They call the same
 * `Account` operations as the envelope endpoints (src/identity/account/Account.ts), with the user
 * of the session cookie instead of a Bearer token; a refusal comes back as the page with the error
 * next to its field and the code's HTTP status. Forms carry CSRF tokens (src/identity/http/PageForms.ts);
 * a successful post redirects (303), so reloading never posts twice. Between the two steps of
 * registration, the pending value its code is bound to (src/identity/account/EmailCodes.ts) waits in
 * an HttpOnly cookie scoped like the session's, so it stays out of URLs and pages.
 */
import { Effect, Option } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import { isEmailAddress } from "../../../schema/Identity/User.js"
import { clientAddress } from "../../platform/ClientAddress.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Account } from "../account/Account.js"
import { Avatars, parseUpload } from "../account/Avatars.js"
import { CODE_TTL_SECONDS } from "../account/EmailCodes.js"
import type { EndUser } from "../auth/EndUsers.js"
import { EndUsers } from "../auth/EndUsers.js"
import { requireRecentSignIn } from "../auth/SignedIn.js"
import type { FieldErrors } from "../frontend/AccountPages.js"
import { accountPage, registerCodePage, registerEmailPage } from "../frontend/AccountPages.js"
import { Sessions } from "../sessions/Sessions.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import { type Refused, refused } from "../shared/Refused.js"
import { PageForms } from "./PageForms.js"
import { messageOf, refusedStatus } from "./RefusalMessages.js"
import { page, redirectTo } from "./Responses.js"

export const HttpAccountPagesLive = HttpApiBuilder.group(
  IdentityApi,
  "accountPages",
  (handlers) =>
    Effect.gen(function*() {
      const config = yield* IdentityConfig
      const forms = yield* PageForms
      const account = yield* Account
      const avatars = yield* Avatars
      const endUsers = yield* EndUsers
      const sessions = yield* Sessions
      const { ctx } = forms
      const accountPath = `${config.basePath}/ui/account`
      const toSignIn = redirectTo(`${config.basePath}/ui/login?return_to=${encodeURIComponent(accountPath)}`, 302)

      // The pending value of a registration between its two steps, scoped like the session cookie.
      const registerCookie = config.secureCookies ? "__Host-shiori_register" : "shiori_register"
      const withRegisterCookie = (response: HttpServerResponse.HttpServerResponse, pending: string) =>
        HttpServerResponse.setCookieUnsafe(response, registerCookie, pending, {
          ...sessions.cookieOptions,
          maxAge: `${CODE_TTL_SECONDS} seconds`
        })
      const withoutRegisterCookie = (response: HttpServerResponse.HttpServerResponse) =>
        HttpServerResponse.expireCookieUnsafe(response, registerCookie, sessions.cookieOptions)

      // --- registration ---

      const renderRegister = (request: HttpServerRequest.HttpServerRequest, input: {
        readonly email: string
        readonly step: "email" | "code"
        readonly returnTo: string
        readonly name?: string
        readonly errors?: FieldErrors
        readonly status?: number
        readonly headers?: Record<string, string>
      }) =>
        Effect.gen(function*() {
          const cookie = forms.csrfCookie(request)
          const csrf = yield* forms.issueToken(cookie, "register", Option.none())
          const body = input.step === "email"
            ? registerEmailPage(ctx, { csrf, email: input.email, returnTo: input.returnTo, errors: input.errors ?? {} })
            : registerCodePage(ctx, {
              csrf,
              email: input.email,
              name: input.name ?? "",
              returnTo: input.returnTo,
              errors: input.errors ?? {}
            })
          return forms.withCsrfCookie(page(body, { status: input.status ?? 200, headers: input.headers ?? {} }), cookie)
        })

      // --- account page ---

      const renderAccount = (request: HttpServerRequest.HttpServerRequest, endUser: EndUser, input: {
        readonly done?: string | undefined
        readonly pendingEmail?: string | undefined
        readonly values?: Readonly<Record<string, string>> | undefined
        readonly errors?: FieldErrors
        readonly status?: number
        readonly headers?: Record<string, string>
      }) =>
        Effect.gen(function*() {
          const cookie = forms.csrfCookie(request)
          const csrf = yield* forms.issueToken(cookie, "account", Option.some(endUser))
          const me = yield* account.me(endUser.user.id).pipe(Effect.orDie)
          const list = yield* account.listSessions(endUser)
          const reauthenticate = `${config.basePath}/ui/login?return_to=${encodeURIComponent(accountPath)}` +
            `&login_hint=${encodeURIComponent(me.email)}`
          const body = accountPage(ctx, {
            me,
            sessions: list.items,
            csrf,
            done: input.done,
            pendingEmail: input.pendingEmail,
            values: input.values,
            errors: input.errors ?? {},
            reauthenticate
          })
          return forms.withCsrfCookie(page(body, { status: input.status ?? 200, headers: input.headers ?? {} }), cookie)
        })

      /**
       * A post of the account page: the cookie's user and a valid token, then `act`; its refusal
       * re-renders the page with the error, its success redirects to `success`.
       */
      const accountPost = (
        token: string | undefined,
        act: (
          endUser: EndUser,
          request: HttpServerRequest.HttpServerRequest
        ) => Effect.Effect<string, Refused, Sessions>,
        onRefused: (endUser: EndUser, refused: Refused) => {
          readonly values?: Readonly<Record<string, string>> | undefined
          readonly pendingEmail?: string | undefined
          readonly field?: string | undefined
        } = () => ({})
      ) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const endUser = yield* endUsers.fromCookie(request)
          if (Option.isNone(endUser)) return toSignIn
          if (!(yield* forms.verifyToken(request, token, "account", endUser))) return forms.formExpired()
          return yield* act(endUser.value, request).pipe(
            // `requireRecentSignIn` reads the session per request: this stack's `Sessions`.
            Effect.provideService(Sessions, sessions),
            Effect.map((location): HttpServerResponse.HttpServerResponse => redirectTo(location, 303)),
            Effect.catchTag("Refused", (refused) => {
              const context = onRefused(endUser.value, refused)
              return renderAccount(request, endUser.value, {
                values: context.values,
                pendingEmail: context.pendingEmail,
                errors: messageOf(refused, context.field),
                ...refusedStatus(refused)
              })
            })
          )
        })

      const missing = (value: string | undefined): value is undefined => value === undefined || value.trim() === ""

      return handlers
        .handle("registerPage", ({ query }) =>
          Effect.gen(function*() {
            const request = yield* HttpServerRequest.HttpServerRequest
            const returnTo = Option.getOrElse(forms.safeReturnTo(query.return_to), () => "")
            return yield* renderRegister(request, {
              email: query.email ?? "",
              step: query.email === undefined || query.email === "" ? "email" : "code",
              returnTo
            })
          }), runToCompletion)
        .handle("registerSendCode", ({ payload }) =>
          Effect.gen(function*() {
            const request = yield* HttpServerRequest.HttpServerRequest
            const returnTo = Option.getOrElse(forms.safeReturnTo(payload.return_to), () => "")
            const email = (payload.email ?? "").trim()
            if (!(yield* forms.verifyToken(request, payload.csrf, "register", Option.none()))) {
              return forms.formExpired()
            }
            if (!isEmailAddress(email)) {
              return yield* renderRegister(request, {
                email,
                step: "email",
                returnTo,
                errors: { email: "Enter an email address." },
                status: 400
              })
            }
            return yield* account.sendRegistrationCode(email, clientAddress(request, config.trustedProxies)).pipe(
              Effect.map(({ pending }) =>
                withRegisterCookie(
                  redirectTo(
                    `${config.basePath}/ui/register?email=${encodeURIComponent(email)}` +
                      (returnTo === "" ? "" : `&return_to=${encodeURIComponent(returnTo)}`),
                    303
                  ),
                  pending
                )
              ),
              Effect.catchTag("Refused", (refused) =>
                renderRegister(request, {
                  email,
                  step: "email",
                  returnTo,
                  errors: messageOf(refused),
                  ...refusedStatus(refused)
                }))
            )
          }), runToCompletion)
        .handle("submitRegister", ({ payload }) =>
          Effect.gen(function*() {
            const request = yield* HttpServerRequest.HttpServerRequest
            const returnTo = Option.getOrElse(forms.safeReturnTo(payload.return_to), () => "")
            const email = (payload.email ?? "").trim()
            const name = payload.name ?? ""
            if (!(yield* forms.verifyToken(request, payload.csrf, "register", Option.none()))) {
              return forms.formExpired()
            }
            const errors: Record<string, string> = {}
            if (!/^[0-9]{6}$/.test((payload.code ?? "").trim())) errors.code = "Enter the 6-digit code from the mail."
            if (missing(payload.name)) errors.name = "Enter a display name."
            if (missing(payload.password)) errors.password = "Choose a password."
            if (email === "") errors.form = "Start again: the address is missing."
            if (Object.keys(errors).length > 0) {
              return yield* renderRegister(request, { email, step: "code", name, returnTo, errors, status: 400 })
            }
            // Without the cookie of the first step (another browser, or it expired) no code can match.
            const pending = request.cookies[registerCookie] ?? ""
            return yield* account.register(
              { email, pending, code: payload.code!.trim(), password: payload.password!, name },
              { ip: clientAddress(request, config.trustedProxies), userAgent: request.headers["user-agent"] ?? "" }
            ).pipe(
              Effect.map(({ cookie }) =>
                sessions.setCookie(
                  withoutRegisterCookie(
                    redirectTo(returnTo === "" ? `${accountPath}?done=registered` : returnTo, 303)
                  ),
                  cookie
                )
              ),
              Effect.catchTag("Refused", (refused) =>
                renderRegister(request, {
                  email,
                  step: "code",
                  name,
                  returnTo,
                  errors: messageOf(refused),
                  ...refusedStatus(refused)
                }))
            )
          }), runToCompletion)
        .handle("accountPage", ({ query }) =>
          Effect.gen(function*() {
            const request = yield* HttpServerRequest.HttpServerRequest
            const endUser = yield* endUsers.fromCookie(request)
            if (Option.isNone(endUser)) return toSignIn
            return yield* renderAccount(request, endUser.value, {
              done: query.done,
              pendingEmail: query.email === "" ? undefined : query.email
            })
          }), runToCompletion)
        .handle("saveProfile", ({ payload }) =>
          accountPost(
            payload.csrf,
            (endUser) =>
              account.updateProfile(endUser, { name: payload.name, bio: payload.bio }).pipe(
                Effect.as(`${accountPath}?done=profile`)
              ),
            () => ({ values: { name: payload.name ?? "", bio: payload.bio ?? "" }, field: "name" })
          ), runToCompletion)
        .handleRaw("uploadAvatarForm", ({ request }) =>
          Effect.gen(function*() {
            const endUser = yield* endUsers.fromCookie(request)
            if (Option.isNone(endUser)) return toSignIn
            const body = yield* request.arrayBuffer.pipe(Effect.option)
            const parsed = Option.isNone(body)
              ? Option.none()
              : yield* parseUpload(request.headers["content-type"] ?? "", new Uint8Array(body.value)).pipe(
                Effect.option
              )
            const token = Option.getOrUndefined(Option.map(parsed, ({ fields }) => fields.csrf))
            if (!(yield* forms.verifyToken(request, token, "account", endUser))) return forms.formExpired()
            return yield* Option.match(parsed, {
              onNone: () => refused("INVALID_REQUEST"),
              onSome: ({ file }) =>
                avatars.upload(endUser.value.user.id, clientAddress(request, config.trustedProxies), file)
            }).pipe(
              Effect.as(redirectTo(`${accountPath}?done=avatar`, 303)),
              Effect.catchTag("Refused", (refusal) =>
                renderAccount(request, endUser.value, {
                  errors: messageOf(refusal, "avatar"),
                  ...refusedStatus(refusal)
                }))
            )
          }), runToCompletion)
        .handle("sendEmailCodeForm", ({ payload }) =>
          accountPost(
            payload.csrf,
            (endUser, request) => {
              const email = (payload.email ?? "").trim()
              return requireRecentSignIn(endUser).pipe(
                Effect.andThen(
                  isEmailAddress(email)
                    ? account.sendEmailChangeCode(endUser, email, clientAddress(request, config.trustedProxies))
                    : refused("INVALID_REQUEST")
                ),
                Effect.as(`${accountPath}?email=${encodeURIComponent(email)}`)
              )
            },
            (_, refused) => ({
              values: { email: payload.email ?? "" },
              field: refused.code === "INVALID_REQUEST" || refused.code === "CODE_REQUESTED_TOO_SOON"
                ? "email"
                : undefined
            } as const)
          ), runToCompletion)
        .handle("changeEmailForm", ({ payload }) =>
          accountPost(
            payload.csrf,
            (endUser, request) =>
              requireRecentSignIn(endUser).pipe(
                Effect.andThen(
                  account.changeEmail(endUser, {
                    email: (payload.email ?? "").trim(),
                    code: (payload.code ?? "").trim(),
                    // An empty field of the form is one not filled in.
                    current_password: payload.current_password === "" ? undefined : payload.current_password,
                    two_factor_code: payload.two_factor_code?.trim() === "" ? undefined : payload.two_factor_code
                  }, clientAddress(request, config.trustedProxies))
                ),
                Effect.as(`${accountPath}?done=email`)
              ),
            (_, refused) => ({
              pendingEmail: refused.code === "EMAIL_TAKEN" || refused.code === "REAUTHENTICATION_REQUIRED"
                ? undefined
                : payload.email,
              field: refused.code === "INVALID_REQUEST" ? "current_password" : undefined
            })
          ), runToCompletion)
        .handle("changePasswordForm", ({ payload }) =>
          accountPost(
            payload.csrf,
            (endUser) =>
              requireRecentSignIn(endUser).pipe(
                Effect.andThen(
                  account.changePassword(endUser, payload.current_password ?? "", payload.new_password ?? "")
                ),
                Effect.as(`${accountPath}?done=password`)
              ),
            (_, refused) => ({ field: refused.code === "WEAK_PASSWORD" ? "new_password" : undefined })
          ), runToCompletion)
        .handle("endSessionForm", ({ payload }) =>
          accountPost(
            payload.csrf,
            (endUser) =>
              account.endSession(endUser, payload.id ?? "").pipe(
                Effect.as(
                  payload.id === endUser.session.sid ? `${config.basePath}/ui/login` : `${accountPath}?done=session`
                )
              )
          ), runToCompletion)
    })
)
