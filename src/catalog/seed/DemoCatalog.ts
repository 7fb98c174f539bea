/**
 * `npm start` on an empty database loads a small demo catalog (`SHIORI_DEMO_WORKS`, default 2000;
 * 0 turns it off), so a newcomer has something to read at once. A database that already has a
 * catalog is left alone.
 */
import { Config, Effect, Layer } from "effect"
import { seedCatalog } from "./Seed.js"

export const DemoCatalogLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const works = yield* Config.integer("SHIORI_DEMO_WORKS").pipe(Config.withDefault(2000))
    if (works <= 0) return
    const result = yield* seedCatalog({ works, seed: 1 }).pipe(Effect.orDie)
    if (result.status === "seeded") {
      yield* Effect.logInfo("demo catalog loaded").pipe(
        Effect.annotateLogs({ works: result.summary.works, duration_ms: result.durationMs })
      )
    }
  })
)
