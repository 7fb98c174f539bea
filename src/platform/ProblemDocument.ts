/**
 * Rendering a catalog problem document (RFC 9457; docs/api-contract.md, "Errors: catalog problem
 * documents"): whichever piece decided that a request gets a problem (ProblemMiddleware.ts), the
 * document is written here, so every 4xx/5xx has the same members in the same order and the headers
 * its code calls for. Kept apart from the deciding so that the listener's 503 while the server
 * starts (before any middleware exists) is written by the same code.
 */
import { Schema } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpServerResponse } from "effect/http"
import { entityCanonicalPath } from "../../schema/Api/Paths.js"
import type {
  EntityMerged,
  MethodNotAllowed as MethodNotAllowedProblem,
  ProblemCode,
  QuotaExceeded
} from "../../schema/Problem.js"
import { problem, problemTypeUri, ServiceUnavailable } from "../../schema/Problem.js"
import type { Problem } from "../../schema/Problem.js"
import { ServerConfig } from "./Config.js"
import { rateLimitField, rateLimitPolicyField } from "./RateLimiter.js"
import { currentRequestId } from "./RequestId.js"

export interface ProblemContext {
  readonly docsUrl: string
  readonly publicUrl: string
}

/** The constructor of a problem class, which every problem's `constructor` is. */
export type ProblemConstructor = new(props: Record<string, unknown>) => Problem

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

/** Where the `type` URIs and `Link` targets of this server's problems point. */
export const problemContext = ServerConfig.useSync((config): ProblemContext => ({
  docsUrl: config.docsUrl,
  publicUrl: config.catalogPublicUrl
}))

/** The response for `p` as the answer to `request`: stamped with its path and the request id. */
export const respondWith = (ctx: ProblemContext, request: HttpServerRequest.HttpServerRequest, p: Problem) =>
  currentRequestId.useSync((id) => problemResponse(stampProblem(p, ctx, instanceOf(request), id), ctx))

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
