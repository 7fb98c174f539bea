/**
 * Every 4xx/5xx of the catalog API is an `application/problem+json` document (RFC 9457;
 * docs/api-contract.md, "Errors: catalog problem documents"). This module only places the pieces
 * that decide which problem a request gets; each concern is a module of its own:
 * - ProblemDocument.ts renders a problem (request-specific members, the headers its code calls for);
 * - RefusedRequest.ts turns a request the endpoint's schemas refused into every bad field;
 * - JsonBodyOnly.ts refuses a body not sent as `application/json`;
 * - UnroutedRequest.ts answers what no endpoint answers (unknown route, wrong method, retired path,
 *   a body too large or unreadable);
 * - ServerFailure.ts answers defects (500) and the database unavailable (503).
 *
 * Two places, because the platform encodes an endpoint's declared errors inside the route:
 * - `problemResponsesLayer`, the `ProblemResponses` endpoint middleware (declared last on the API,
 *   so it wraps the credential middleware too): a problem an endpoint fails with, a request its
 *   declared schemas refuse, and a body not sent as `application/json`, become the finished
 *   response before the platform's error encoder sees them;
 * - `problemMiddleware`, the router's global middleware: what no endpoint answers, oversized or
 *   multipart bodies (bounded by src/platform/BodyLimit.ts, shared with the identity server),
 *   defects and an unreachable database.
 */
import { Cause, Effect, Layer, Option } from "effect"
import { HttpRouter, HttpServerRequest } from "effect/http"
import type { HttpServerResponse } from "effect/http"
import { HttpApiError } from "effect/http-api"
import { MAX_UPLOAD_BYTES, UPLOAD_PATH } from "../../schema/Api/MediaApi.js"
import { isProblem, PayloadTooLarge, ProblemResponses } from "../../schema/Problem.js"
import type { Problem } from "../../schema/Problem.js"
import { limitBody } from "./BodyLimit.js"
import { ServerConfig } from "./Config.js"
import {
  isPlatformUnsupportedMediaType,
  isRefusedBodyType,
  notJsonBody,
  refuseBodyOfType,
  unsupportedBodyType
} from "./JsonBodyOnly.js"
import { JSON_MEDIA_TYPE } from "./MediaType.js"
import { problemContext, respondWith } from "./ProblemDocument.js"
import { refusedRequest } from "./RefusedRequest.js"
import type { RouteTable } from "./RouteTable.js"
import { serverFailureProblem } from "./ServerFailure.js"
import { unroutedProblem } from "./UnroutedRequest.js"

export { startingProblem } from "./ProblemDocument.js"

/** A problem, or a request the endpoint's schemas refused (not an answer it failed to encode: a defect). */
const isAnsweredHere = (error: unknown): boolean =>
  isProblem(error) ||
  (HttpApiError.HttpApiSchemaError.is(error) && error.kind !== "Body" && error.kind !== "ResponseHeaders")

/** The implementation of the `ProblemResponses` endpoint middleware (see the module comment). */
export const problemResponsesLayer = Layer.effect(
  ProblemResponses,
  Effect.map(
    problemContext,
    (ctx) => (httpEffect, { endpoint, group }) =>
      Effect.flatMap(Effect.service(HttpServerRequest.HttpServerRequest), (request) => {
        const refused = refuseBodyOfType(endpoint, request)
        // An endpoint that takes other bodies than JSON (an image upload) names the types it takes.
        const accepted = [...endpoint.payload.keys()]
        const notJson = () =>
          respondWith(
            ctx,
            request,
            accepted.length === 0 || accepted.includes(JSON_MEDIA_TYPE)
              ? notJsonBody(request.headers["content-type"])
              : unsupportedBodyType(request.headers["content-type"], accepted)
          )
        return (refused === undefined
          ? httpEffect
          : Effect.provideService(httpEffect, HttpServerRequest.HttpServerRequest, refused)).pipe(
            Effect.flatMap((response) =>
              isPlatformUnsupportedMediaType(response) ? notJson() : Effect.succeed(response)
            ),
            Effect.catchIf(isAnsweredHere, (caught) => {
              const error: unknown = caught
              return isProblem(error)
                ? respondWith(ctx, request, error)
                : Effect.flatMap(refusedRequest(endpoint, group, request), (p) => respondWith(ctx, request, p))
            }),
            Effect.catchDefect((defect) => isRefusedBodyType(defect) ? notJson() : Effect.die(defect))
          )
      })
  )
)

/** The problem a request that failed outside any endpoint's answer gets; `undefined` to let it fail. */
const classify = (
  routes: RouteTable,
  maxBodyBytes: number,
  request: HttpServerRequest.HttpServerRequest,
  cause: Cause.Cause<unknown>
): Effect.Effect<Problem | undefined> => {
  const failure = Cause.findErrorOption(cause)
  const error: unknown = Option.isSome(failure) ? failure.value : Cause.squash(cause)
  if (isProblem(error)) return Effect.succeed(error)
  const unrouted = unroutedProblem(routes, maxBodyBytes, request, error)
  return unrouted !== undefined ? Effect.succeed(unrouted) : serverFailureProblem(request, cause, error)
}

/**
 * The catalog's global router middleware (see the module comment): bounds the body, and answers
 * whatever no endpoint answered (or answered with a defect) with its problem document.
 */
export const problemMiddleware = (routes: RouteTable) =>
  HttpRouter.middleware(
    Effect.gen(function*() {
      const ctx = yield* problemContext
      const limit = (yield* ServerConfig).maxBodyBytes
      const uploads = [{ method: "POST", path: UPLOAD_PATH, maxBytes: MAX_UPLOAD_BYTES }]
      const bounded = limitBody({
        maxBytes: limit,
        uploads,
        tooLarge: (request) => {
          const max = uploads.find((u) => u.method === request.method && u.path === request.url.split("?", 1)[0])
            ?.maxBytes ?? limit
          return respondWith(
            ctx,
            request,
            new PayloadTooLarge({ detail: `The request body exceeds ${max} bytes.`, max_bytes: max })
          )
        },
        multipart: (request) => respondWith(ctx, request, notJsonBody(request.headers["content-type"]))
      })
      return (
        app: Effect.Effect<HttpServerResponse.HttpServerResponse, unknown, HttpServerRequest.HttpServerRequest>
      ) =>
        Effect.flatMap(Effect.service(HttpServerRequest.HttpServerRequest), (request) =>
          bounded(app).pipe(
            Effect.catchCause((cause) =>
              Effect.flatMap(
                classify(routes, limit, request, cause),
                (p) => p === undefined ? Effect.failCause(cause) : respondWith(ctx, request, p)
              )
            )
          ))
    }),
    { global: true }
  )
