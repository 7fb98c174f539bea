/**
 * `npm start` on the embedded database loads a small demo catalog, so a newcomer has something to
 * read at once. A database named by `DATABASE_URL` is presumably a real deployment's: an empty one
 * stays empty unless the demo is asked for, with `SHIORI_DEMO_WORKS=<n>` (n > 0) or `npm start --
 * --demo` (which src/main.ts hands over as `SHIORI_DEMO=true`). `SHIORI_DEMO_WORKS=0` turns it off
 * everywhere. A database that already has a catalog is left alone.
 */
import { Config, Effect, Layer, Option } from "effect"
import { seedCatalog } from "./Seed.js"

const defaultWorks = 2000

export const DemoCatalogLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const explicitWorks = yield* Config.option(Config.Int("SHIORI_DEMO_WORKS"))
    const asked = yield* Config.Boolean("SHIORI_DEMO").pipe(Config.withDefault(false))
    // The same test src/platform/Database.ts makes: no DATABASE_URL means the embedded cluster.
    const embedded = Option.isNone(yield* Config.option(Config.Redacted("DATABASE_URL")))

    const works = Option.getOrElse(explicitWorks, () => defaultWorks)
    const because = Option.isSome(explicitWorks)
      ? "SHIORI_DEMO_WORKS"
      : asked
      ? "--demo"
      : embedded
      ? "embedded database"
      : undefined
    if (because === undefined) {
      return yield* Effect.logInfo(
        "demo catalog not loaded: DATABASE_URL names the database (--demo or SHIORI_DEMO_WORKS=<n> loads it)"
      )
    }
    if (works <= 0) {
      return yield* Effect.logInfo(`demo catalog not loaded: SHIORI_DEMO_WORKS=${works}`)
    }
    const result = yield* seedCatalog({ works, seed: 1 }).pipe(Effect.orDie)
    if (result.status === "seeded") {
      yield* Effect.logInfo("demo catalog loaded").pipe(
        Effect.annotateLogs({ works: result.summary.works, duration_ms: result.durationMs, because })
      )
    } else {
      yield* Effect.logInfo("demo catalog not loaded: the database already holds a catalog")
    }
  })
)
