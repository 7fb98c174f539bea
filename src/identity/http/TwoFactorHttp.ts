/**
 * Handlers of the second factor (src/identity/twofactor/TwoFactor.ts):
 *
 * - `twoFactor`: envelope endpoints for the Bearer token of a sign-in younger than 10 minutes
 *   (src/identity/auth/SignedIn.ts), answering the envelope they declare
 *   (schema/Api/IdentityTwoFactorApi.ts); a refusal fails with its envelope code.
 * - `twoFactorPages`: the set-up page for the session cookie, in src/identity/pages/twofactor/.
 *
 * Both take the current password with every change (checked by `TwoFactor`), and the session making
 * the change is the one that stays signed in when the factor goes on or off.
 */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import type { TwoFactorCodeRequest } from "../../../schema/Identity/TwoFactor.js"
import { RecoveryCodes, TwoFactorSetup } from "../../../schema/Identity/TwoFactor.js"
import { clientAddress } from "../../platform/ClientAddress.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { EndUsers } from "../auth/EndUsers.js"
import { requireRecentSignIn, signedInUser } from "../auth/SignedIn.js"
import { Sessions } from "../sessions/Sessions.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import type { ChangeProof } from "../twofactor/TwoFactor.js"
import { TwoFactor } from "../twofactor/TwoFactor.js"
import { envelopeAnswer, refusal } from "./Responses.js"

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
