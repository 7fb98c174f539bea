/**
 * The identity server's errors are not problem documents
 * (docs/api-contract.md, "Errors: identity (OAuth errors and the envelope)"). This middleware covers
 * what the router and decoder produce on their own, in the shape of the part of the server that
 * failed: protocol paths (`/oauth/*`, discovery) answer RFC 6749 `{error, error_description}` with
 * `Cache-Control: no-store`; the authorization endpoint and the pages answer an HTML error page
 * (they are browser navigations and must never redirect on a malformed request); everything else
 * answers the envelope (README.md, "Envelope codes"). Declared failures pass through to their own
 * schemas. Request bodies are bounded here too (src/platform/BodyLimit.ts, `IDENTITY_MAX_BODY_BYTES`):
 * a larger one is answered 413 in the same three shapes, before it is read. And an endpoint that takes
 * a JSON body takes it only as `application/json` (BodyTypes.ts), judged here once for every such
 * endpoint before anything reads the body: otherwise 415 envelope 41501, or on a protocol endpoint
 * (which takes a form too) `invalid_request`, 400 as RFC 6749 section 5.2 answers a malformed request.
 */
import { Cause, Effect, Option } from "effect"
import type { Types } from "effect"
import { HttpMethod, HttpRouter, HttpServerError, HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiError } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import type { EnvelopeCodeName } from "../../../schema/Identity/Envelope.js"
import { EnvelopeCodes } from "../../../schema/Identity/Envelope.js"
import type { OAuthErrorCode } from "../../../schema/Identity/OAuthError.js"
import { carriesBody, isBodyTooLarge, limitBody } from "../../platform/BodyLimit.js"
import { identityMaxAvatarBytes, identityMaxBodyBytes } from "../../platform/Config.js"
import { isMediaStoreUnavailable } from "../../platform/MediaStore.js"
import { jsonBodyType } from "../../platform/MediaType.js"
import { isPoolExhausted } from "../../platform/PoolCheckout.js"
import { RouteTable } from "../../platform/RouteTable.js"
import { isDatabaseUnavailable } from "../../platform/SqlState.js"
import { oauthFailure, oauthFailureResponse } from "../oauth/OAuthFailure.js"
import { errorPage } from "../pages/shared/Layout.js"
import { type BodyKind, bodyKindOf, declaredBodyKinds } from "./BodyTypes.js"
import { BASE_PATH, envelopeError, page, prefersJson } from "./Responses.js"

type Shape = "oauth" | "page" | "envelope"

/** Under `/oauth/` but not protocol endpoints: the directory answers the envelope (IdentityDirectoryApi.ts). */
const envelopeUnderOAuth = [`${BASE_PATH}/oauth/client-info`, `${BASE_PATH}/oauth/ecosystem`]

const shapeOf = (path: string): Shape => {
  if (path.startsWith(`${BASE_PATH}/oauth/authorize`) || path.startsWith(`${BASE_PATH}/ui/`)) return "page"
  if (envelopeUnderOAuth.includes(path)) return "envelope"
  if (path.startsWith(`${BASE_PATH}/oauth/`) || path.includes("/.well-known/")) return "oauth"
  return "envelope"
}

const oauthError = (status: number, error: OAuthErrorCode, description: string, headers: Record<string, string> = {}) =>
  oauthFailureResponse(oauthFailure(error, description, { status, headers }))

const answer = (
  request: HttpServerRequest.HttpServerRequest,
  failure: { readonly status: number; readonly oauth: OAuthErrorCode; readonly envelope: EnvelopeCodeName },
  description: string,
  headers: Record<string, string> = {}
) => {
  const path = new URL(request.url, "http://localhost").pathname
  const shape = shapeOf(path)
  if (shape === "oauth") return oauthError(failure.status, failure.oauth, description, headers)
  if (shape === "page" && !prefersJson(request)) {
    const entry = EnvelopeCodes[failure.envelope]
    return page(errorPage({ basePath: BASE_PATH }, { title: entry.message, message: description, code: entry.code }), {
      status: failure.status,
      headers
    })
  }
  return HttpServerResponse.setStatus(envelopeError(failure.envelope, headers), failure.status)
}

/**
 * What an unknown path answers, in its shape. Routes that exist only where enabled (the development
 * mailbox, src/identity/http/DevHttp.ts) answer it too, so nothing tells them apart from no route.
 */
