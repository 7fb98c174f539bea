/**
 * The second factor's set-up page for the session cookie (src/identity/twofactor/TwoFactor.ts): a
 * browser without a sign-in younger than 10 minutes is sent to the sign-in page, which brings it
 * back here. Its forms carry a CSRF token bound to the browser's CSRF cookie and the session
 * (src/identity/pages/forms/Csrf.ts). Every change takes the current password and a code (checked by
 * `TwoFactor`), and the session making the change is the one that stays signed in when the factor
 * goes on or off.
 */
import { Context, Effect, Layer, Option, Result, Schema } from "effect"
import type { HttpServerRequest } from "effect/http"
import { EnvelopeCodes } from "../../../../schema/Identity/Envelope.js"
import type { TwoFactorForm } from "../../../../schema/Identity/TwoFactor.js"
import { clientAddress } from "../../../platform/ClientAddress.js"
import type { EndUser } from "../../auth/EndUsers.js"
import { EndUsers } from "../../auth/EndUsers.js"
import { requireRecentSignIn } from "../../auth/SignedIn.js"
import { page, redirectTo } from "../../http/Responses.js"
import { Sessions } from "../../sessions/Sessions.js"
import { IdentityConfig } from "../../shared/IdentityConfig.js"
import type { Refused } from "../../shared/Refused.js"
import type { ChangeProof } from "../../twofactor/TwoFactor.js"
import { TwoFactor } from "../../twofactor/TwoFactor.js"
import { Csrf } from "../forms/Csrf.js"
import { FormValidation, nonEmpty, notBlank } from "../forms/FormValidation.js"
import { Html } from "../shared/Html.js"
import { messagePage } from "../shared/Layout.js"
import type { TwoFactorField, TwoFactorFormName } from "./View.js"
import { twoFactorEnabledPage, twoFactorOffPage, twoFactorSetupPage } from "./View.js"

/** A refusal the page explains next to one field of the form that was sent. */
const FIELD_MESSAGES: Partial<Record<Refused["code"], { readonly field: TwoFactorField; readonly message: string }>> = {
  TWO_FACTOR_INVALID: {
    field: "code",
    message: "That code is not right, or was already used. Enter the code the app shows now."
  },
  WRONG_PASSWORD: { field: "password", message: "That password is not right." },
  TOO_MANY_ATTEMPTS: { field: "code", message: "Too many wrong codes or passwords. Wait a little, then try again." }
}

/** The proof every change takes; the page names the code's problem first. */
const Proof = Schema.Struct({
  code: notBlank("Enter the code."),
  current_password: nonEmpty("Enter your password.")
})

