/**
 * Handlers of the `auth` group: envelope endpoints (SPEC 4.2, 5; DECISIONS 10).
 */
import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import { Me } from "../../../schema/Identity/Me.js"
import { Subject, UserId } from "../../../schema/Identity/User.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { bearerToken, EndUsers } from "../auth/EndUsers.js"
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
    const endUsers = yield* EndUsers

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
      .handle("me", () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const token = bearerToken(request)
          if (Option.isNone(token)) {
            return envelopeError("TOKEN_MISSING", { "www-authenticate": `Bearer realm="shiori"` })
          }
          return yield* endUsers.fromBearer(token.value).pipe(
            Effect.map(({ user }) =>
              envelopeSuccess(
                new Me({
                  id: UserId.make(user.id),
                  sub: Subject.make(user.sub),
                  email: user.email,
                  name: user.name,
                  picture: user.picture,
                  roles: user.roles,
                  updated_at: Math.floor(user.updatedAt.getTime() / 1000)
                })
              )
            ),
            Effect.catchTag("BearerRejected", (rejected) =>
              Effect.succeed(
                envelopeError(rejected.reason === "expired" ? "TOKEN_EXPIRED" : "TOKEN_INVALID", {
                  "www-authenticate": `Bearer realm="shiori", error="invalid_token"`
                })
              ))
          )
        }), runToCompletion)
  }))
