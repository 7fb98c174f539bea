/**
 * Catalog statistics (`CatalogStats`, schema/Catalog/Stats.ts). The counts are exact (`count(*)` of
 * live rows, not planner estimates), which costs a scan of the works table; so each process counts
 * at most once per content limit every STATS_TTL and serves that result meanwhile. Failures are not
 * cached.
 */
import { Cache, Context, Duration, Effect, Exit, Layer } from "effect"
import type { ContentLimit } from "../../../schema/Api/Security.js"
import { StatsRepo } from "./StatsRepo.js"

export const STATS_TTL = Duration.seconds(10)

export class Stats extends Context.Service<Stats>()("catalog/Stats", {
  make: Effect.gen(function*() {
    const repo = yield* StatsRepo
    const cache = yield* Cache.makeWith((limit: ContentLimit) => repo.counts(limit === "nsfw"), {
      capacity: 2,
      timeToLive: (exit) => (Exit.isSuccess(exit) ? STATS_TTL : Duration.zero)
    })
    const get = (limit: ContentLimit) => Cache.get(cache, limit).pipe(Effect.withSpan("Stats.get"))
    return { get } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([StatsRepo.layer]))
}
