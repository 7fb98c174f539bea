/**
 * How identity failures are declared on the endpoints: bare RFC 6749 errors on protocol endpoints, the
 * envelope elsewhere (docs/api-contract.md, "Errors: identity (OAuth errors and the envelope)"), and HTML
 * for the pages. The JSON handlers fail with the value of one of these and HttpApi encodes it; the
 * headers that go with it (`Cache-Control`, `WWW-Authenticate`, `Retry-After`) are the handler's
 * (src/identity/http/Responses.ts).
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { EnvelopeCodes, EnvelopeFailure } from "../Identity/Envelope.js"
import type { EnvelopeErrorCode } from "../Identity/Envelope.js"
import { OAuthError, oauthErrorStatus } from "../Identity/OAuthError.js"
import type { OAuthErrorCode } from "../Identity/OAuthError.js"
import { operations } from "./OpenApiConventions.js"

/** The identifiers of the per-status schemas below. */
const perStatusIdentifiers = new Set<string>()

/**
 * One schema per status (`OAuthError401`, `EnvelopeError400`, ...), under which each endpoint describes
 * its own response: the OpenAPI document has one component per status, and every response its own
 * description (the description of the outer, identity step; the document shows the encoded side, the
 * shared schema). The component takes the description of its first response in the document
 * (`describePerStatusComponents`); the one given here is that of the first declaration to load.
 */
const perStatus = <const Fields extends Schema.Struct.Fields>(
  name: string,
  fields: Fields,
  answeredWith: (value: Schema.Struct.Type<Fields>) => ReadonlyArray<number>
) => {
  const shared = new Map<number, Schema.Struct<Fields>>()
  return (status: number, description: string) => {
    let schema = shared.get(status)
    if (schema === undefined) {
      const identifier = `${name}${status}`
      perStatusIdentifiers.add(identifier)
      schema = Schema.Struct(fields).annotate({ identifier, description })
      shared.set(status, schema)
    }
    // An endpoint declares one of these per status and HttpApi encodes a failure with the first that
    // takes it: each takes only the values answered with its status.
    const answered = Schema.toType(schema).check(
      Schema.makeFilter((value) => answeredWith(value).includes(status) || `not answered with ${status}`)
    )
    return schema.pipe(Schema.decodeTo(answered), HttpApiSchema.status(status)).annotate({ description })
  }
}

/**
 * Describes each per-status component by its first response in document order, as the document
 * always has (modules load in another order than the document lists the operations).
 */
export const describePerStatusComponents = (spec: Record<string, any>): Record<string, any> => {
  const schemas = spec.components?.schemas ?? {}
  const described = new Set<string>()
  for (const op of operations(spec)) {
    for (const response of Object.values<any>(op.responses)) {
      for (const media of Object.values<any>(response.content ?? {})) {
        const ref: unknown = media?.schema?.$ref
        const name = typeof ref === "string" ? ref.slice(ref.lastIndexOf("/") + 1) : undefined
        if (name === undefined || !perStatusIdentifiers.has(name) || described.has(name)) continue
        described.add(name)
        if (schemas[name] !== undefined && typeof response.description === "string") {
          schemas[name].description = response.description
        }
      }
    }
  }
  return spec
}

/**
 * The statuses an OAuth error is answered with: RFC 6749 section 5.2 / RFC 6750 section 3.1
 * (`oauthErrorStatus`), and 429 for `temporarily_unavailable` when it refuses a client or an
 * address that sent too many requests (with `Retry-After`).
 */
export const oauthErrorStatuses = (error: OAuthErrorCode): ReadonlyArray<number> =>
  error === "temporarily_unavailable" ? [429, oauthErrorStatus(error)] : [oauthErrorStatus(error)]

export const oauthError = perStatus("OAuthError", OAuthError.fields, (value) => oauthErrorStatuses(value.error))

const envelopeStatus = new Map<number, number>(Object.values(EnvelopeCodes).map((entry) => [entry.code, entry.status]))

/** The status of an envelope code, from its registry entry (schema/Identity/Envelope.ts). */
export const envelopeCodeStatus = (code: typeof EnvelopeErrorCode.Type): number => envelopeStatus.get(code)!

export const envelopeError = perStatus("EnvelopeError", EnvelopeFailure.fields, (value) => [
  envelopeCodeStatus(value.code)
])

const UNSUPPORTED_MEDIA_TYPE = "41501: the body is not sent as `application/json`."

/** The 415 of an endpoint that takes a JSON body (README, "Request bodies"). */
export const unsupportedMediaType = envelopeError(415, UNSUPPORTED_MEDIA_TYPE)

/**
 * Every endpoint that takes a body as JSON only answers 415 41501 to any other media type, one
 * check for all of them (src/identity/http/ErrorMiddleware.ts): documented on each such operation
 * that does not declare it itself, under the component of those that do (`unsupportedMediaType`).
 */
export const declareUnsupportedMediaType = (spec: Record<string, any>): Record<string, any> => {
  const ref = "#/components/schemas/EnvelopeError415"
  if (spec.components?.schemas?.EnvelopeError415 === undefined) return spec
  for (const op of operations(spec)) {
    const types = Object.keys(op.requestBody?.content ?? {})
    if (types.length !== 1 || types[0] !== "application/json" || op.responses["415"] !== undefined) continue
    op.responses["415"] = {
      description: UNSUPPORTED_MEDIA_TYPE,
      content: { "application/json": { schema: { $ref: ref } } }
    }
  }
  return spec
}

export const HtmlPage = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" })).annotate({
  description: "Server-rendered HTML page."
})

export const htmlError = (status: number, description: string) =>
  Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" }), HttpApiSchema.status(status)).annotate({
    description
  })

export const Redirect = (status: 302 | 303, description: string) =>
  HttpApiSchema.Empty(status).annotate({ description })
