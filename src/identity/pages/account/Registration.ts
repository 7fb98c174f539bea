/**
 * Registration as pages: step one mails a code to the address, step two takes the code, a display
 * name and a password and signs the new account in. The same `Account` operations as the envelope
 * endpoints (src/identity/account/Account.ts); a refusal comes back as the step with the error next
 * to its field and the code's HTTP status, and a successful post redirects (303), so reloading never
 * posts twice. Between the two steps, the pending value the code is bound to
 * (src/identity/account/EmailCodes.ts) waits in an HttpOnly cookie scoped like the session's, so it
 * stays out of URLs and pages.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpServerResponse } from "effect/http"
import type {
  RegisterForm,
  RegisterPageParams,
  RegisterSendCodeForm
} from "../../../../schema/Identity/AccountPages.js"
import { clientAddress } from "../../../platform/ClientAddress.js"
import { Account } from "../../account/Account.js"
import { CODE_TTL_SECONDS } from "../../account/EmailCodes.js"
import { page, redirectTo } from "../../http/Responses.js"
import { Sessions } from "../../sessions/Sessions.js"
import { IdentityConfig } from "../../shared/IdentityConfig.js"
import { Csrf } from "../forms/Csrf.js"
import { emailAddress, filled, FormValidation, mailedCode, notBlank, shownAt } from "../forms/FormValidation.js"
import type { FieldErrors } from "../shared/FormFields.js"
import { registerCodePage, registerEmailPage } from "./View.js"

const EmailStep = Schema.Struct({ email: emailAddress("Enter an email address.") })

const CodeStep = Schema.Struct({
  code: mailedCode("Enter the 6-digit code from the mail."),
  name: notBlank("Enter a display name."),
  password: notBlank("Choose a password."),
  // A hidden field: without it the form cannot go on, whatever was typed.
  email: filled("Start again: the address is missing.").pipe(shownAt("form"))
})

export class Registration extends Context.Service<Registration>()("identity/pages/Registration", {
  make: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const csrf = yield* Csrf
    const forms = yield* FormValidation
    const account = yield* Account
    const sessions = yield* Sessions
    const ctx = { basePath: config.basePath }
    const accountPath = `${config.basePath}/ui/account`

    // The pending value of a registration between its two steps, scoped like the session cookie.
    const registerCookie = config.secureCookies ? "__Host-shiori_register" : "shiori_register"
    const withRegisterCookie = (response: HttpServerResponse.HttpServerResponse, pending: string) =>
      HttpServerResponse.setCookieUnsafe(response, registerCookie, pending, {
        ...sessions.cookieOptions,
        maxAge: `${CODE_TTL_SECONDS} seconds`
      })
    const withoutRegisterCookie = (response: HttpServerResponse.HttpServerResponse) =>
      HttpServerResponse.expireCookieUnsafe(response, registerCookie, sessions.cookieOptions)

    const returnToOf = (value: string | undefined) => Option.getOrElse(forms.returnTo(value), () => "")

    const render = (request: HttpServerRequest.HttpServerRequest, input: {
      readonly email: string
      readonly step: "email" | "code"
      readonly returnTo: string
      readonly name?: string
      readonly errors?: FieldErrors
      readonly status?: number
      readonly headers?: Record<string, string>
    }) =>
      Effect.gen(function*() {
        const form = yield* csrf.issue(request, "register", Option.none())
        const body = input.step === "email"
          ? registerEmailPage(ctx, {
            csrf: form.token,
            email: input.email,
            returnTo: input.returnTo,
            errors: input.errors ?? {}
          })
          : registerCodePage(ctx, {
            csrf: form.token,
            email: input.email,
            name: input.name ?? "",
            returnTo: input.returnTo,
            errors: input.errors ?? {}
          })
        return form.send(page(body, { status: input.status ?? 200, headers: input.headers ?? {} }))
      })

    /** GET: step one, or step two once `email` names the address a code went to. */
    const show = (request: HttpServerRequest.HttpServerRequest, query: RegisterPageParams) =>
      render(request, {
        email: query.email ?? "",
        step: query.email === undefined || query.email === "" ? "email" : "code",
        returnTo: returnToOf(query.return_to)
      })

    /** Step one: mails the code, keeps its pending value in the cookie, and redirects to step two. */
    const sendCode = (request: HttpServerRequest.HttpServerRequest, payload: RegisterSendCodeForm) =>
      Effect.gen(function*() {
        const returnTo = returnToOf(payload.return_to)
        const email = (payload.email ?? "").trim()
        if (!(yield* csrf.verify(request, payload.csrf, "register", Option.none()))) return csrf.expired()
        const fields = yield* Effect.result(forms.decode(EmailStep, payload))
        if (fields._tag === "Failure") {
          return yield* render(request, { email, step: "email", returnTo, errors: fields.failure, status: 400 })
        }
        return yield* account.sendRegistrationCode(fields.success.email, clientAddress(request, config.trustedProxies))
          .pipe(
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
            Effect.catchTag(
              "Refused",
              (refused) => render(request, { email, step: "email", returnTo, ...forms.refusal(refused) })
            )
          )
      })

    /** Step two: the account, signed in, then `return_to` or the account page. */
    const submit = (request: HttpServerRequest.HttpServerRequest, payload: RegisterForm) =>
      Effect.gen(function*() {
        const returnTo = returnToOf(payload.return_to)
        const email = (payload.email ?? "").trim()
        const name = payload.name ?? ""
        if (!(yield* csrf.verify(request, payload.csrf, "register", Option.none()))) return csrf.expired()
        const fields = yield* Effect.result(forms.decode(CodeStep, payload))
        if (fields._tag === "Failure") {
          return yield* render(request, { email, step: "code", name, returnTo, errors: fields.failure, status: 400 })
        }
        // Without the cookie of the first step (another browser, or it expired) no code can match.
        const pending = request.cookies[registerCookie] ?? ""
        const { code, password } = fields.success
        return yield* account.register(
          { email, pending, code, password, name },
          { ip: clientAddress(request, config.trustedProxies), userAgent: request.headers["user-agent"] ?? "" }
        ).pipe(
          Effect.map(({ cookie }) =>
            sessions.setCookie(
              withoutRegisterCookie(redirectTo(returnTo === "" ? `${accountPath}?done=registered` : returnTo, 303)),
              cookie
            )
          ),
          Effect.catchTag("Refused", (refused) =>
            render(request, { email, step: "code", name, returnTo, ...forms.refusal(refused) }))
        )
      })

    return { show, sendCode, submit } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
