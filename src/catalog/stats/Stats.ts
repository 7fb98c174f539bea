/**
 * Catalog statistics (`CatalogStats`, schema/Catalog/Stats.ts). The counts are exact (`count(*)` of
 * live rows, not planner estimates), which costs a scan of the works table; so each process counts
 * once per content limit and serves that result until the next catalog change empties it
 * (src/catalog/shared/CatalogChanges.ts), or `CATALOG_CACHE_SECONDS` at most. Failures are not cached.
 */
import { Context, Effect, Layer } from "effect"
import type { ContentLimit } from "../../../schema/Api/Security.js"
import type { CatalogStats } from "../../../schema/Catalog/Stats.js"
import { CatalogChanges } from "../shared/CatalogChanges.js"
import { StatsRepo } from "./StatsRepo.js"

export class Stats extends Context.Service<Stats>()("catalog/Stats", {
  make: Effect.gen(function*() {
    const repo = yield* StatsRepo
    const cache = yield* (yield* CatalogChanges).cache<CatalogStats>({ name: "catalog_stats", capacity: 2 })
    const get = (limit: ContentLimit) =>
      cache.get(limit, repo.counts(limit === "nsfw")).pipe(Effect.withSpan("Stats.get"))
    return { get } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([StatsRepo.layer]))
}
