/**
 * The problems of a request no endpoint answered (docs/api-contract.md, "Errors: catalog problem
 * documents"): an unknown path 404, a known path with another method 405 with its `Allow`, the
 * retired `/v1` 410, and a body the platform could not read (too large 413, not JSON or cut off
 * 400). These are failures the router and the body reader raise themselves, before or around any
 * endpoint, so they are told apart by the platform's own error reasons, never by message text.
 */
import type { HttpServerRequest } from "effect/http"
import { HttpServerError } from "effect/http"
import { Gone, InvalidParameter, MethodNotAllowed, NotFound, PayloadTooLarge } from "../../schema/Problem.js"
import type { Problem } from "../../schema/Problem.js"
import { isBodyTooLarge } from "./BodyLimit.js"
import type { RouteTable } from "./RouteTable.js"

const isRouteNotFound = (u: unknown): boolean =>
  HttpServerError.isHttpServerError(u) && u.reason._tag === "RouteNotFound"

/** A body that could not be read: cut off, malformed, nested too deep. */
const isRequestParseError = (u: unknown): u is HttpServerError.HttpServerError =>
  HttpServerError.isHttpServerError(u) && u.reason._tag === "RequestParseError"

/** The problem for what the router or the body reader failed with; `undefined` for anything else. */
export const unroutedProblem = (
  routes: RouteTable,
  maxBodyBytes: number,
  request: HttpServerRequest.HttpServerRequest,
  error: unknown
): Problem | undefined => {
  if (isRouteNotFound(error)) {
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
  if (isBodyTooLarge(error)) {
    return new PayloadTooLarge({
      detail: `The request body exceeds ${maxBodyBytes} bytes.`,
      max_bytes: maxBodyBytes
    })
  }
  if (isRequestParseError(error)) {
    return new InvalidParameter({
      detail: error.cause instanceof SyntaxError
        ? "The request body is not valid JSON."
        : "The request could not be read."
    })
  }
  return undefined
}