export const routeNotFound = (request: HttpServerRequest.HttpServerRequest) =>
  answer(request, { status: 404, oauth: "invalid_request", envelope: "NOT_FOUND" }, "No resource here.")

/** The authorization request's routes: their malformed requests are 15007, as the service's own. */
const isAuthorizationRequest = (path: string) =>
  path === `${BASE_PATH}/oauth/authorize` || path === `${BASE_PATH}/ui/consent`

/** The avatar uploads (the API's and the account page's): multipart bodies let through, up to their own limit. */
const AVATAR_PATHS = [`${BASE_PATH}/auth/me/avatar`, `${BASE_PATH}/ui/account/avatar`]

/** A request part the decoder refused (not the encoding of a response, which is a defect of ours). */
const isRequestDecodeError = (u: unknown): u is HttpApiError.HttpApiSchemaError =>
  HttpApiError.HttpApiSchemaError.is(u) && u.kind !== "Body" && u.kind !== "ResponseHeaders"

/** The body is sent as JSON (no `Content-Type` is JSON too, as the decoder reads it). */
const isJsonBody = (request: HttpServerRequest.HttpServerRequest) => {
  const kind = jsonBodyType(request.headers["content-type"])._tag
  return kind === "Json" || kind === "Missing"
}

const routes = RouteTable.fromApi(IdentityApi)

/** The kinds of body the endpoint of `request` takes, when one of them is JSON. */
const jsonEndpointKinds = (request: HttpServerRequest.HttpServerRequest): ReadonlySet<BodyKind> | undefined => {
  const match = routes.match(request.method, new URL(request.url, "http://localhost").pathname)
  if (match === undefined) return undefined
  const kinds = declaredBodyKinds(match.route.endpoint)
  return kinds.has("json") ? kinds : undefined
}

/**
 * A body the endpoint takes as JSON (or, at the token and revocation endpoints, as a form too) sent
 * as anything else, without a `Content-Type`, or with one that is not a media type: refused before
 * it is read, whatever it holds (RFC 9110 section 15.5.16), so no cross-site form or `text/plain`
 * post, which a browser sends without asking CORS first, can sign a browser in or act for it.
 */
const refusedBodyType = (
  request: HttpServerRequest.HttpServerRequest,
  kinds: ReadonlySet<BodyKind>
): HttpServerResponse.HttpServerResponse | undefined => {
  const kind = bodyKindOf(request.headers["content-type"])
  if (kind !== undefined && kinds.has(kind)) return undefined
  if (shapeOf(new URL(request.url, "http://localhost").pathname) === "oauth") {
    return oauthError(
      400,
      "invalid_request",
      "Send the parameters as application/x-www-form-urlencoded or application/json."
    )
  }
  return answer(
    request,
    { status: 415, oauth: "invalid_request", envelope: "UNSUPPORTED_MEDIA_TYPE" },
    "Send the body as application/json."
  )
}

/**
 * A JSON body that is not JSON at all. The decoder reports it as a payload it could not decode; it is
 * answered as a body that cannot be read (the body is cached: reading it again costs nothing).
 */
const isUnparsableJson = (request: HttpServerRequest.HttpServerRequest) =>
  Effect.map(Effect.option(request.text), (text) => {
    if (Option.isNone(text)) return true
    if (text.value === "") return false
    try {
      JSON.parse(text.value)
      return false
    } catch {
      return true
    }
  })

/**
 * A global router middleware (`HttpRouter.middleware(..., { global: true })`): it wraps the route
 * lookup too, so an unknown path comes through it.
 */
