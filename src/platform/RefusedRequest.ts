/**
 * A request the endpoint's declared schemas refused, turned into its problem with every bad field
 * (docs/api-contract.md, "Errors: catalog problem documents"; parameter errors win over body
 * errors). The platform's own decode error stops at the first failing part and the first failing
 * field, so the request is decoded again here, every part and every field, under the same parse
 * options the endpoint declares, and the issues become field errors (FieldErrors.ts) with their
 * location: a JSON pointer into the body, a parameter, or a header.
 */
import { Cause, Context, Effect, Option, Schema, SchemaAST } from "effect"
import type { SchemaIssue } from "effect"
import { HttpMethod, HttpRouter } from "effect/http"
import type { HttpServerRequest } from "effect/http"
import { HttpApi } from "effect/http-api"
import type { HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { InvalidParameter, ProblemClasses, ValidationFailed } from "../../schema/Problem.js"
import type { Problem, ProblemCode } from "../../schema/Problem.js"
import { type Collected, collectFieldErrors } from "./FieldErrors.js"
import type { ProblemConstructor } from "./ProblemDocument.js"

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

/** Decodes every part of a request whose decoding failed again, collecting every bad field. */
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
export const refusedRequest = (
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
