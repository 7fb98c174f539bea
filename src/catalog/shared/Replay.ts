/**
 * Stored answers replayed inside the request stack (docs/life-of-a-request.md, "Stored answers").
 *
 * A read endpoint opts in by declaring what its answer depends on (`CachedBy` in
 * schema/Annotations.ts: the content limit, the scope set, the tenant, the URL). Its handler's
 * first step is `Replay.respond` with the same declaration: the answer is looked up in the read
 * cache (ReadCache.ts) under exactly those parts, computed on a miss, and sent as a 200 (with its
 * `ETag` when it has one). Everything else a request meets runs as for any other request, before
 * and after: the request id, the credential and the request budget (with its RateLimit fields),
 * the scope, the decoding of the parameters, and on the way back the 304 (`conditional`,
 * platform/Conditional.ts) and gzip with `Vary` (platform/Compression.ts, which keeps the gzip form
 * of a stored body as long as the body is stored, so a replay is compressed once).
 *
 * The computation receives only the declared parts (`CacheKeyInput`): a handler whose route does
 * not declare `tenant` cannot read the caller's site, so it cannot make an answer that depends on
 * it and then serve it to another site.
 */
import { Context, Effect, Layer, Metric, Option } from "effect"
import { HttpRouter, HttpServerRequest, HttpServerResponse } from "effect/http"
import { CachedBy, type CacheDeclaration, type CacheKeyPart, type Scope } from "../../../schema/Annotations.js"
import { type ContentLimit, Principal, type PrincipalShape } from "../../../schema/Api/Security.js"
import { conditional } from "../../platform/Conditional.js"
import type { RouteTable } from "../../platform/RouteTable.js"
import { ReadCache } from "./ReadCache.js"

/**
 * A read's answer: JSON text, with an ETag when the resource is a single record
 * (docs/api-contract.md, "Caching, ETags and freshness").
 */
export interface Answer {
  readonly json: string
  readonly etag?: string | undefined
}

/** What each part of a key gives the computation; `U` is the decoded request (path parameters, query). */
interface KeyFields<U> {
  readonly content_limit: ContentLimit
  readonly scopes: ReadonlyArray<Scope>
  readonly tenant: string
  readonly url: U
}

/** The declared parts of the key, and nothing else of the credential or the request. */
export type CacheKeyInput<P extends CacheKeyPart, U> = { readonly [K in P]: KeyFields<U>[K] }

/** Requests answered with a stored answer (computed by an earlier request), process-wide. */
export const replayedResponses = Metric.counter("catalog_replayed_responses", {
  description: "Catalog reads answered with a stored answer, inside the request stack"
})

/**
 * The input and the cache key of a request to `route` declaring `parts`. The key names the route
 * (method and path template) and the value of each declared part; `url` is the decoded request, so
 * two URLs that decode alike (parameter order, an ignored unknown parameter) share it.
 */
export const cacheKeyOf = <P extends CacheKeyPart, U>(
  route: string,
  declared: CacheDeclaration<P>,
  principal: PrincipalShape,
  url: U
): { readonly key: string; readonly input: CacheKeyInput<P, U> } => {
  const input: Record<string, unknown> = {}
  for (const part of declared.parts) {
    input[part] = part === "content_limit"
      ? principal.contentLimit
      : part === "scopes"
      ? [...principal.scopes].sort()
      : part === "tenant"
      ? principal.site
      : url
  }
  return {
    // Built only when read: with the cache off (`CATALOG_CACHE_MB=0`) no key is needed.
    get key() {
      return JSON.stringify([route, ...declared.parts.map((part) => [part, input[part]])])
    },
    input: input as CacheKeyInput<P, U>
  }
}

interface Stored {
  readonly answer: Answer
  /** The body as UTF-8, encoded once and sent as it is (the same bytes each time: see Compression.ts). */
  readonly bytes: Uint8Array
}

export class Replay extends Context.Service<Replay, {
  /**
   * The stored answer of this request, or `compute`'s (stored when the catalog did not change
   * meanwhile): 200 with the body, its `ETag` and 304 for a current `If-None-Match` when it has
   * one. `declared` must be the route's `CachedBy`; `url` is the decoded request.
   */
  readonly respond: <P extends CacheKeyPart, U, E, R>(
    declared: CacheDeclaration<P>,
    url: U,
    compute: (key: CacheKeyInput<P, U>) => Effect.Effect<Answer, E, R>
  ) => Effect.Effect<
    HttpServerResponse.HttpServerResponse,
    E,
    R | Principal | HttpServerRequest.HttpServerRequest | HttpRouter.RouteContext
  >
}>()("catalog/Replay") {}

const responseOf = (stored: Stored) =>
  stored.answer.etag === undefined
    ? Effect.succeed(HttpServerResponse.uint8Array(stored.bytes, { contentType: "application/json" }))
    : conditional({ json: stored.answer.json, etag: stored.answer.etag }, stored.bytes)

export const ReplayLive = (routes: RouteTable) =>
  Layer.effect(
    Replay,
    Effect.gen(function*() {
      const cache = yield* ReadCache
      const declarations = new Map<string, CacheDeclaration>()
      for (const route of routes.routes) {
        const declared = Context.getOption(route.annotations, CachedBy)
        if (Option.isSome(declared)) declarations.set(`${route.method} ${route.path}`, declared.value)
      }

      // Every replay runs this: plain steps rather than a generator, so a stored answer costs the
      // lookup and little else.
      const respond = <P extends CacheKeyPart, U, E, R>(
        declared: CacheDeclaration<P>,
        url: U,
        compute: (key: CacheKeyInput<P, U>) => Effect.Effect<Answer, E, R>
      ) =>
        Effect.contextWith((services: Context.Context<R | Principal | HttpRouter.RouteContext>) => {
          const context = Context.get(services, HttpRouter.RouteContext)
          const route = `${context.route.method} ${context.route.path}`
          if (declarations.get(route) !== declared) {
            return Effect.die(new Error(`${route}: the handler's cache declaration is not the route's CachedBy`))
          }
          const keyed = cacheKeyOf(route, declared, Context.get(services, Principal), url)
          let computed = false
          return Effect.flatMap(
            cache.through(
              cache.maxWeight === 0 ? "" : keyed.key,
              Effect.suspend(() => {
                computed = true
                return compute(keyed.input).pipe(
                  Effect.map((answer): Stored => ({ answer, bytes: Buffer.from(answer.json) })),
                  Effect.provideContext(services)
                )
              }),
              (entry) => entry.bytes.length
            ),
            (stored) =>
              computed ? responseOf(stored) : Effect.andThen(Metric.update(replayedResponses, 1), responseOf(stored))
          )
        })

      return { respond }
    })
  )
