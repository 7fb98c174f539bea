/**
 * The problems of a request the server failed, not the client (docs/api-contract.md, "Errors:
 * catalog problem documents"): the database unavailable, or the S3-compatible media store
 * (src/platform/MediaStore.ts), is a 503 with `Retry-After` (the request was fine; retry later), any
 * other defect a 500 with an empty `detail` (nothing internal reaches the client; the cause goes to
 * the log). Whether the database is unavailable is told by SQLSTATE, @effect/sql-pg's reason and
 * system error codes only (SqlState.ts), never by message text; a pool with no free connection in
 * time (PoolCheckout.ts) is the same 503, said to be busy.
 */
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Cause, Effect, Option } from "effect"
import type { HttpServerRequest } from "effect/http"
import { InternalError, ServiceUnavailable } from "../../schema/Problem.js"
import type { Problem } from "../../schema/Problem.js"
import { isMediaStoreUnavailable } from "./MediaStore.js"
import { isPoolExhausted } from "./PoolCheckout.js"
import { isDatabaseUnavailable } from "./SqlState.js"

/**
 * The 503 or 500 for `cause` (whose failure or squashed defect is `error`), logged; `undefined` for a
 * cause that is not the server's to answer: an interruption alone, or a failure nothing above recognised.
 */
export const serverFailureProblem = (
  request: HttpServerRequest.HttpServerRequest,
  cause: Cause.Cause<unknown>,
  error: unknown
): Effect.Effect<Problem | undefined> =>
  Effect.gen(function*() {
    if (isDatabaseUnavailable(error)) {
      // A client that hangs up interrupts its request, which cancels the statement (57014): not an
      // outage, and nobody reads the answer.
      const clientGone = Cause.hasInterrupts(cause) ||
        NodeHttpServerRequest.toIncomingMessage(request).socket?.destroyed === true
      const busy = isPoolExhausted(error)
      yield* clientGone
        ? Effect.logDebug("statement cancelled: the client went away", cause)
        : Effect.logWarning(busy ? "database busy: no free connection" : "database unavailable", cause)
      return new ServiceUnavailable({
        detail: busy ? "The database is busy." : "The database is unreachable.",
        retry_after: 5
      })
    }
    if (isMediaStoreUnavailable(error)) {
      yield* Effect.logError("media store unavailable", cause)
      return new ServiceUnavailable({ detail: "The media store is unavailable.", retry_after: 5 })
    }
    if (Cause.hasInterruptsOnly(cause)) return undefined
    if (Option.isSome(Cause.findErrorOption(cause))) return undefined
    // A request cut short (its client gone, or the drain's grace over at shutdown) fails with what
    // the cut left behind: not a defect of the request's own.
    if (Cause.hasInterrupts(cause)) {
      yield* Effect.logDebug("request cut short", cause)
      return undefined
    }
    yield* Effect.logError("unhandled defect", cause)
    return new InternalError({ detail: "" })
  })
