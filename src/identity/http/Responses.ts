/**
 * Answer helpers of the identity server: the values the JSON handlers answer and fail with, the
 * headers that go with each answer, and HTML pages with their security headers. The caller's address
 * is `clientAddress` (src/platform/ClientAddress.ts).
 *
 * A JSON handler returns the value of its endpoint's declared success and fails with the value of a
 * declared error (the envelope's `EnvelopeFailure`, one declaration per status, or the bare
 * `OAuthError`; schema/Api/IdentityErrors.ts), and HttpApi encodes it. The headers that belong to an
 * answer rather than to its schema (`Cache-Control`, RFC 6749 section 5.1's `Pragma`, `Retry-After`,
 * RFC 6750 section 3's `WWW-Authenticate`, the session cookie) go on by one mechanism, `onAnswer`: a
 * pre-response handler the handler registers as it settles on the answer (`HttpEffect`, as the
 * platform itself sets a security cookie), so they reach the encoded response whichever status it
 * has, and keep the declared types free of transport details.
 */
import { Effect, Schema } from "effect"
import { HttpEffect, HttpServerRespondable, HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http"
import type { EnvelopeCodeName } from "../../../schema/Identity/Envelope.js"
import { EnvelopeCodes, EnvelopeFailure, envelopeFailure, envelopeOk } from "../../../schema/Identity/Envelope.js"
import type { OAuthFailure } from "../oauth/OAuthFailure.js"
import { NO_STORE, oauthFailureResponse } from "../oauth/OAuthFailure.js"
import type { Refused } from "../shared/Refused.js"

/** Routes are declared under `/api/v1`; pages link to their assets there. */
export const BASE_PATH = "/api/v1"

/** Changes the response this request is answered with, once HttpApi has encoded it. */
export const onAnswer = (
  change: (response: HttpServerResponse.HttpServerResponse) => HttpServerResponse.HttpServerResponse
): Effect.Effect<void, never, HttpServerRequest.HttpServerRequest> =>
  HttpEffect.appendPreResponseHandler((_request, response) => Effect.succeed(change(response)))

/** The headers of this request's answer. */
export const answerHeaders = (headers: Readonly<Record<string, string>>) =>
  onAnswer((response) => HttpServerResponse.setHeaders(response, headers))

/** Envelope answers are never stored (they are the user's own, or answer a request that changed something). */
const ENVELOPE_HEADERS = { "cache-control": "no-store" } as const

/**
 * The success envelope `{code: 0, message: "ok", data}` of an endpoint that declares `Envelope(data)`,
 * with `Cache-Control: no-store` unless `headers` say otherwise.
 */
export const envelopeAnswer = <A>(data: A, headers: Readonly<Record<string, string>> = {}) =>
  Effect.as(answerHeaders({ ...ENVELOPE_HEADERS, ...headers }), envelopeOk(data))

/** A handler's answer `value` (the endpoint's declared success), with `headers`. */
export const answer = <A>(value: A, headers: Readonly<Record<string, string>>) =>
  Effect.as(answerHeaders(headers), value)

/**
 * A declared error's value that also knows its own response (`HttpServerRespondable`, on its
 * prototype, so the schema never sees it): HttpApi sends that response when the endpoint declares no
 * schema that takes the value. An account banned (40302) can meet any signed-in endpoint, which
 * documents its token errors only; it gets the same bytes as a declared failure, never a 500.
 */
const respondable = <A extends object>(value: A, respond: () => HttpServerResponse.HttpServerResponse): A =>
  Object.assign(Object.create({ [HttpServerRespondable.symbol]: () => Effect.sync(respond) }), value)

/**
 * Fails with the envelope failure of a registry entry, which the endpoint declares under the entry's
 * status (schema/Api/IdentityErrors.ts), with `Cache-Control: no-store` and `headers` (`Retry-After`,
 * `WWW-Authenticate`).
 */
export const envelopeRefusal = (name: EnvelopeCodeName, headers: Readonly<Record<string, string>> = {}) => {
  const { code, message } = EnvelopeCodes[name]
  return Effect.andThen(
    answerHeaders({ ...ENVELOPE_HEADERS, ...headers }),
    Effect.fail(respondable({ code, message, data: null }, () => envelopeError(name, headers)))
  )
}

/** The envelope failure of a service's refusal. */
export const refusal = (refused: Refused) => envelopeRefusal(refused.code, refused.headers)

/**
 * Fails with the bare OAuth error of a protocol failure, which the endpoint declares under its status
 * (RFC 6749 section 5.2, RFC 6750 section 3.1; schema/Api/IdentityErrors.ts), never cached (RFC 6749
 * section 5.1) and with the failure's own headers.
 */
export const oauthRefusal = (failure: OAuthFailure) =>
  Effect.andThen(
    answerHeaders({ ...NO_STORE, ...failure.headers }),
    Effect.fail(
      respondable(
        { error: failure.error, error_description: failure.description },
        () => oauthFailureResponse(failure)
      )
    )
  )

const encodeFailure = Schema.encodeSync(Schema.toCodecJson(EnvelopeFailure))

/**
 * The failed envelope of a registry entry, encoded by `EnvelopeFailure`, for the answers no endpoint
 * encodes: the error middleware's (ErrorMiddleware.ts) and the listener's while starting.
 */
export const envelopeFailureBody = (name: EnvelopeCodeName) => {
  const { body, status } = envelopeFailure(name)
  return { status, body: encodeFailure(body) }
}

/** The response of a failed envelope, for the answers no endpoint encodes (see `envelopeFailureBody`). */
export const envelopeError = (
  name: EnvelopeCodeName,
  headers: Readonly<Record<string, string>> = {}
): HttpServerResponse.HttpServerResponse => {
  const { body, status } = envelopeFailureBody(name)
  return HttpServerResponse.jsonUnsafe(body, { status, headers: { ...ENVELOPE_HEADERS, ...headers } })
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
