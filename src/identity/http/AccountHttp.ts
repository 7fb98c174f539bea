/**
 * Handlers of the `account` group: each finds the signed-in user (src/identity/auth/SignedIn.ts),
 * checks a recent sign-in where the change is sensitive, calls one `Account` method (or, for account
 * recovery, one `Recovery` method, which needs no user) and answers its declared envelope
 * (schema/Api/IdentityAccountApi.ts); a refusal fails with its envelope code. The avatar image is the
 * one answer that is not JSON: its bytes go out as stored, with the headers of an immutable URL.
 */
import { Effect, Option } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import { LoginResult } from "../../../schema/Identity/Login.js"
import { AvatarUploaded, PendingCodeSent } from "../../../schema/Identity/Me.js"
import { clientAddress } from "../../platform/ClientAddress.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Account } from "../account/Account.js"
import { Avatars } from "../account/Avatars.js"
import { CODE_TTL_SECONDS } from "../account/EmailCodes.js"
import { Recovery } from "../account/Recovery.js"
import { EndUsers } from "../auth/EndUsers.js"
import { requireRecentSignIn, signedInUser } from "../auth/SignedIn.js"
import { Sessions } from "../sessions/Sessions.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import { envelopeAnswer, envelopeRefusal, onAnswer, refusal } from "./Responses.js"

export const HttpAccountLive = HttpApiBuilder.group(IdentityApi, "account", (handlers) =>
  Effect.gen(function*() {
    const config = yield* IdentityConfig
    const account = yield* Account
    const avatars = yield* Avatars
    const recovery = yield* Recovery
    const sessions = yield* Sessions
    const endUsers = yield* EndUsers
    const address = Effect.map(HttpServerRequest.HttpServerRequest, (request) =>
      clientAddress(request, config.trustedProxies))
    // The services the checks use per request, taken from this stack once.
    const signedIn = Effect.provideService(signedInUser, EndUsers, endUsers)
    const recentUser = Effect.tap(
      signedIn,
      (endUser) =>
        Effect.provideService(requireRecentSignIn(endUser), Sessions, sessions)
    )

    return handlers
      .handle("me", () =>
        signedIn.pipe(
          Effect.flatMap((endUser) => account.me(endUser.user.id)),
          Effect.flatMap((me) => envelopeAnswer(me)),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
      .handle("updateMe", ({ payload }) =>
        signedIn.pipe(
          Effect.flatMap((endUser) => account.updateProfile(endUser, payload)),
          Effect.flatMap((me) => envelopeAnswer(me)),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
      .handleRaw("uploadAvatar", ({ request }) =>
        signedIn.pipe(
          Effect.flatMap((endUser) =>
            avatars.uploadBody(
              endUser.user.id,
              clientAddress(request, config.trustedProxies),
              request.headers["content-type"] ?? "",
              Effect.map(request.arrayBuffer, (body) => new Uint8Array(body))
            )
          ),
          Effect.flatMap((picture) => envelopeAnswer(new AvatarUploaded({ picture }))),
          Effect.catchTag("Refused", refusal),
          Effect.catchTag("HttpServerError", () => envelopeRefusal("INVALID_REQUEST"))
        ), runToCompletion)
      .handle("avatar", ({ params }) =>
        avatars.find(params.file.slice(0, 64)).pipe(
          Effect.flatMap(Option.match({
            onNone: () => envelopeRefusal("NOT_FOUND"),
            onSome: (avatar) =>
              Effect.succeed(HttpServerResponse.uint8Array(avatar.bytes, {
                contentType: avatar.content_type,
                headers: {
                  "cache-control": "public, max-age=31536000, immutable",
                  "x-content-type-options": "nosniff",
                  "content-security-policy": "default-src 'none'"
                }
              }))
          }))
        ), runToCompletion)
      .handle("sendEmailCode", ({ payload }) =>
        Effect.all([recentUser, address]).pipe(
          Effect.flatMap(([endUser, ip]) => account.sendEmailChangeCode(endUser, payload.email, ip)),
          Effect.flatMap((sent) => envelopeAnswer(sent)),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
      .handle("changeEmail", ({ payload }) =>
        Effect.all([recentUser, address]).pipe(
          Effect.flatMap(([endUser, ip]) => account.changeEmail(endUser, payload, ip)),
          Effect.flatMap((me) => envelopeAnswer(me)),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
      .handle("changePassword", ({ payload }) =>
        recentUser.pipe(
          Effect.flatMap((endUser) => account.changePassword(endUser, payload.current_password, payload.new_password)),
          Effect.andThen(envelopeAnswer(null)),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
      .handle("sessions", () =>
        signedIn.pipe(
          Effect.flatMap(account.listSessions),
          Effect.flatMap((list) => envelopeAnswer(list)),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
      .handle("endSession", ({ params }) =>
        signedIn.pipe(
          Effect.flatMap((endUser) => account.endSession(endUser, params.id)),
          Effect.andThen(envelopeAnswer(null)),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
      .handle("sendRegistrationCode", ({ payload }) =>
        address.pipe(
          Effect.flatMap((ip) => account.sendRegistrationCode(payload.email, ip)),
          Effect.flatMap((sent) => envelopeAnswer(sent)),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
      .handle("sendRecoveryCode", ({ payload }) =>
        address.pipe(
          Effect.flatMap((ip) => recovery.sendCode(payload.email, ip)),
          Effect.flatMap(({ pending }) =>
            envelopeAnswer(new PendingCodeSent({ pending, expires_in: CODE_TTL_SECONDS }))
          ),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
      .handle("resetPassword", ({ payload }) =>
        recovery.reset(payload).pipe(
          Effect.andThen(envelopeAnswer(null)),
          Effect.catchTag("Refused", refusal)
        ), runToCompletion)
      .handle("register", ({ payload }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          // As at sign-in: a cross-site HTML form cannot post JSON, so it cannot sign a browser in.
          if (!(request.headers["content-type"] ?? "").toLowerCase().includes("application/json")) {
            return yield* envelopeRefusal("INVALID_REQUEST")
          }
          const ip = clientAddress(request, config.trustedProxies)
          return yield* account.register(payload, { ip, userAgent: request.headers["user-agent"] ?? "" }).pipe(
            Effect.flatMap(({ access, cookie }) =>
              Effect.andThen(
                onAnswer((response) => sessions.setCookie(response, cookie)),
                envelopeAnswer(
                  new LoginResult({ access_token: access.token, token_type: "Bearer", expires_in: access.expiresIn })
                )
              )
            ),
            Effect.catchTag("Refused", refusal)
          )
        }), runToCompletion)
  }))
