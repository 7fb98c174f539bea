/**
 * Handler of the `auth` group: password sign-in, an envelope endpoint.
 */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Login } from "../auth/Login.js"
import { IdentityConfig } from "../IdentityConfig.js"
import { Sessions } from "../sessions/Sessions.js"
import { clientAddress } from "./ClientAddress.js"
import { envelopeError, envelopeSuccess } from "./Responses.js"

export const HttpAuthLive = HttpApiBuilder.group(IdentityApi, "auth", (handlers) =>
  Effect.gen(function*() {
    const config = yield* IdentityConfig
    const login = yield* Login
    const sessions = yield* Sessions

    return handlers
      .handle("login", ({ payload }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          // A cross-site HTML form can post urlencoded bodies; only JSON (which needs CORS) may sign in.
          if (!(request.headers["content-type"] ?? "").toLowerCase().includes("application/json")) {
            return envelopeError("INVALID_REQUEST")
          }
          return yield* login.login({
            email: payload.email,
            password: payload.password,
            otp: payload.otp,
            recoveryCode: payload.recovery_code,
            ip: clientAddress(request, config.trustedProxies),
            userAgent: request.headers["user-agent"] ?? ""
          }).pipe(
            Effect.map(({ access, cookie }) =>
              sessions.setCookie(
                envelopeSuccess({ access_token: access.token, token_type: "Bearer", expires_in: access.expiresIn }),
                cookie
              )
            ),
            Effect.catchTag("LoginFailed", (failed) =>
              Effect.succeed(envelopeError(
                failed.code,
                failed.retryAfterSeconds === undefined ? {} : { "retry-after": String(failed.retryAfterSeconds) }
              )))
          )
        }), runToCompletion)
  }))
