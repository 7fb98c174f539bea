/**
 * "Forgot your password?" as pages, on the same `Recovery` operations as the envelope endpoints
 * (src/identity/account/Recovery.ts). Step one mails a code and answers step two with the
 * recovery's pending value in a hidden field; the answer is the same page for every address, so the
 * page tells nobody whether an address has an account. Step two resets the password and redirects
 * (303) to the confirmation, so reloading never posts twice. A refusal comes back as the step with
 * the error next to its field and the code's HTTP status (429 with `Retry-After` for the limits).
 * Forms carry CSRF tokens bound to the browser (src/identity/pages/forms/Csrf.ts); `return_to` is
 * kept only when it is a path on this server, and only ever followed by the sign-in page the
 * confirmation links to.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { HttpServerRequest } from "effect/http"
import type {
  RecoveryForm,
  RecoveryPageParams,
  RecoverySendCodeForm
} from "../../../../schema/Identity/RecoveryPages.js"
import { clientAddress } from "../../../platform/ClientAddress.js"
import { Recovery } from "../../account/Recovery.js"
import { page, redirectTo } from "../../http/Responses.js"
import { IdentityConfig } from "../../shared/IdentityConfig.js"
import { Csrf } from "../forms/Csrf.js"
import { emailAddress, FormValidation, mailedCode, notBlank } from "../forms/FormValidation.js"
import type { FieldErrors } from "../shared/FormFields.js"
import { recoveryCodePage, recoveryDonePage, recoveryEmailPage } from "./View.js"

const NOT_AN_ADDRESS = "Enter the email address of your account."

const EmailStep = Schema.Struct({ email: emailAddress(NOT_AN_ADDRESS) })

const ResetStep = Schema.Struct({
  code: mailedCode("Enter the 6-digit code from the mail."),
  password: notBlank("Choose a new password.")
})

export class RecoveryPages extends Context.Service<RecoveryPages>()("identity/pages/RecoveryPages", {
  make: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const csrf = yield* Csrf
    const forms = yield* FormValidation
    const recovery = yield* Recovery
    const ctx = { basePath: config.basePath }
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
        const form = yield* csrf.issue(request, "recovery", Option.none())
        const fields = { csrf: form.token, email: input.email, returnTo: input.returnTo, errors: input.errors ?? {} }
        const body = input.pending === undefined
          ? recoveryEmailPage(ctx, fields)
          : recoveryCodePage(ctx, { ...fields, pending: input.pending })
        return form.send(page(body, { status: input.status ?? 200, headers: input.headers ?? {} }))
      })

    const returnToOf = (value: string | undefined) => Option.getOrElse(forms.returnTo(value), () => "")

    /** GET: step one, or the confirmation after a reset (`done=reset`). */
    const show = (request: HttpServerRequest.HttpServerRequest, query: RecoveryPageParams) => {
      const returnTo = returnToOf(query.return_to)
      return query.done === "reset"
        ? Effect.succeed(page(recoveryDonePage(ctx, { returnTo })))
        : render(request, { returnTo, email: query.email ?? "" })
    }

    /** Step one: mails a code when the address has an account, and answers step two either way. */
    const sendCode = (request: HttpServerRequest.HttpServerRequest, payload: RecoverySendCodeForm) =>
      Effect.gen(function*() {
        const returnTo = returnToOf(payload.return_to)
        const email = (payload.email ?? "").trim()
        if (!(yield* csrf.verify(request, payload.csrf, "recovery", Option.none()))) return csrf.expired()
        const fields = yield* Effect.result(forms.decode(EmailStep, payload))
        if (fields._tag === "Failure") {
          return yield* render(request, { returnTo, email, errors: fields.failure, status: 400 })
        }
        return yield* recovery.sendCode(fields.success.email, clientAddress(request, config.trustedProxies)).pipe(
          Effect.flatMap(({ pending }) => render(request, { returnTo, email, pending })),
          Effect.catchTag("Refused", (refusal) => {
            const answer = forms.refusal(refusal)
            return render(request, {
              returnTo,
              email,
              ...answer,
              // The service's own check of the address (40001) belongs to the field too.
              errors: refusal.code === "INVALID_REQUEST" ? { email: NOT_AN_ADDRESS } : answer.errors
            })
          })
        )
      })

    /** Step two: the new password, then the confirmation. */
    const reset = (request: HttpServerRequest.HttpServerRequest, payload: RecoveryForm) =>
      Effect.gen(function*() {
        const returnTo = returnToOf(payload.return_to)
        const email = (payload.email ?? "").trim()
        const pending = payload.pending ?? ""
        if (!(yield* csrf.verify(request, payload.csrf, "recovery", Option.none()))) return csrf.expired()
        if (pending === "") {
          // Nothing to continue: step one again.
          return yield* render(request, {
            returnTo,
            email,
            errors: { form: "Start again: ask for a code first." },
            status: 400
          })
        }
        const fields = yield* Effect.result(forms.decode(ResetStep, payload))
        if (fields._tag === "Failure") {
          return yield* render(request, { returnTo, email, pending, errors: fields.failure, status: 400 })
        }
        return yield* recovery.reset({ pending, ...fields.success }).pipe(
          Effect.as(redirectTo(
            `${forgotPath}?done=reset${returnTo === "" ? "" : `&return_to=${encodeURIComponent(returnTo)}`}`,
            303
          )),
          Effect.catchTag("Refused", (refusal) =>
            render(request, { returnTo, email, pending, ...forms.refusal(refusal) }))
        )
      })

    return { show, sendCode, reset } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
