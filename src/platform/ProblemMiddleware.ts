/**
 * Every 4xx/5xx of the catalog API is an `application/problem+json` document (RFC 9457;
 * docs/api-contract.md, "Errors: catalog problem documents").
 *
 * Declared failures are problem classes; this middleware stamps the request-specific members
 * (`type`, `instance`, `request_id`) on them and adds the headers their code calls for. What the
 * router and decoder produce on their own (decode errors, unknown routes, wrong methods, malformed
 * or oversized bodies, defects, an unreachable database) is turned into the matching problem here;
 * bodies are bounded (size, JSON depth, no multipart) by src/platform/BodyLimit.ts, shared with the
 * identity server.
 * It runs inside `HttpApiBuilder.serve`, before the platform's error encoder.
 */
import { HttpApiBuilder } from "effect/http-api"
import { HttpMethod, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { HttpEffect } from "effect/http"
import { NodeHttpServerRequest } from "@effect/platform-node"
import { Cause, Effect, FiberRef, Option, ParseResult, Schema } from "effect"
import { entityCanonicalPath } from "../../schema/Api/Paths.js"
import type { ProblemCode, QuotaExceeded } from "../../schema/Problem.js"
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
  problemTypeUri,
  ServiceUnavailable,
  ValidationFailed
} from "../../schema/Problem.js"
import type { Problem } from "../../schema/Problem.js"
import { isBodyTooLarge, limitBody } from "./BodyLimit.js"
import { ServerConfig } from "./Config.js"
import { type Collected, collectFieldErrors } from "./FieldErrors.js"
import { currentRequestId } from "./RequestId.js"
import type { RouteTable } from "./RouteTable.js"

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

/** Fills the request-specific members of a problem. */
export const stampProblem = (p: Problem, ctx: ProblemContext, instance: string, requestId: string): Problem => {
  const cls = p.constructor as any
  const props: Record<string, unknown> = {}
  for (const key of Object.keys(cls.fields)) if (key !== "_tag") props[key] = (p as any)[key]
  props.type = problemTypeUri(ctx.docsUrl, p.code)
  props.instance = instance
  props.request_id = requestId
  return new cls(props)
}

/** The finished response for a problem, with the headers its code calls for. */
export const problemResponse = (p: Problem, ctx: ProblemContext): HttpServerResponse.HttpServerResponse => {
  const schema = problem(p.constructor as any)
  const body = Schema.encodeSync(schema as Schema.Schema<any, any>)(p)
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
      headers["allow"] = (p as MethodNotAllowed).allow.join(", ")
      break
    case "QUOTA_EXCEEDED": {
      // The quota as an IETF RateLimit policy of a day's window, spent (draft-ietf-httpapi-ratelimit-headers).
      const { limit, quota, retry_after } = p as QuotaExceeded
      headers["ratelimit-policy"] = `"${quota}";q=${limit};w=86400`
      headers["ratelimit"] = `"${quota}";r=0;t=${retry_after}`
      break
    }
    case "ENTITY_MERGED": {
      const merged = p as any
      const path = entityCanonicalPath(merged.object, merged.current_id)
      if (path !== undefined) headers["link"] = `<${ctx.publicUrl}${path}>; rel="canonical"`
      break
    }
  }
  if ("retry_after" in p && typeof p.retry_after === "number") headers["retry-after"] = String(p.retry_after)
  return HttpServerResponse.unsafeJson(body, {
    status: p.status,
    contentType: "application/problem+json",
    headers
  })
}

const parseOptions = { errors: "all", onExcessProperty: "ignore" } as const

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

/** Wraps single values in an array where the schema declares an array (as the platform does). */
const normalizeParams = (params: Record<string, string | Array<string>>, schema: Schema.Schema.Any) => {
  const out: Record<string, string | Array<string>> = {}
  const encoded = Schema.encodedSchema(schema).ast
  for (const [key, value] of Object.entries(params)) {
    const expectsArray = encoded._tag === "TypeLiteral" &&
      encoded.propertySignatures.some((ps) => ps.name === key && isArrayAst(ps.type))
    out[key] = expectsArray && !Array.isArray(value) ? [value] : value
  }
  return out
}

const isArrayAst = (ast: import("effect").SchemaAST.AST): boolean =>
  ast._tag === "TupleType" || (ast._tag === "Union" && ast.types.some(isArrayAst))

