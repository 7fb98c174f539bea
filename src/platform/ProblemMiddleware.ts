/**
 * Every 4xx/5xx of the catalog API is an `application/problem+json` document (RFC 9457;
 * docs/api-contract.md, "Errors: catalog problem documents").
 *
 * Declared failures are problem classes; request-specific members (`type`, `instance`,
 * `request_id`) are stamped on them here and the headers their code calls for are added. Two
 * pieces do it, because the platform encodes an endpoint's declared errors inside the route:
 * - `problemResponsesLayer`, the `ProblemResponses` endpoint middleware (declared last on the API,
 *   so it wraps the credential middleware too): a problem an endpoint fails with, a request its
 *   declared schemas refuse (re-decoded here to report every bad field with its location), and a
 *   body not sent as `application/json` (MediaType.ts), become the finished response before the
 *   platform's error encoder sees them;
 * - `problemMiddleware`, the router's global middleware: what no endpoint answers (unknown routes,
 *   wrong methods, retired paths), oversized or multipart bodies (bounded by
 *   src/platform/BodyLimit.ts, shared with the identity server), defects and an unreachable
 *   database.
 */
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Cause, Context, Effect, Layer, Option, Schema, SchemaAST, Stream } from "effect"
import type { SchemaIssue } from "effect"
import { HttpMethod, HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApi, HttpApiError } from "effect/http-api"
import type { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { entityCanonicalPath } from "../../schema/Api/Paths.js"
import type {
  EntityMerged,
  MethodNotAllowed as MethodNotAllowedProblem,
  ProblemCode,
  QuotaExceeded
} from "../../schema/Problem.js"
import {
  Gone,
  InternalError,
  InvalidParameter,
  isProblem,
  MethodNotAllowed,
  NotFound,
  PayloadTooLarge,
  problem,
  ProblemClasses,
  ProblemResponses,
  problemTypeUri,
  ServiceUnavailable,
  ValidationFailed
} from "../../schema/Problem.js"
import type { FieldError, Problem } from "../../schema/Problem.js"
import { isBodyTooLarge, limitBody } from "./BodyLimit.js"
import { ServerConfig } from "./Config.js"
import { type Collected, collectFieldErrors } from "./FieldErrors.js"
import { JSON_MEDIA_TYPE, jsonBodyType } from "./MediaType.js"
import { rateLimitField, rateLimitPolicyField } from "./RateLimiter.js"
import { currentRequestId } from "./RequestId.js"
import type { RouteTable } from "./RouteTable.js"
import { isDatabaseUnavailable } from "./SqlState.js"

export interface ProblemContext {
  readonly docsUrl: string
  readonly publicUrl: string
}

const instanceOf = (request: HttpServerRequest.HttpServerRequest) => {
  const url = request.url
  return url.startsWith("/") ? url : (() => {
    try {
      const parsed = new URL(url)
      return parsed.pathname + parsed.search
    } catch {
      return url
    }
  })()
}

type ProblemConstructor = new(props: Record<string, unknown>) => Problem

/** Fills the request-specific members of a problem. */
export const stampProblem = (p: Problem, ctx: ProblemContext, instance: string, requestId: string): Problem => {
  const cls = p.constructor as unknown as ProblemConstructor & { readonly fields: Record<string, unknown> }
  const props: Record<string, unknown> = {}
  for (const key of Object.keys(cls.fields)) {
    if (key !== "_tag") props[key] = (p as unknown as Record<string, unknown>)[key]
  }
  props.type = problemTypeUri(ctx.docsUrl, p.code as ProblemCode)
  props.instance = instance
  props.request_id = requestId
  return new cls(props)
}

/** The JSON body of a problem, through its wire schema (no `_tag`, members in declaration order). */
export const encodeProblem = (p: Problem): unknown =>
  Schema.encodeSync(
    problem(p.constructor as unknown as Parameters<typeof problem>[0]) as Schema.Codec<Problem, unknown>
  )(
    p
  )

/** The finished response for a problem, with the headers its code calls for. */
export const problemResponse = (p: Problem, ctx: ProblemContext): HttpServerResponse.HttpServerResponse => {
  const body = encodeProblem(p)
  const headers: Record<string, string> = {}
  switch (p.code) {
    case "MISSING_CREDENTIAL":
      headers["www-authenticate"] = `Bearer realm="shiori"`
      break
    case "INVALID_CREDENTIAL":
      headers["www-authenticate"] = `Bearer realm="shiori", error="invalid_token"`
      break
    case "SCOPE_REQUIRED":
      headers["www-authenticate"] = `Bearer realm="shiori", error="insufficient_scope"`
      break
    case "METHOD_NOT_ALLOWED":
      headers["allow"] = (p as MethodNotAllowedProblem).allow.join(", ")
      break
    case "QUOTA_EXCEEDED": {
      // The quota as an IETF RateLimit policy of a day's window, spent (draft-ietf-httpapi-ratelimit-headers).
      const { limit, quota, retry_after } = p as QuotaExceeded
      headers["ratelimit-policy"] = rateLimitPolicyField(quota, limit, 86400)
      headers["ratelimit"] = rateLimitField(quota, 0, retry_after)
      break
    }
    case "ENTITY_MERGED": {
      const merged = p as EntityMerged
      const path = entityCanonicalPath(merged.object, merged.current_id)
      if (path !== undefined) headers["link"] = `<${ctx.publicUrl}${path}>; rel="canonical"`
      break
    }
  }
  if ("retry_after" in p && typeof p.retry_after === "number") headers["retry-after"] = String(p.retry_after)
  return HttpServerResponse.jsonUnsafe(body, {
    status: p.status as number,
    contentType: "application/problem+json",
    headers
  })
}

/**
 * Every error, every field; values kept on the issues so lengths are told apart from item counts.
 * Unknown members are refused where the endpoint's parse options of that part say so (the claim
 * bodies), and ignored elsewhere, as the platform's decoding did.
 */
const parseOptionsOf = (
  endpoint: HttpApiEndpoint.Top,
  group: HttpApiGroup.Top
): Record<"params" | "query" | "headers" | "payload", SchemaAST.ParseOptions> => {
  const annotations = Context.merge(group.annotations, endpoint.annotations)
  const fallback = Context.getOrUndefined(annotations, HttpApi.ParseOptions)
  const of = (slot: Context.Key<any, SchemaAST.ParseOptions>): SchemaAST.ParseOptions => ({
    errors: "all",
    onExcessProperty: (Context.getOrUndefined(annotations, slot) ?? fallback)?.onExcessProperty === "error"
      ? "error"
      : "ignore",
    reportInput: true
  })
  return {
    params: of(HttpApi.ParamsParseOptions),
    query: of(HttpApi.QueryParseOptions),
    headers: of(HttpApi.HeadersParseOptions),
    payload: of(HttpApi.PayloadParseOptions)
  }
}

const searchParamsRecord = (request: HttpServerRequest.HttpServerRequest) => {
  const out: Record<string, string | Array<string>> = {}
  const query = request.url.indexOf("?")
  if (query < 0) return out
  for (const [key, value] of new URLSearchParams(request.url.slice(query + 1))) {
    const previous = out[key]
    out[key] = previous === undefined ? value : Array.isArray(previous) ? [...previous, value] : [previous, value]
  }
  return out
}

interface Redecoded {
  readonly params: Collected
  readonly body: Collected
  /** The body is not JSON at all. */
  readonly malformedJson: boolean
}

/**
 * Re-decodes a request whose decoding failed, every part and every field, to report all bad
 * fields with their location. The platform's own decode error stops at the first failing part.
 */
const redecode = (
  endpoint: HttpApiEndpoint.Top,
  group: HttpApiGroup.Top,
  request: HttpServerRequest.HttpServerRequest
) =>
  Effect.gen(function*() {
    const params: Collected = { errors: [], code: undefined }
    const body: Collected = { errors: [], code: undefined }
    const options = parseOptionsOf(endpoint, group)
    let malformedJson = false
    const check = (
      schema: Schema.Top | undefined,
      input: unknown,
      into: Collected,
      location: "pointer" | "parameter" | "header",
      parseOptions: SchemaAST.ParseOptions
    ) => {
      if (schema === undefined) return
      const exit = Schema.decodeUnknownExit(schema as Schema.Codec<unknown, unknown>, parseOptions)(input)
      if (exit._tag === "Success") return
      const error = Cause.findErrorOption(exit.cause)
      if (Option.isSome(error)) collectFieldErrors(error.value.issue as SchemaIssue.Issue, location, into)
    }
    const route = yield* HttpRouter.RouteContext
    check(endpoint.params, route.params, params, "parameter", options.params)
    if (endpoint.query !== undefined) {
      check(
        Schema.toCodecArrayFromSingle(endpoint.query),
        searchParamsRecord(request),
        params,
        "parameter",
        options.query
      )
    }
    check(endpoint.headers, request.headers, params, "header", options.headers)
    const payload = endpoint.payload.get("application/json")
    if (HttpMethod.hasBody(request.method) && payload !== undefined && payload.encoding._tag === "Json") {
      const text = yield* Effect.option(request.text)
      if (Option.isSome(text) && text.value !== "") {
        let json: unknown
        try {
          json = JSON.parse(text.value)
        } catch {
          malformedJson = true
        }
        if (!malformedJson) check(Schema.Union(payload.schemas), json, body, "pointer", options.payload)
      }
    }
    return { params, body, malformedJson } satisfies Redecoded
  })

/** What a request the endpoint's schemas refused gets: every bad field, with its location. */
const refusedRequest = (
  endpoint: HttpApiEndpoint.Top,
  group: HttpApiGroup.Top,
  request: HttpServerRequest.HttpServerRequest
) =>
  Effect.map(redecode(endpoint, group, request), ({ body, malformedJson, params }): Problem => {
    if (params.errors.length > 0) {
      const code: ProblemCode = params.code ?? "INVALID_PARAMETER"
      const cls = ProblemClasses[code] as unknown as ProblemConstructor
      return new cls({ detail: "One or more request parameters are invalid.", errors: params.errors })
    }
    if (malformedJson) return new InvalidParameter({ detail: "The request body is not valid JSON." })
    if (body.errors.length > 0) {
      return new ValidationFailed({ detail: "The request body failed validation.", errors: body.errors })
    }
    return new InvalidParameter({ detail: "The request could not be read." })
  })

const isRouteNotFound = (u: unknown): boolean =>
  HttpServerError.isHttpServerError(u) && u.reason._tag === "RouteNotFound"

/** A body that could not be read: cut off, malformed, nested too deep. */
const isRequestParseError = (u: unknown): u is HttpServerError.HttpServerError =>
  HttpServerError.isHttpServerError(u) && u.reason._tag === "RequestParseError"

const classify = (
  routes: RouteTable,
  maxBodyBytes: number,
  request: HttpServerRequest.HttpServerRequest,
  cause: Cause.Cause<unknown>
): Effect.Effect<Problem | undefined> =>
  Effect.gen(function*() {
    const failure = Cause.findErrorOption(cause)
    const squashed: unknown = Option.isSome(failure) ? failure.value : Cause.squash(cause)
    if (isProblem(squashed)) return squashed
    if (isRouteNotFound(squashed)) {
      const pathname = request.url.split("?")[0] ?? "/"
      if (pathname === "/v1" || pathname.startsWith("/v1/")) {
        return new Gone({ detail: "API v1 was retired; use /v2." })
      }
      const allow = routes.allowed(pathname)
      if (allow.length > 0) {
        return new MethodNotAllowed({ detail: `${request.method} is not allowed on this path.`, allow })
      }
      return new NotFound({ detail: "No resource at this path." })
    }
    if (isBodyTooLarge(squashed)) {
      return new PayloadTooLarge({
        detail: `The request body exceeds ${maxBodyBytes} bytes.`,
        max_bytes: maxBodyBytes
      })
    }
    if (isRequestParseError(squashed)) {
      return new InvalidParameter({
        detail: squashed.cause instanceof SyntaxError
          ? "The request body is not valid JSON."
          : "The request could not be read."
      })
    }
    if (isDatabaseUnavailable(squashed)) {
      // A client that hangs up interrupts its request, which cancels the statement (57014): not an
      // outage, and nobody reads the answer.
      const clientGone = Cause.hasInterrupts(cause) ||
        NodeHttpServerRequest.toIncomingMessage(request).socket?.destroyed === true
      yield* clientGone
        ? Effect.logDebug("statement cancelled: the client went away", cause)
        : Effect.logError("database unavailable", cause)
      return new ServiceUnavailable({ detail: "The database is unreachable.", retry_after: 5 })
    }
    if (Cause.hasInterruptsOnly(cause)) return undefined
    if (Option.isSome(failure)) return undefined
    yield* Effect.logError("unhandled defect", cause)
    return new InternalError({ detail: "" })
  })

const problemContext = ServerConfig.useSync((config): ProblemContext => ({
  docsUrl: config.docsUrl,
  publicUrl: config.catalogPublicUrl
}))

const respondWith = (ctx: ProblemContext, request: HttpServerRequest.HttpServerRequest, p: Problem) =>
  currentRequestId.useSync((id) => problemResponse(stampProblem(p, ctx, instanceOf(request), id), ctx))

/**
 * The platform answers a body of a media type the endpoint does not declare with a plain-text 415
 * of its own; the catalog takes JSON only and says so in its own style.
 */
const isPlatformUnsupportedMediaType = (response: HttpServerResponse.HttpServerResponse) =>
  response.status === 415 && response.headers["content-type"]?.startsWith("text/plain") === true

/**
 * The 400 for a body not sent as `application/json` (docs/api-contract.md, "Errors: catalog problem
 * documents"; the registry has no 415): one field error on the `Content-Type` header.
 */
export const notJsonBody = (contentType: string | undefined): InvalidParameter => {
  const kind = jsonBodyType(contentType)
  const error: FieldError = kind._tag === "Missing"
    ? { reason: "REQUIRED", detail: "`Content-Type` is required with a body.", header: "Content-Type" }
    : kind._tag === "Malformed"
    ? { reason: "INVALID_FORMAT", detail: "`Content-Type` is not a media type.", header: "Content-Type" }
    : {
      reason: "UNKNOWN_VALUE",
      detail: "`Content-Type` must be application/json, with no parameter but `charset=utf-8`.",
      header: "Content-Type",
      params: { allowed: [JSON_MEDIA_TYPE] }
    }
  return new InvalidParameter({ detail: "The request body must be sent as application/json.", errors: [error] })
}

/** The reader's failure for a body of a refused media type (see `refuseBodyOfType`). */
class RefusedBodyType {
  readonly _tag = "RefusedBodyType"
}

const isRefusedBodyType = (u: unknown): boolean =>
  HttpServerError.isHttpServerError(u) && u.reason._tag === "RequestParseError" &&
  u.reason.cause instanceof RefusedBodyType

/** Whether the request carries a body (a length above zero, or a chunked one). */
const carriesBody = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const length = request.headers["content-length"]
  return length !== undefined ? Number(length) > 0 : request.headers["transfer-encoding"] !== undefined
}

