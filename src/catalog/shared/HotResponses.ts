/**
 * Hot responses: repeated catalog GETs answered before the request stack runs.
 *
 * A read handler that produced a 200 (`respond`) remembers it under the request's exact URL and the
 * credential's content limit. The listener's preemption hook (platform/HttpListener.ts) then answers
 * the same URL itself when the request carries an API key that was verified within the last minute
 * and not revoked since (`Credentials.peek`, in memory), with the same content limit and the route's
 * scope: the same body, content type and ETag (304 when `If-None-Match` matches it), a fresh
 * `X-Request-ID`, gzip-encoded for a client that accepts it as the stack's is (Compression.ts). Each
 * such answer spends a token of the credential's request budget from this process's lease
 * (limits/RequestBudget.ts) and carries the same RateLimit headers as the stack's; with no lease in
 * memory the stack answers.
 * Anything else (unknown or unverified credentials, access tokens, other methods or URLs) goes
 * through the stack as usual, which is also what fills this cache.
 *
 * Freshness is the read cache's (ReadCache.ts): an entry belongs to one cache generation, so the
 * `NOTIFY catalog_changed` of any catalog write drops every entry; an answer whose computation began
 * under an older generation is not kept; entries live at most `CATALOG_CACHE_SECONDS`. The budget is
 * `CATALOG_CACHE_MB` again, mostly the same strings as the read cache's entries; `0` turns both off.
 *
 * Hot answers skip the stack's spans and logs; they are counted by the `catalog_hot_responses`
 * metric.
 */
