/**
 * Handlers of the `recoveryPages` group: "Forgot your password?" as pages, on the same `Recovery`
 * operations as the envelope endpoints (src/identity/account/Recovery.ts). Step one mails a code
 * and answers step two with the recovery's pending value in a hidden field; the answer is the same
 * page for every address, so the page tells nobody whether an address has an account. Step two
 * resets the password and redirects (303) to the confirmation, so reloading never posts twice. A
 * refusal comes back as the step with the error next to its field and the code's HTTP status (429
 * with `Retry-After` for the limits). Forms carry CSRF tokens bound to the browser
 * (src/identity/http/PageForms.ts); `return_to` is kept only when it is a path on this server, and
 * only ever followed by the sign-in page the confirmation links to.
 */
import { Effect, Option } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import { isEmailAddress } from "../../../schema/Identity/User.js"
import { clientAddress } from "../../platform/ClientAddress.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Recovery } from "../account/Recovery.js"
import type { FieldErrors } from "../frontend/AccountPages.js"
import { recoveryCodePage, recoveryDonePage, recoveryEmailPage } from "../frontend/RecoveryPages.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import { PageForms } from "./PageForms.js"
import { messageOf, refusedStatus } from "./RefusalMessages.js"
import { page, redirectTo } from "./Responses.js"

const NOT_AN_ADDRESS = "Enter the email address of your account."

export const HttpRecoveryPagesLive = HttpApiBuilder.group(
  IdentityApi,
  "recoveryPages",
  (handlers) =>
    Effect.gen(function*() {
      const config = yield* IdentityConfig
      const forms = yield* PageForms
      const recovery = yield* Recovery
      const { ctx } = forms
      const forgotPath = `${config.basePath}/ui/password/forgot`

      const render = (request: HttpServerRequest.HttpServerRequest, input: {
        readonly returnTo: string
        readonly email: string
        /** Step two: the recovery step one started. */
        readonly pending?: string | undefined
        readonly errors?: FieldErrors
        readonly status?: number
        readonly headers?: Record<string, string>
      }) =>
        Effect.gen(function*() {
          const cookie = forms.csrfCookie(request)
          const csrf = yield* forms.issueToken(cookie, "recovery", Option.none())
          const fields = { csrf, email: input.email, returnTo: input.returnTo, errors: input.errors ?? {} }
          const body = input.pending === undefined
            ? recoveryEmailPage(ctx, fields)
            : recoveryCodePage(ctx, { ...fields, pending: input.pending })
          return forms.withCsrfCookie(page(body, { status: input.status ?? 200, headers: input.headers ?? {} }), cookie)
        })

      const returnToOf = (value: string | undefined) => Option.getOrElse(forms.safeReturnTo(value), () => "")

      return handlers
        .handle("recoveryPage", ({ query }) =>
          Effect.gen(function*() {
            const request = yield* HttpServerRequest.HttpServerRequest
            const returnTo = returnToOf(query.return_to)
            if (query.done === "reset") return page(recoveryDonePage(ctx, { returnTo }))
            return yield* render(request, { returnTo, email: query.email ?? "" })
          }), runToCompletion)
        .handle("recoverySendCode", ({ payload }) =>
          Effect.gen(function*() {
            const request = yield* HttpServerRequest.HttpServerRequest
            const returnTo = returnToOf(payload.return_to)
            const email = (payload.email ?? "").trim()
            if (!(yield* forms.verifyToken(request, payload.csrf, "recovery", Option.none()))) {
              return forms.formExpired()
            }
            if (!isEmailAddress(email)) {
              return yield* render(request, {
                returnTo,
                email,
                errors: { email: NOT_AN_ADDRESS },
                status: 400
              })
            }
            return yield* recovery.sendCode(email, clientAddress(request, config.trustedProxies)).pipe(
              Effect.flatMap(({ pending }) => render(request, { returnTo, email, pending })),
              Effect.catchTag("Refused", (refusal) =>
                render(request, {
                  returnTo,
                  email,
                  // The service's own check of the address (40001) belongs to the field too.
                  errors: refusal.code === "INVALID_REQUEST" ? { email: NOT_AN_ADDRESS } : messageOf(refusal),
                  ...refusedStatus(refusal)
                }))
            )
          }), runToCompletion)
        .handle("submitRecovery", ({ payload }) =>
          Effect.gen(function*() {
            const request = yield* HttpServerRequest.HttpServerRequest
            const returnTo = returnToOf(payload.return_to)
            const email = (payload.email ?? "").trim()
            const pending = payload.pending ?? ""
            const code = (payload.code ?? "").trim()
            const password = payload.password ?? ""
            if (!(yield* forms.verifyToken(request, payload.csrf, "recovery", Option.none()))) {
              return forms.formExpired()
            }
            if (pending === "") {
              // Nothing to continue: step one again.
              return yield* render(request, {
                returnTo,
                email,
                errors: { form: "Start again: ask for a code first." },
                status: 400
              })
            }
            const errors: Record<string, string> = {}
            if (!/^[0-9]{6}$/.test(code)) errors.code = "Enter the 6-digit code from the mail."
            if (password.trim() === "") errors.password = "Choose a new password."
            if (Object.keys(errors).length > 0) {
              return yield* render(request, { returnTo, email, pending, errors, status: 400 })
            }
            return yield* recovery.reset({ pending, code, password }).pipe(
              Effect.as(redirectTo(
                `${forgotPath}?done=reset${returnTo === "" ? "" : `&return_to=${encodeURIComponent(returnTo)}`}`,
                303
              )),
              Effect.catchTag("Refused", (refusal) =>
                render(request, {
                  returnTo,
                  email,
                  pending,
                  errors: messageOf(refusal),
                  ...refusedStatus(refusal)
                }))
            )
          }), runToCompletion)
    })
)
