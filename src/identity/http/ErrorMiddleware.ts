/**
 * The identity server's errors are not problem documents: protocol endpoints answer RFC 6749
 * `{error, error_description}` (SPEC 7.2). This middleware covers what the router and decoder
 * produce on their own; declared failures pass through to their own schemas.
 */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import type { HttpApp } from "@effect/platform"
import { Cause, Effect, Option } from "effect"
import { isDatabaseUnavailable } from "../../platform/ProblemMiddleware.js"

const oauthError = (status: number, error: string, description: string, headers: Record<string, string> = {}) =>
  HttpServerResponse.unsafeJson({ error, error_description: description }, { status, headers })

export const identityErrorMiddleware = HttpApiBuilder.middleware((app: HttpApp.Default) =>
  app.pipe(
    Effect.catchAllCause((cause) => {
      const failure = Cause.failureOption(cause)
      const squashed = Option.isSome(failure) ? failure.value : Cause.squash(cause)
      const tag = (squashed as any)?._tag
      if (tag === "HttpApiDecodeError") {
        return Effect.succeed(oauthError(400, "invalid_request", "The request is missing or has malformed parameters."))
      }
      if (tag === "RouteNotFound") return Effect.succeed(oauthError(404, "not_found", "No resource at this path."))
      if (tag === "RequestError") {
        return Effect.succeed(oauthError(400, "invalid_request", "The request body is malformed."))
      }
      if (Option.isSome(failure) || Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
      if (isDatabaseUnavailable(squashed)) {
        return Effect.as(
          Effect.logError("database unavailable", cause),
          oauthError(503, "temporarily_unavailable", "The service is temporarily unavailable.", { "retry-after": "5" })
        )
      }
      return Effect.as(
        Effect.logError("unhandled defect", cause),
        oauthError(500, "server_error", "An unexpected error occurred.")
      )
    })
  )
)
