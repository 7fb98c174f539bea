/**
 * The one freshness model of every cache of catalog data in a process: the stored answers
 * (ReadCache.ts), the search result sets, counts and facet counts (search/PgSearchIndex.ts), the
 * listing totals (works/Works.ts) and the statistics (stats/Stats.ts). They all empty at the same
 * moments, and none keeps a value computed before the latest of them:
 *
 * - a `catalog_changed` notification: every catalog write upserts `catalog_changes` (or writes
 *   `catalog_redirects`, `claims`, `claim_events`) in its transaction, and a statement trigger
 *   NOTIFYs at commit (migrations/0005, migrations/0021); PostgreSQL delivers it only after the
 *   commit, so no process hears of a write it cannot read yet;
 * - each time LISTEN is in force again (platform/Notifications.ts, `onConnected`): whatever was
 *   written while nobody listened is unknown;
 * - a write this process committed (`invalidate`, called by writes/Writes.ts before it answers);
 * - a feed page reaching past the highest feed position this process has served (`observeFeed`, see
 *   ReadCache.ts for why that is enough for the mirror protocol).
 *
 * Each emptying also raises the read replica's fence (src/platform/ReadReplica.ts), so reads made
 * after it go to the primary until the replica has replayed the change.
 *
 * The bound this gives (docs/api-contract.md, "Caching, ETags and freshness"): a read that begins
 * after a write's notification has reached the process sees the write; in practice that is within
 * milliseconds of the commit. Entries also expire after `CATALOG_CACHE_SECONDS` (default 60): that
 * is only the bound for a notification lost without the listener noticing, never a window in which
 * a notified write is hidden. No cache here serves an entry past an emptying (no
 * stale-while-revalidate).
 *
 * `generation` goes up at each emptying. Effect's `Cache` (`cache` below) needs no generation guard:
 * a lookup is in its map from the moment it starts, `Cache.invalidateAll` drops it from there, and
 * a lookup that finishes only sets the expiry of its own entry, never puts it back (effect 4.1,
 * src/Cache.ts `get`); ReadCache keeps its own guard (see there).
 */
import { Cache, Config, Context, Duration, Effect, Exit, Layer, Option } from "effect"
import { cacheCounters } from "../../platform/Metrics.js"
import { keepListening } from "../../platform/Notifications.js"
import { ReadRouting } from "../../platform/ReadReplica.js"

export const CATALOG_CHANNEL = "catalog_changed"

/**
 * The computation of the value a `cache` lookup is for, given by its asker: effect's `Cache` runs its
 * lookup with the services of the `get` that missed (`requireServicesAt: "lookup"`), so the key stays
 * a plain string (a string key is several times cheaper to hash and compare than an object key).
 */
class Computation
  extends Context.Service<Computation, Effect.Effect<unknown>>()("catalog/CatalogChanges/Computation")
{}

/** A cache of catalog data, emptied at every change (`CatalogChanges.cache`). */
export interface CatalogCache<A> {
  /** The value of `key`: kept, being computed by another request, or computed now by `compute`. */
  readonly get: (key: string, compute: Effect.Effect<A>) => Effect.Effect<A>
  /** The kept value of `key`, if its computation has finished; never computes. */
  readonly peek: (key: string) => Effect.Effect<Option.Option<A>>
}

export class CatalogChanges extends Context.Service<CatalogChanges>()("catalog/CatalogChanges", {
  make: Effect.gen(function*() {
    const ttl = Duration.seconds(yield* Config.Finite("CATALOG_CACHE_SECONDS").pipe(Config.withDefault(60)))
    /** Bumped by every emptying: a computation that began under an older one is outdated. */
    let generation = 0
    const emptiers = new Set<() => void>()

    // Every emptying also raises the read replica's fence (src/platform/ReadReplica.ts), first: no
    // read after it, and no cache refilled by one, is served by a replica that lacks the change.
    const routing = yield* ReadRouting
    const invalidate = () => {
      routing.raiseFence()
      generation++
      for (const empty of emptiers) empty()
    }

    /** The highest feed position served by this process. */
    let feedTop = -1n
    const observeFeed = (position: string) => {
      const at = BigInt(position)
      if (at > feedTop) {
        feedTop = at
        invalidate()
      }
    }

    // Emptied each time LISTEN is in force again, not before: a write in between would be kept.
    yield* keepListening(CATALOG_CHANNEL, {
      onConnected: Effect.sync(invalidate),
      onNotification: () => Effect.sync(invalidate)
    })

    /** Runs `empty` at every emptying, for the life of the scope. */
    const onChange = (empty: () => void) =>
      Effect.acquireRelease(Effect.sync(() => emptiers.add(empty)), () => Effect.sync(() => emptiers.delete(empty)))

    /**
     * An effect `Cache` of at most `capacity` values, each kept `CATALOG_CACHE_SECONDS` at most and
     * emptied at every change. Concurrent misses of one key share one computation, run by the cache
     * outside the asking fiber (interrupted only once no asker waits for it); a failure or defect
     * reaches every waiter and is not kept. `name` labels its hits and misses (src/platform/Metrics.ts).
     */
    const cache = <A>(options: { readonly name: string; readonly capacity: number }) =>
      Effect.gen(function*() {
        const cache = yield* Cache.makeWith(
          (_key: string) =>
            Effect.gen(function*() {
              const compute = yield* Computation
              return yield* (compute as Effect.Effect<A>)
            }),
          {
            capacity: options.capacity,
            timeToLive: (exit) => Exit.isSuccess(exit) ? ttl : Duration.zero,
            requireServicesAt: "lookup"
          }
        )
        yield* onChange(() => Effect.runSync(Cache.invalidateAll(cache)))
        const peek = (key: string) => Cache.getSuccess(cache, key)
        const counted = cacheCounters(options.name)
        return {
          // A hit skips providing the computation, which copies the asker's services (about 10 µs in a
          // server's context against under 2 for the hit).
          get: (key, compute) =>
            Effect.flatMap(peek(key), (kept) => {
              if (Option.isSome(kept)) {
                counted.hit()
                return Effect.succeed(kept.value)
              }
              counted.miss()
              return Cache.get(cache, key).pipe(Effect.provideService(Computation, compute))
            }),
          peek
        } satisfies CatalogCache<A>
      })

    return {
      /** Empties every cache of catalog data now (a write this process committed). */
      invalidate,
      /** A feed page is about to serve changes up to `position`: empties the caches if any is new here. */
      observeFeed,
      /** Changes at every emptying: a value computed under an older one is outdated. */
      generation: () => generation,
      onChange,
      cache,
      /** `CATALOG_CACHE_SECONDS`: the longest an entry is kept, the bound for a lost notification. */
      ttl
    } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