/**
 * Re-decodes a request whose decoding failed, every part and every field, to report all bad
 * fields with their location. The platform's own decode error stops at the first failing part
 * and does not say which part it was.
 */
const redecode = (routes: RouteTable, request: HttpServerRequest.HttpServerRequest) =>
  Effect.gen(function*() {
    const pathname = request.url.split("?")[0] ?? "/"
    const match = routes.match(request.method, pathname)
    const params: Collected = { errors: [], code: undefined }
    const body: Collected = { errors: [], code: undefined }
    if (match === undefined) return { params, body }
    const endpoint = match.route.endpoint
    const check = (
      schema: Option.Option<Schema.Schema.Any>,
      input: unknown,
      into: Collected,
      location: "pointer" | "parameter" | "header"
    ) =>
      Option.match(schema, {
        onNone: () => Effect.void,
        onSome: (s) =>
          Schema.decodeUnknown(s as Schema.Schema<unknown, unknown, never>, parseOptions)(input).pipe(
            Effect.catchIf(ParseResult.isParseError, (error) =>
              Effect.sync(() => collectFieldErrors(error.issue, location, into))),
            Effect.asVoid
          )
      })
    yield* check(endpoint.pathSchema, match.params, params, "parameter")
    yield* check(
      endpoint.urlParamsSchema,
      normalizeParams(
        searchParamsRecord(request),
        endpoint.urlParamsSchema.pipe(Option.getOrElse(() =>
          Schema.Struct({})
        ))
      ),
      params,
      "parameter"
    )
    yield* check(endpoint.headersSchema, request.headers, params, "header")
    if (HttpMethod.hasBody(request.method) && Option.isSome(endpoint.payloadSchema)) {
      const contentType = request.headers["content-type"] ?? "application/json"
      if (contentType.includes("json")) {
        const json = yield* Effect.option(request.json)
        if (Option.isSome(json)) {
          yield* check(endpoint.payloadSchema, json.value, body, "pointer")
        }
      }
    }
    return { params, body }
  })

const isRequestError = (u: unknown): u is { _tag: "RequestError"; reason: string; cause?: unknown } =>
  typeof u === "object" && u !== null && (u as any)._tag === "RequestError"

/**
 * Transient database failures: unreachable, shutting down, or a statement cancelled under load
 * (57014). The request was not wrong; the client should retry later.
 */
export const isDatabaseUnavailable = (u: unknown): boolean => {
  if (typeof u !== "object" || u === null || (u as any)._tag !== "SqlError") return false
  let cause: any = (u as any).cause
  for (let depth = 0; cause && depth < 4; depth++) {
    const code = String(cause.code ?? "")
    const message = String(cause.message ?? "")
    if (
      ["ECONNREFUSED", "ECONNRESET", "ENOTFOUND", "ETIMEDOUT", "EPIPE", "57014", "57P01", "57P02", "57P03"].includes(
        code
      ) ||
      code.startsWith("08") ||
      /timeout exceeded when trying to connect|Connection terminated|connect ECONNREFUSED|pool is ended|Client has encountered a connection error/i
        .test(message)
    ) return true
    cause = cause.cause
  }
  return false
}

