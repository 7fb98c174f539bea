/**
 * Response helpers of the identity server: the envelope and HTML pages with their security headers.
 * The caller's address is `clientAddress` (ClientAddress.ts).
 */
import { Effect } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpServerResponse } from "effect/http"
import type { EnvelopeCodeName } from "../../../schema/Identity/Envelope.js"
import { envelopeFailure, envelopeOk } from "../../../schema/Identity/Envelope.js"
import type { Refused } from "../Refused.js"

/** Routes are declared under `/api/v1`; pages link to their assets there. */
export const BASE_PATH = "/api/v1"

export const envelopeError = (
  name: EnvelopeCodeName,
  headers: Readonly<Record<string, string>> = {}
): HttpServerResponse.HttpServerResponse => {
  const { body, status } = envelopeFailure(name)
  return HttpServerResponse.jsonUnsafe(body, { status, headers: { "cache-control": "no-store", ...headers } })
}

/** The envelope answer to a service's refusal. */
export const refusal = (refused: Refused) => Effect.succeed(envelopeError(refused.code, refused.headers))

export const envelopeSuccess = <A>(data: A, headers: Readonly<Record<string, string>> = {}) =>
  HttpServerResponse.jsonUnsafe(envelopeOk(data), { headers: { "cache-control": "no-store", ...headers } })

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