/**
 * For an endpoint that takes a JSON body, a request whose body is not sent as `application/json`
 * (with at most `charset=utf-8`; MediaType.ts) becomes one whose body cannot be read. The
 * platform reads a body without `Content-Type`, or of `application/json` with any parameter, as
 * JSON; refusing it here, before the router, would answer 400 to a request without a credential,
 * which must be 401, so the refusal happens when the platform reads the body, after the credential
 * middleware. Another media type never gets that far: the platform answers it 415 without reading.
 */
const refuseBodyOfType = (
  endpoint: HttpApiEndpoint.Top,
  request: HttpServerRequest.HttpServerRequest
): HttpServerRequest.HttpServerRequest | undefined => {
  const payload = endpoint.payload.get(JSON_MEDIA_TYPE)
  if (payload === undefined || payload.encoding._tag !== "Json") return undefined
  if (!HttpMethod.hasBody(request.method) || !carriesBody(request)) return undefined
  if (jsonBodyType(request.headers["content-type"])._tag === "Json") return undefined
  const failure = new HttpServerError.HttpServerError({
    reason: new HttpServerError.RequestParseError({ request, reason: "Parse", cause: new RefusedBodyType() })
  })
  const unreadable = { value: Effect.fail(failure) }
  // A view of the same request (headers, URL, socket), whose body accessors fail.
  return Object.create(request, {
    text: unreadable,
    json: unreadable,
    arrayBuffer: unreadable,
    urlParamsBody: unreadable,
    multipart: unreadable,
    stream: { value: Stream.fail(failure) },
    multipartStream: { value: Stream.fail(failure) }
  }) as HttpServerRequest.HttpServerRequest
}

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
        const notJson = () => respondWith(ctx, request, notJsonBody(request.headers["content-type"]))
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

/**
 * The catalog's global router middleware (see the module comment): bounds the body, and answers
 * whatever no endpoint answered (or answered with a defect) with its problem document.
 */
export const problemMiddleware = (routes: RouteTable) =>
  HttpRouter.middleware(
    Effect.gen(function*() {
      const ctx = yield* problemContext
      const limit = (yield* ServerConfig).maxBodyBytes
      const bounded = limitBody({
        maxBytes: limit,
        tooLarge: (request) =>
          respondWith(
            ctx,
            request,
            new PayloadTooLarge({ detail: `The request body exceeds ${limit} bytes.`, max_bytes: limit })
          ),
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

/** The problem document for a request that arrives while the server is still starting. */
export const startingProblem = (ctx: ProblemContext) => (url: string, requestId: string) => {
  const p = stampProblem(
    new ServiceUnavailable({ detail: "The server is starting.", retry_after: 1 }),
    ctx,
    url,
    requestId
  )
  return {
    contentType: "application/problem+json",
    body: JSON.stringify(encodeProblem(p))
  }
}