const classify = (
  routes: RouteTable,
  maxBodyBytes: number,
  request: HttpServerRequest.HttpServerRequest,
  cause: Cause.Cause<unknown>
): Effect.Effect<Problem | undefined> =>
  Effect.gen(function*() {
    const failure = Cause.failureOption(cause)
    const squashed = Option.isSome(failure) ? failure.value : Cause.squash(cause)
    if (isProblem(squashed)) return squashed
    const tag = (squashed as any)?._tag
    if (tag === "HttpApiDecodeError") {
      const { body, params } = yield* redecode(routes, request)
      if (params.errors.length > 0) {
        const code: ProblemCode = params.code ?? "INVALID_PARAMETER"
        const cls = ProblemClasses[code] as any
        return new cls({ detail: "One or more request parameters are invalid.", errors: params.errors })
      }
      if (body.errors.length > 0) {
        return new ValidationFailed({ detail: "The request body failed validation.", errors: body.errors })
      }
      return new InvalidParameter({ detail: String((squashed as any).message ?? "").slice(0, 2048) })
    }
    if (tag === "RouteNotFound") {
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
    if (isRequestError(squashed)) {
      if (isBodyTooLarge(squashed)) {
        return new PayloadTooLarge({
          detail: `The request body exceeds ${maxBodyBytes} bytes.`,
          max_bytes: maxBodyBytes
        })
      }
      if ((squashed as any).cause instanceof SyntaxError) {
        return new InvalidParameter({ detail: "The request body is not valid JSON." })
      }
      return new InvalidParameter({ detail: "The request could not be read." })
    }
    if (isDatabaseUnavailable(squashed)) {
      // A client that hangs up interrupts its request, which cancels the statement (57014): not an
      // outage, and nobody reads the answer.
      const clientGone = Cause.isInterrupted(cause) ||
        NodeHttpServerRequest.toIncomingMessage(request).socket?.destroyed === true
      yield* clientGone
        ? Effect.logDebug("statement cancelled: the client went away", cause)
        : Effect.logError("database unavailable", cause)
      return new ServiceUnavailable({ detail: "The database is unreachable.", retry_after: 5 })
    }
    if (Cause.isInterruptedOnly(cause)) return undefined
    if (Option.isSome(failure)) return undefined
    yield* Effect.logError("unhandled defect", cause)
    return new InternalError({ detail: "" })
  }).pipe(Effect.map((p) => p === undefined ? undefined : p))

/** The catalog's global problem middleware. */
export const problemMiddleware = (routes: RouteTable) =>
  HttpApiBuilder.middleware(
    Effect.gen(function*() {
      const config = yield* ServerConfig
      const ctx: ProblemContext = { docsUrl: config.docsUrl, publicUrl: config.catalogPublicUrl }
      const limit = config.maxBodyBytes
      const respond = (request: HttpServerRequest.HttpServerRequest, p: Problem) =>
        Effect.map(
          FiberRef.get(currentRequestId),
          (id) => problemResponse(stampProblem(p, ctx, instanceOf(request), id), ctx)
        )
      const bounded = limitBody({
        maxBytes: limit,
        tooLarge: (request) =>
          respond(
            request,
            new PayloadTooLarge({ detail: `The request body exceeds ${limit} bytes.`, max_bytes: limit })
          ),
        multipart: (request) =>
          respond(
            request,
            new InvalidParameter({ detail: "Multipart bodies are not accepted; send application/json." })
          )
      })
      return (app: HttpApp.Default) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          return yield* bounded(app).pipe(
            Effect.catchCause((cause) =>
              Effect.flatMap(
                classify(routes, limit, request, cause),
                (p) => p === undefined ? Effect.failCause(cause) : respond(request, p)
              )
            )
          )
        })
    })
  )

/**
 * Documents every error response as what the middleware sends: a problem document. The platform
 * documents a status with several problem members as a plain union with the default JSON media
 * type, and adds its own decode error to every 400; both are corrected here.
 */
export const problemOpenApiTransform = (spec: Record<string, any>): Record<string, any> => {
  const decodeErrorRef = "#/components/schemas/HttpApiDecodeError"
  const invalidParameterRef = "#/components/schemas/InvalidParameterProblem"
  const membersOf = (schema: any): Array<any> => schema === undefined ? [] : schema.anyOf ?? [schema]
  for (const item of Object.values<any>(spec.paths ?? {})) {
    for (const op of Object.values<any>(item)) {
      if (typeof op !== "object" || op === null || op.responses === undefined) continue
      for (const [status, response] of Object.entries<any>(op.responses)) {
        if (Number(status) < 400 || response.content === undefined) continue
        const members = [
          ...membersOf(response.content["application/problem+json"]?.schema),
          ...membersOf(response.content["application/json"]?.schema)
        ].filter((s) => s.$ref !== decodeErrorRef)
        if (status === "400" && !members.some((s) => s.$ref === invalidParameterRef)) {
          members.push({ $ref: invalidParameterRef })
        }
        const unique = members.filter((s, i) => members.findIndex((t) => JSON.stringify(t) === JSON.stringify(s)) === i)
        response.content = {
          "application/problem+json": { schema: unique.length === 1 ? unique[0] : { anyOf: unique } }
        }
      }
      // VALIDATION_FAILED is declared API-wide; it can only happen where there is a body.
      if (op.requestBody === undefined && op.responses["422"] !== undefined) delete op.responses["422"]
    }
  }
  const schemas = spec.components?.schemas ?? {}
  delete schemas["HttpApiDecodeError"]
  delete schemas["Issue"]
  return spec
}

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
    body: JSON.stringify(Schema.encodeSync(problem(ServiceUnavailable) as Schema.Schema<any, any>)(p))
  }
}