export const identityErrorMiddleware = HttpRouter.middleware(
  Effect.gen(function*() {
    const maxBytes = yield* identityMaxBodyBytes
    const avatarBytes = yield* identityMaxAvatarBytes
    // RFC 9110 section 15.5.14; RFC 6749 has no error code of its own for it, so `invalid_request`.
    const tooLarge = (request: HttpServerRequest.HttpServerRequest) =>
      answer(
        request,
        { status: 413, oauth: "invalid_request", envelope: "PAYLOAD_TOO_LARGE" },
        `The request body is larger than ${maxBytes} bytes.`
      )
    const invalidRequest = (request: HttpServerRequest.HttpServerRequest) => {
      const invalid = {
        status: 400,
        oauth: "invalid_request",
        envelope: isAuthorizationRequest(new URL(request.url, "http://localhost").pathname)
          ? "INVALID_AUTHORIZATION_REQUEST"
          : "INVALID_REQUEST"
      } as const
      return answer(request, invalid, "A parameter is missing, repeated, malformed or too long.")
    }
    const malformedBody = (request: HttpServerRequest.HttpServerRequest) =>
      answer(
        request,
        { status: 400, oauth: "invalid_request", envelope: "INVALID_REQUEST" },
        "The request body is malformed."
      )
    /**
     * A body the decoder refused: malformed when it is JSON that does not even parse (the body
     * reader itself refused those), otherwise a parameter that is wrong.
     */
    const refusedBody = (request: HttpServerRequest.HttpServerRequest) =>
      Effect.map(
        isJsonBody(request) ? isUnparsableJson(request) : Effect.succeed(false),
        (malformed) => malformed ? malformedBody(request) : invalidRequest(request)
      )
    const limited = limitBody({
      maxBytes,
      uploads: AVATAR_PATHS.map((path) => ({ method: "POST", path, maxBytes: avatarBytes })),
      tooLarge: (request) => Effect.succeed(tooLarge(request)),
      multipart: (request) => {
        const kinds = jsonEndpointKinds(request)
        return Effect.succeed(
          (kinds === undefined ? undefined : refusedBodyType(request, kinds)) ?? answer(
            request,
            { status: 400, oauth: "invalid_request", envelope: "INVALID_REQUEST" },
            "Send the body as application/x-www-form-urlencoded or application/json."
          )
        )
      }
    })
    /** The body bounded, then, on an endpoint that takes JSON, its media type checked. */
    const bounded = (app: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>) =>
      limited(Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
        const kinds = HttpMethod.hasBody(request.method) && carriesBody(request)
          ? jsonEndpointKinds(request)
          : undefined
        const refused = kinds === undefined ? undefined : refusedBodyType(request, kinds)
        return refused === undefined ? app : Effect.succeed(refused)
      }))
    return (app: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>) =>
      bounded(app).pipe(
        // The decoder answers a body whose type the endpoint does not declare with its own bare,
        // plain-text 415 (on a page, say; an endpoint that takes JSON never gets that far): a body it
        // refused, answered as such.
        Effect.flatMap((response) =>
          response.status === 415 && response.headers["content-type"]?.startsWith("text/plain") === true
            ? Effect.flatMap(HttpServerRequest.HttpServerRequest, refusedBody)
            : Effect.succeed(response)
        ),
        Effect.catchCause((cause) =>
          Effect.gen(function*() {
            const request = yield* HttpServerRequest.HttpServerRequest
            const failure = Cause.findErrorOption(cause)
            // The decoder's refusals (`HttpApiSchemaError`) and the failures of reading a body it
            // asked for are defects, the router's unknown path a failure: both are looked at.
            const squashed = Option.isSome(failure) ? failure.value : Cause.squash(cause)
            if (isRequestDecodeError(squashed)) {
              return squashed.kind === "Payload" ? yield* refusedBody(request) : invalidRequest(request)
            }
            if (HttpServerError.isHttpServerError(squashed)) {
              if (squashed.reason._tag === "RouteNotFound") return routeNotFound(request)
              if (squashed.reason._tag === "RequestParseError") {
                if (isBodyTooLarge(squashed)) return tooLarge(request)
                return malformedBody(request)
              }
            }
            if (Option.isSome(failure) || Cause.hasInterruptsOnly(cause)) return yield* Effect.failCause(cause)
            if (isDatabaseUnavailable(squashed) || isMediaStoreUnavailable(squashed)) {
              yield* isMediaStoreUnavailable(squashed)
                ? Effect.logError("media store unavailable", cause)
                : Effect.logWarning(
                  isPoolExhausted(squashed) ? "database busy: no free connection" : "database unavailable",
                  cause
                )
              return answer(
                request,
                { status: 503, oauth: "temporarily_unavailable", envelope: "SERVICE_UNAVAILABLE" },
                "The service is temporarily unavailable.",
                { "retry-after": "5" }
              )
            }
            // A request cut short (its client gone, or the drain's grace over at shutdown) fails with
            // what the cut left behind: not a defect of the request's own.
            if (Cause.hasInterrupts(cause)) {
              yield* Effect.logDebug("request cut short", cause)
              return yield* Effect.failCause(cause)
            }
            yield* Effect.logError("unhandled defect", cause)
            return answer(
              request,
              { status: 500, oauth: "server_error", envelope: "INTERNAL_ERROR" },
              "An unexpected error occurred."
            )
          })
        )
      )
  }),
  { global: true }
)