export class TwoFactorPages extends Context.Service<TwoFactorPages>()("identity/pages/TwoFactorPages", {
  make: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const csrf = yield* Csrf
    const forms = yield* FormValidation
    const endUsers = yield* EndUsers
    const twoFactor = yield* TwoFactor
    const sessions = yield* Sessions
    const ctx = { basePath: config.basePath }
    const pagePath = `${config.basePath}/ui/account/two-factor`

    /**
     * The cookie's user when the sign-in is younger than 10 minutes; otherwise the redirect to the
     * sign-in page, which comes back here (the sign-in sets a new `auth_time`).
     */
    const recentCookieUser = (request: HttpServerRequest.HttpServerRequest, status: 302 | 303) =>
      Effect.gen(function*() {
        const endUser = yield* endUsers.fromCookie(request)
        const toSignIn = (email: string | undefined) => {
          const query = new URLSearchParams({ return_to: pagePath })
          if (email !== undefined) query.set("login_hint", email)
          return Result.fail(redirectTo(`${config.issuer}/ui/login?${query.toString()}`, status))
        }
        if (Option.isNone(endUser)) return toSignIn(undefined)
        const recent = yield* Effect.result(
          Effect.provideService(requireRecentSignIn(endUser.value), Sessions, sessions)
        )
        return Result.isFailure(recent) ? toSignIn(endUser.value.user.email) : Result.succeed(endUser.value)
      })

    /** The page as the account stands: set-up (pending key) without a factor, the changes with one. */
    const render = (request: HttpServerRequest.HttpServerRequest, endUser: EndUser, extra: {
      readonly error?: {
        readonly form: TwoFactorFormName
        readonly field: TwoFactorField
        readonly message: string
      }
      readonly recoveryCodes?: ReadonlyArray<string>
      readonly notice?: string
      readonly status?: number
      readonly headers?: Readonly<Record<string, string>>
    } = {}) =>
      Effect.gen(function*() {
        const form = yield* csrf.issue(request, "two-factor", Option.some(endUser))
        const { user } = endUser
        const status = yield* twoFactor.status(user.id)
        const body = Option.isSome(status.enabledAt)
          ? twoFactorEnabledPage(ctx, {
            csrf: form.token,
            email: user.email,
            enabledAt: status.enabledAt.value,
            recoveryCodesLeft: status.recoveryCodesLeft,
            recoveryCodes: extra.recoveryCodes,
            notice: extra.notice,
            error: extra.error
          })
          : yield* twoFactor.currentSetup(user.id, user.email).pipe(
            Effect.map((setup) =>
              twoFactorSetupPage(ctx, {
                csrf: form.token,
                email: user.email,
                secret: setup.secret,
                // The SVG is the qrcode library's drawing of our own URI: markup, not text.
                qrSvg: new Html(setup.qrSvg),
                error: extra.error
              })
            ),
            // Turned on by a concurrent request since `status`: the page says so on reload.
            Effect.catchTag("Refused", () =>
              Effect.succeed(messagePage(ctx, {
                title: "Two-factor authentication",
                message: "Two-factor authentication was just turned on.",
                link: { href: pagePath, text: "Reload" }
              })))
          )
        return form.send(page(body, { status: extra.status ?? 200, headers: extra.headers ?? {} }))
      })

    /** GET: the page, for a recent sign-in. */
    const show = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.gen(function*() {
        const endUser = yield* recentCookieUser(request, 302)
        if (Result.isFailure(endUser)) return endUser.failure
        return yield* render(request, endUser.success)
      })

    /** POST: `restart` makes a new key; `enable`, `disable` and `recovery-codes` take the proof. */
    const submit = (request: HttpServerRequest.HttpServerRequest, payload: TwoFactorForm) =>
      Effect.gen(function*() {
        const signedIn = yield* recentCookieUser(request, 303)
        if (Result.isFailure(signedIn)) return signedIn.failure
        const endUser = signedIn.success
        if (!(yield* csrf.verify(request, payload.csrf, "two-factor", Option.some(endUser)))) return csrf.expired()
        const ip = clientAddress(request, config.trustedProxies)
        const userId = endUser.user.id
        const action = payload.action
        /** A refused change: the page again, the error next to the field of the form that was sent. */
        const refusedOn = (form: TwoFactorFormName) => (refused: Refused) =>
          render(request, endUser, {
            ...(FIELD_MESSAGES[refused.code] === undefined
              ? { notice: "Nothing was changed: the account changed meanwhile." }
              : { error: { form, ...FIELD_MESSAGES[refused.code]! } }),
            status: EnvelopeCodes[refused.code].status,
            headers: refused.headers
          })
        if (action === "restart") {
          return yield* twoFactor.setup(userId, endUser.user.email).pipe(
            Effect.flatMap(() => render(request, endUser)),
            Effect.catchTag("Refused", () => render(request, endUser))
          )
        }
        if (action !== "enable" && action !== "disable" && action !== "recovery-codes") {
          return page(messagePage(ctx, { title: "Nothing to do", message: "No change was asked for." }), {
            status: 400
          })
        }
        const filled = yield* Effect.result(forms.decode(Proof, payload))
        if (filled._tag === "Failure") {
          const errors = filled.failure
          return yield* render(request, endUser, {
            error: errors.code !== undefined
              ? { form: action, field: "code", message: errors.code }
              : { form: action, field: "password", message: errors.current_password ?? "" },
            status: 400
          })
        }
        const proof: ChangeProof = { code: filled.success.code, password: filled.success.current_password }
        switch (action) {
          case "enable":
            return yield* twoFactor.enable(endUser, proof, ip).pipe(
              Effect.flatMap((recoveryCodes) =>
                render(request, endUser, {
                  recoveryCodes,
                  notice: "Two-factor authentication is on. Every other sign-in of the account was ended."
                })
              ),
              Effect.catchTag("Refused", refusedOn(action))
            )
          case "recovery-codes":
            return yield* twoFactor.regenerateRecoveryCodes(endUser, proof, ip).pipe(
              Effect.flatMap((recoveryCodes) =>
                render(request, endUser, {
                  recoveryCodes,
                  notice: "New recovery codes made; the old ones no longer work."
                })
              ),
              Effect.catchTag("Refused", refusedOn(action))
            )
          case "disable":
            return yield* twoFactor.disable(endUser, proof, ip).pipe(
              Effect.as(page(twoFactorOffPage(ctx, { email: endUser.user.email }))),
              Effect.catchTag("Refused", refusedOn(action))
            )
        }
      })

    return { show, submit } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
