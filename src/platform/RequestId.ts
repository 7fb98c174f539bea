/**
 * `X-Request-ID: req_<ULID>` on every response of both servers, equal to `request_id` in problem
 * documents, set as a span attribute and a log annotation. (effect's HTTP modules have no request-id
 * middleware: the platform's request span has a trace id, which is not what a client quotes.)
 */
import { Context, Effect, References, Tracer } from "effect"
import { HttpEffect, type HttpServerRequest, HttpServerResponse } from "effect/http"
import * as Crypto from "node:crypto"
import { monotonicFactory } from "ulid"

/**
 * ulid's default source asks the OS for fresh random bytes for every character, which showed up
 * as 5% of a loaded server's CPU. The same CSPRNG, drawn in 4096-word batches, costs nothing.
 */
const pool = new Uint32Array(4096)
let next = pool.length
const pooledRandom = (): number => {
  if (next === pool.length) {
    Crypto.getRandomValues(pool)
    next = 0
  }
  return pool[next++]! / 0x1_0000_0000
}

const ulid = monotonicFactory(pooledRandom)

/** The request id of the request being handled; empty outside one. */
export const currentRequestId = Context.Reference<string>("platform/currentRequestId", { defaultValue: () => "" })

export const makeRequestId = (): string => `req_${ulid()}`

/**
 * The outermost middleware of a server: it runs inside the platform's request span, so the id
 * lands on that span; every response, including errors, gets the header.
 *
 * Every request passes here, so it is written as one step: the header (a pre-response handler,
 * because the platform writes the response before an outer map runs), the span attribute, and the
 * id and log annotation provided in one change of the fiber's context.
 */
export const withRequestId = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  Effect.withFiber((fiber) => {
    const id = makeRequestId()
    HttpEffect.appendPreResponseHandlerUnsafe(
      fiber.context,
      (_request, response) => Effect.succeed(HttpServerResponse.setHeader(response, "x-request-id", id))
    )
    const span = Context.getOrUndefined(fiber.context, Tracer.ParentSpan)
    if (span?._tag === "Span" && span.status._tag !== "Ended") span.attribute("request_id", id)
    return Effect.updateContext(app, (context: Context.Context<never>) =>
      Context.add(
        Context.add(context, currentRequestId, id),
        References.CurrentLogAnnotations,
        { ...Context.get(context, References.CurrentLogAnnotations), request_id: id }
      ) as Context.Context<R>)
  })
