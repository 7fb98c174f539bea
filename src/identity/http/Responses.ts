/**
 * Response helpers of the identity server: the envelope and HTML pages with their security headers.
 * The caller's address is `clientAddress` (src/platform/ClientAddress.ts).
 */
import { Effect, Schema } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpServerResponse } from "effect/http"
import type { Envelope, EnvelopeCodeName } from "../../../schema/Identity/Envelope.js"
import { EnvelopeFailure, envelopeFailure, envelopeOk } from "../../../schema/Identity/Envelope.js"
import type { Refused } from "../shared/Refused.js"

/** Routes are declared under `/api/v1`; pages link to their assets there. */
export const BASE_PATH = "/api/v1"

/**
 * A JSON answer whose body is `schema`'s encoding of the value, as the HttpApi encodes a declared
 * success (`Schema.toCodecJson`): the members are the schema's, in its order. Built once per schema, at
 * module level. Handlers answer with it rather than return the value: every identity answer carries
 * headers of its own (`Cache-Control`, `Retry-After`, a cookie), and these keep their place on the wire.
 */
export const jsonAnswer = <S extends Schema.Codec<unknown, unknown, unknown, never>>(schema: S) => {
  const encode = Schema.encodeSync(Schema.toCodecJson(schema))
  return (
    value: S["Type"],
    options?: HttpServerResponse.Options.WithContentType
  ): HttpServerResponse.HttpServerResponse => HttpServerResponse.jsonUnsafe(encode(value), options)
}

const encodeFailure = Schema.encodeSync(Schema.toCodecJson(EnvelopeFailure))

/** The failed envelope of a registry entry, encoded by `EnvelopeFailure` (what the endpoints declare). */
export const envelopeFailureBody = (name: EnvelopeCodeName) => {
  const { body, status } = envelopeFailure(name)
  return { status, body: encodeFailure(body) }
}

export const envelopeError = (
  name: EnvelopeCodeName,
  headers: Readonly<Record<string, string>> = {}
): HttpServerResponse.HttpServerResponse => {
  const { body, status } = envelopeFailureBody(name)
  return HttpServerResponse.jsonUnsafe(body, { status, headers: { "cache-control": "no-store", ...headers } })
}

/** The envelope answer to a service's refusal. */
export const refusal = (refused: Refused) => Effect.succeed(envelopeError(refused.code, refused.headers))

/**
 * The success envelope `{code: 0, message: "ok", data}` of an endpoint that declares `Envelope(data)`,
 * encoded by that declaration, with `Cache-Control: no-store` unless `headers` say otherwise.
 */
export const envelopeSuccess = <D extends Schema.Codec<unknown, unknown, unknown, never>>(schema: Envelope<D>) => {
  const answer = jsonAnswer(schema)
  return (data: D["Type"], headers: Readonly<Record<string, string>> = {}) =>
    answer(envelopeOk(data), { headers: { "cache-control": "no-store", ...headers } })
}

/**
 * The pages' policy: nothing but our stylesheet and images (client logos), no framing anywhere
 * (clickjacking), no `<base>` injection. No `form-action`: Chromium applies it to the redirect
 * after a form post, and the consent form's redirect goes to the client.
 */
export const PAGE_CSP = "default-src 'none'; style-src 'self'; img-src https: http: data:; frame-ancestors 'none'; " +
  "base-uri 'none'"

export const page = (
  body: string,
  options: { readonly status?: number; readonly headers?: Readonly<Record<string, string>> } = {}
): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.text(body, {
    status: options.status ?? 200,
    contentType: "text/html; charset=utf-8",
    headers: {
      "content-security-policy": PAGE_CSP,
      "x-frame-options": "DENY",
      "cache-control": "no-store",
      "referrer-policy": "no-referrer",
      ...options.headers
    }
  })

/** 302 for protocol redirects, 303 after a form post (RFC 9110 section 15.4.4). */
export const redirectTo = (location: string, status: 302 | 303 = 302, headers: Readonly<Record<string, string>> = {}) =>
  HttpServerResponse.empty({ status, headers: { location, "cache-control": "no-store", ...headers } })

/** True when the caller prefers JSON to HTML (an API client rather than a browser). */
export const prefersJson = (request: HttpServerRequest.HttpServerRequest): boolean => {
  const accept = request.headers.accept ?? ""
  return accept.includes("application/json") && !accept.includes("text/html")
}