import { Context, Effect, Layer, Metric, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { RequiredScope, type Scope } from "../../../schema/Annotations.js"
import { Principal, type PrincipalShape } from "../../../schema/Api/Security.js"
import { acceptsGzip, gzip, gzipEtag, MIN_COMPRESSED_BYTES, VARY } from "../../platform/Compression.js"
import { conditional, noneMatch } from "../../platform/Conditional.js"
import { Preemption } from "../../platform/HttpListener.js"
import { makeRequestId } from "../../platform/RequestId.js"
import type { RouteTable } from "../../platform/RouteTable.js"
import { bearerToken, Credentials } from "../auth/Authorization.js"
import { RequestBudget } from "../limits/RequestBudget.js"
import { makeByteLru } from "./ByteLru.js"
import { ReadCache } from "./ReadCache.js"

/**
 * A read's answer: JSON text, with an ETag when the resource is a single record
 * (docs/api-contract.md, "Caching, ETags and freshness").
 */
export interface Answer {
  readonly json: string
  readonly etag?: string | undefined
}

/** Requests answered by the preemption hook (process-wide). */
export const hotResponses = Metric.counter("catalog_hot_responses", {
  description: "Catalog GETs answered from the hot-response cache, before the request stack"
})

interface Entry {
  readonly answer: Answer
  /** The body as UTF-8, encoded once. */
  readonly bytes: Buffer
  /**
   * Its gzip representation (Compression.ts) when the answer was computed for a client that accepts
   * gzip; a gzip client finding none is answered by the stack, which remembers the answer again with it.
   */
  readonly gzip: Buffer | undefined
  readonly scope: Scope | "any"
  readonly generation: number
}

export class HotResponses extends Context.Service<HotResponses, {
  /**
   * Runs `compute` for the current principal and answers with its result (200, or 304 for a matching
   * `If-None-Match` when it has an ETag), remembering it for the preemption hook.
   */
  readonly respond: <E, R>(
    compute: (principal: PrincipalShape) => Effect.Effect<Answer, E, R>
  ) => Effect.Effect<
    HttpServerResponse.HttpServerResponse,
    E,
    R | Principal | HttpServerRequest.HttpServerRequest | HttpRouter.RouteContext
  >
}>()("catalog/HotResponses") {}

/**
 * The stack's answer: `bytes` is the body as UTF-8 (encoded once, for the cache and gzip, and sent as
 * it is), `compressed` its gzip representation when the client accepts it.
 */
const answerOf = (answer: Answer, bytes: Buffer, compressed: Buffer | undefined) => {
  if (compressed === undefined) {
    return answer.etag === undefined
      ? Effect.succeed(HttpServerResponse.uint8Array(bytes, { contentType: "application/json" }))
      : conditional({ json: answer.json, etag: answer.etag }, bytes)
  }
  const etag = answer.etag === undefined ? {} : { etag: gzipEtag(answer.etag) }
  return Effect.map(
    HttpServerRequest.HttpServerRequest,
    (request) =>
      answer.etag !== undefined && noneMatch(request.headers["if-none-match"], answer.etag)
        ? HttpServerResponse.empty({ status: 304, headers: { ...etag, vary: VARY } })
        : HttpServerResponse.uint8Array(compressed, {
          contentType: "application/json",
          headers: { "content-encoding": "gzip", vary: VARY, ...etag }
        })
  )
}

export const HotResponsesLive = (routes: RouteTable) =>
  Layer.effect(
    HotResponses,
    Effect.gen(function*() {
      const cache = yield* ReadCache
      const credentials = yield* Credentials
      const budget = yield* RequestBudget
      const preemption = yield* Preemption
      // The hook runs outside any fiber: the metric is counted in the services the server was built with.
      const services = yield* Effect.context<never>()
      const scopes = new Map<string, Scope | "any">()
      for (const route of routes.routes) {
        const scope = Context.getOption(route.annotations, RequiredScope)
        if (Option.isSome(scope)) scopes.set(`${route.method} ${route.path}`, scope.value)
      }

      const entries = makeByteLru<Entry>({ maxWeight: cache.maxWeight, ttlMs: cache.ttlMs })
      let generation = cache.generation()

      const forgetOutdated = () => {
        if (generation === cache.generation()) return
        generation = cache.generation()
        entries.clear()
      }

      const remember = (key: string, entry: Entry) => {
        forgetOutdated()
        if (entry.generation === generation) entries.set(key, entry, entry.bytes.length + (entry.gzip?.length ?? 0))
      }

      if (cache.maxWeight > 0) {
        preemption.install((req, res) => {
          if (req.method !== "GET" || entries.size() === 0) return false
          const token = bearerToken(req.headers.authorization)
          if (Option.isNone(token)) return false
          const principal = credentials.peek(token.value)
          if (principal === undefined) return false
          forgetOutdated()
          const key = `${principal.contentLimit} ${req.url}`
          const entry = entries.get(key)
          if (entry === undefined) return false
          if (entry.scope !== "any" && !principal.scopes.has(entry.scope)) return false
          const compressible = entry.bytes.length >= MIN_COMPRESSED_BYTES
          const gzipped = compressible && acceptsGzip(req.headers["accept-encoding"])
          if (gzipped && entry.gzip === undefined) return false
          // The request counts against the credential's budget like any other; without a leased token
          // in memory the stack answers (and leases, or refuses with 429).
          const admission = budget.takeNow(principal.owner)
          if (admission === undefined) return false
          const limits = budget.headers(admission)
          hotResponses.updateUnsafe(1, services)
          const etag = entry.answer.etag === undefined
            ? undefined
            : gzipped
            ? gzipEtag(entry.answer.etag)
            : entry.answer.etag
          const vary = compressible ? { vary: VARY } : {}
          const requestId = makeRequestId()
          if (etag !== undefined && noneMatch(req.headers["if-none-match"], entry.answer.etag!)) {
            res.writeHead(304, { etag, ...vary, "x-request-id": requestId, ...limits })
            res.end()
            return true
          }
          const body = gzipped ? entry.gzip! : entry.bytes
          res.writeHead(200, {
            "content-type": "application/json",
            "content-length": body.length,
            ...(gzipped ? { "content-encoding": "gzip" } : {}),
            ...vary,
            "x-request-id": requestId,
            ...(etag === undefined ? {} : { etag }),
            ...limits
          })
          res.end(body)
          return true
        })
      }

      const respond = <E, R>(compute: (principal: PrincipalShape) => Effect.Effect<Answer, E, R>) =>
        Effect.gen(function*() {
          const principal = yield* Principal
          const started = cache.generation()
          const answer = yield* compute(principal)
          const request = yield* HttpServerRequest.HttpServerRequest
          const bytes = Buffer.from(answer.json)
          const compressed = bytes.length >= MIN_COMPRESSED_BYTES && acceptsGzip(request.headers["accept-encoding"])
            ? yield* gzip(bytes)
            : undefined
          if (cache.maxWeight > 0) {
            const route = yield* HttpRouter.RouteContext
            remember(`${principal.contentLimit} ${request.url}`, {
              answer,
              bytes,
              gzip: compressed,
              scope: scopes.get(`${route.route.method} ${route.route.path}`) ?? "any",
              generation: started
            })
          }
          return yield* answerOf(answer, bytes, compressed)
        })

      return { respond }
    })
  )
