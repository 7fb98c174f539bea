/**
 * Handlers of the second factor (src/identity/twofactor/TwoFactor.ts):
 *
 * - `twoFactor`: envelope endpoints for the Bearer token of a sign-in younger than 10 minutes
 *   (src/identity/auth/SignedIn.ts), answering the envelope they declare
 *   (schema/Api/IdentityTwoFactorApi.ts); a refusal fails with its envelope code.
 * - `twoFactorPages`: the set-up page for the session cookie. A browser without a sign-in younger
 *   than 10 minutes is sent to the sign-in page, which brings it back here. Its forms carry a CSRF
 *   token bound to the browser's CSRF cookie and the session (src/identity/http/PageForms.ts).
 *
 * Both take the current password with every change (checked by `TwoFactor`), and the session making
 * the change is the one that stays signed in when the factor goes on or off.
 */
import { Effect, Option, Result } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import { EnvelopeCodes } from "../../../schema/Identity/Envelope.js"
import type { TwoFactorCodeRequest, TwoFactorForm } from "../../../schema/Identity/TwoFactor.js"
import { RecoveryCodes, TwoFactorSetup } from "../../../schema/Identity/TwoFactor.js"
import { clientAddress } from "../../platform/ClientAddress.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import type { EndUser } from "../auth/EndUsers.js"
import { EndUsers } from "../auth/EndUsers.js"
import { requireRecentSignIn, signedInUser } from "../auth/SignedIn.js"
import { Html } from "../frontend/Html.js"
import { messagePage } from "../frontend/Pages.js"
import type { TwoFactorField, TwoFactorFormName } from "../frontend/TwoFactorPages.js"
import { twoFactorEnabledPage, twoFactorOffPage, twoFactorSetupPage } from "../frontend/TwoFactorPages.js"
import { Sessions } from "../sessions/Sessions.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import type { Refused } from "../shared/Refused.js"
import type { ChangeProof } from "../twofactor/TwoFactor.js"
import { TwoFactor } from "../twofactor/TwoFactor.js"
import { PageForms } from "./PageForms.js"
import { envelopeAnswer, page, redirectTo, refusal } from "./Responses.js"

const proofOf = (payload: TwoFactorCodeRequest): ChangeProof => ({
  code: payload.code,
  password: payload.current_password
})

export const HttpTwoFactorLive = HttpApiBuilder.group(IdentityApi, "twoFactor", (handlers) =>
  Effect.gen(function*() {
    const config = yield* IdentityConfig
    const twoFactor = yield* TwoFactor
    const endUsers = yield* EndUsers
    const sessions = yield* Sessions
    // The services the checks use per request, taken from this stack once.
    const recentUser = Effect.tap(
      Effect.provideService(signedInUser, EndUsers, endUsers),
      (endUser) => Effect.provideService(requireRecentSignIn(endUser), Sessions, sessions)
    )
    const withAddress = Effect.all([
      recentUser,
      Effect.map(HttpServerRequest.HttpServerRequest, (request) => clientAddress(request, config.trustedProxies))
    ])

    return handlers
      .handle("setup", () =>
        recentUser.pipe(
          Effect.flatMap((endUser) => twoFactor.setup(endUser.user.id, endUser.user.email)),
          Effect.flatMap((setup) =>
            envelopeAnswer(
              new TwoFactorSetup({ secret: setup.secret, otpauth_uri: setup.otpauthUri, qr_svg: setup.qrSvg })
            )
          ),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
      .handle("enable", ({ payload }) =>
        withAddress.pipe(
          Effect.flatMap(([endUser, ip]) => twoFactor.enable(endUser, proofOf(payload), ip)),
          Effect.flatMap((codes) => envelopeAnswer(new RecoveryCodes({ recovery_codes: codes }))),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
      .handle("disable", ({ payload }) =>
        withAddress.pipe(
          Effect.flatMap(([endUser, ip]) => twoFactor.disable(endUser, proofOf(payload), ip)),
          Effect.andThen(envelopeAnswer(null)),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
      .handle("recoveryCodes", ({ payload }) =>
        withAddress.pipe(
          Effect.flatMap(([endUser, ip]) => twoFactor.regenerateRecoveryCodes(endUser, proofOf(payload), ip)),
          Effect.flatMap((codes) => envelopeAnswer(new RecoveryCodes({ recovery_codes: codes }))),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
  }))

/** A refusal the page explains next to one field of the form that was sent. */
const FIELD_MESSAGES: Partial<Record<Refused["code"], { readonly field: TwoFactorField; readonly message: string }>> = {
  TWO_FACTOR_INVALID: {
    field: "code",
    message: "That code is not right, or was already used. Enter the code the app shows now."
  },
  WRONG_PASSWORD: { field: "password", message: "That password is not right." },
  TOO_MANY_ATTEMPTS: { field: "code", message: "Too many wrong codes or passwords. Wait a little, then try again." }
}

export const HttpTwoFactorPagesLive = HttpApiBuilder.group(
  IdentityApi,
  "twoFactorPages",
  (handlers) =>
    Effect.gen(function*() {
      const config = yield* IdentityConfig
      const forms = yield* PageForms
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
          const cookie = forms.csrfCookie(request)
          const token = yield* forms.issueToken(cookie, "two-factor", Option.some(endUser))
          const { user } = endUser
          const status = yield* twoFactor.status(user.id)
          const body = Option.isSome(status.enabledAt)
            ? twoFactorEnabledPage(ctx, {
              csrf: token,
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
                  csrf: token,
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
          return forms.withCsrfCookie(page(body, { status: extra.status ?? 200, headers: extra.headers ?? {} }), cookie)
        })

      const pageHandler = () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const endUser = yield* recentCookieUser(request, 302)
          if (Result.isFailure(endUser)) return endUser.failure
          return yield* render(request, endUser.success)
        })

      const submitHandler = ({ payload }: { readonly payload: TwoFactorForm }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const signedIn = yield* recentCookieUser(request, 303)
          if (Result.isFailure(signedIn)) return signedIn.failure
          const endUser = signedIn.success
          if (!(yield* forms.verifyToken(request, payload.csrf, "two-factor", Option.some(endUser)))) {
            return forms.formExpired()
          }
          const ip = clientAddress(request, config.trustedProxies)
          const userId = endUser.user.id
          const code = payload.code ?? ""
          const password = payload.current_password ?? ""
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
          if (code.trim() === "") {
            return yield* render(request, endUser, {
              error: { form: action, field: "code", message: "Enter the code." },
              status: 400
            })
          }
          if (password === "") {
            return yield* render(request, endUser, {
              error: { form: action, field: "password", message: "Enter your password." },
              status: 400
            })
          }
          const proof: ChangeProof = { code, password }
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

      return handlers
        .handle("twoFactorPage", pageHandler, runToCompletion)
        .handle("submitTwoFactor", submitHandler, runToCompletion)
    })
)
