/**
 * The catalog takes request bodies as `application/json` only (docs/api-contract.md, "Errors:
 * catalog problem documents"; the problem registry has no 415): a body sent as anything else is a
 * 400 `INVALID_PARAMETER` with one field error on the `Content-Type` header. The platform lets
 * some of those through as JSON and answers the rest with a plain-text 415 of its own, so both
 * paths are caught here and given the same problem; which media types count as JSON is
 * MediaType.ts's to say.
 */
import { Effect, Stream } from "effect"
import { HttpMethod, HttpServerError } from "effect/http"
import type { HttpServerRequest, HttpServerResponse } from "effect/http"
import type { HttpApiEndpoint } from "effect/http-api"
import { InvalidParameter, ValidationFailed } from "../../schema/Problem.js"
import type { FieldError } from "../../schema/Problem.js"
import { carriesBody } from "./BodyLimit.js"
import { JSON_MEDIA_TYPE, jsonBodyType } from "./MediaType.js"

/**
 * The platform answers a body of a media type the endpoint does not declare with a plain-text 415
 * of its own; the catalog takes JSON only and says so in its own style.
 */
export const isPlatformUnsupportedMediaType = (response: HttpServerResponse.HttpServerResponse) =>
  response.status === 415 && response.headers["content-type"]?.startsWith("text/plain") === true

/** The 400 for a body not sent as `application/json`: one field error on the `Content-Type` header. */
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

/**
 * The 422 for a body sent as a media type an endpoint that takes no JSON does not declare (an image
 * upload): one field error on the `Content-Type` header naming the `allowed` types.
 */
export const unsupportedBodyType = (contentType: string | undefined, allowed: ReadonlyArray<string>) =>
  new ValidationFailed({
    detail: `The request body must be sent as one of ${allowed.join(", ")}.`,
    errors: [
      contentType === undefined
        ? { reason: "REQUIRED", detail: "`Content-Type` is required with a body.", header: "Content-Type" }
        : {
          reason: "UNKNOWN_VALUE",
          detail: `\`Content-Type\` must be one of ${allowed.join(", ")}.`,
          header: "Content-Type",
          params: { allowed: [...allowed] }
        }
    ]
  })

/** The reader's failure for a body of a refused media type (see `refuseBodyOfType`). */
class RefusedBodyType {
  readonly _tag = "RefusedBodyType"
}

/** The defect a handler meets when it reads a body `refuseBodyOfType` refused. */
export const isRefusedBodyType = (u: unknown): boolean =>
  HttpServerError.isHttpServerError(u) && u.reason._tag === "RequestParseError" &&
  u.reason.cause instanceof RefusedBodyType

/**
 * For an endpoint that takes a JSON body, a request whose body is not sent as `application/json`
 * (with at most `charset=utf-8`; MediaType.ts) becomes one whose body cannot be read. The
 * platform reads a body without `Content-Type`, or of `application/json` with any parameter, as
 * JSON; refusing it here, before the router, would answer 400 to a request without a credential,
 * which must be 401, so the refusal happens when the platform reads the body, after the credential
 * middleware. Another media type never gets that far: the platform answers it 415 without reading.
 */
export const refuseBodyOfType = (
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
