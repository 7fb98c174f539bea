/**
 * Handler of the `auth` group: password sign-in, an envelope endpoint (schema/Api/IdentityAuthApi.ts):
 * the access token in `data` and the session cookie on the answer.
 */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import { LoginResult } from "../../../schema/Identity/Login.js"
import { clientAddress } from "../../platform/ClientAddress.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Login } from "../auth/Login.js"
import { Sessions } from "../sessions/Sessions.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import { envelopeAnswer, envelopeRefusal, onAnswer } from "./Responses.js"

export const HttpAuthLive = HttpApiBuilder.group(IdentityApi, "auth", (handlers) =>
  Effect.gen(function*() {
    const config = yield* IdentityConfig
    const login = yield* Login
    const sessions = yield* Sessions

    return handlers
      .handle("login", ({ payload }) =>
        Effect.gen(function*() {
          // Only an `application/json` body reaches here (415 otherwise, ErrorMiddleware.ts): a cross-site
          // page can post a form or text/plain, never JSON without CORS, so it cannot sign a browser in.
          const request = yield* HttpServerRequest.HttpServerRequest
          return yield* login.login({
            email: payload.email,
            password: payload.password,
            otp: payload.otp,
            recoveryCode: payload.recovery_code,
            ip: clientAddress(request, config.trustedProxies),
            userAgent: request.headers["user-agent"] ?? ""
          }).pipe(
            Effect.flatMap(({ access, cookie }) =>
              Effect.andThen(
                onAnswer((response) => sessions.setCookie(response, cookie)),
                envelopeAnswer(
                  new LoginResult({ access_token: access.token, token_type: "Bearer", expires_in: access.expiresIn })
                )
              )
            ),
            Effect.catchTag("LoginFailed", (failed) =>
              envelopeRefusal(
                failed.code,
                failed.retryAfterSeconds === undefined ? {} : { "retry-after": String(failed.retryAfterSeconds) }
              ))
          )
        }), runToCompletion)
  }))
