/**
 * The catalog read cache: finished answers of catalog reads (a list body, a work with its ETag),
 * keyed by what the request asked after validation (decoded parameters and the credential's
 * content limit), so a repeated read costs a map lookup instead of statements.
 *
 * Freshness is the catalog's one model (CatalogChanges.ts): the cache is emptied with every other
 * cache of catalog data, at each `catalog_changed` notification, each (re)connection of the listener,
 * each write this process commits and each feed page past the highest position served; entries
 * expire after `CATALOG_CACHE_SECONDS` (default 60), the bound for a lost notification; and an
 * answer whose computation started before the latest emptying is never stored.
 *
 * The mirror protocol needs the feed rule: a client that saw a change in the feed and then reads
 * the record must get the new record, even if the notification is still on its way. So the feeds
 * report what they serve (`observeFeed`): a page reaching past the highest feed position this
 * process has served empties the caches before the page is sent. That is enough because of the
 * feed's own invariant (positions in commit order, migrations/0010): a transaction that commits
 * after a page was read gets a position above every position of that page, so a change at or below
 * the highest position served was committed before the cache was last emptied for it.
 *
 * Load. Concurrent misses of one key share one computation (32 clients asking for the same cold
 * facet counts run the query once), detached from the first asker so its disconnect does not fail
 * the others. Typed failures and defects are passed to every waiter and never stored.
 *
 * Size. Least recently used entries go beyond `CATALOG_CACHE_MB` (default 32, counted as string
 * length); `0` turns the cache off (every read computes). Per process: instances do not share it.
 *
 * Why not effect's `Cache` (which the other catalog caches use, CatalogChanges.ts `cache`): it bounds
 * entries by count, and answers range from a few bytes to an eighth of the budget, so only a byte
 * budget (ByteLru.ts) bounds the memory. The generation guard below is kept with it: `through`
 * stores an answer itself once computed, so it must check that no emptying happened meanwhile.
 *
 * Its layer also provides `CatalogChanges`, for the other caches of the same server.
 */
import { Config, Context, Deferred, Duration, Effect, Exit, Layer } from "effect"
import { cacheCounters } from "../../platform/Metrics.js"
import { makeByteLru } from "./ByteLru.js"
import { CATALOG_CHANNEL, CatalogChanges } from "./CatalogChanges.js"

export { CATALOG_CHANNEL }

export class ReadCache extends Context.Service<ReadCache>()("catalog/ReadCache", {
  make: Effect.gen(function*() {
    const changes = yield* CatalogChanges
    const maxWeight = (yield* Config.Finite("CATALOG_CACHE_MB").pipe(Config.withDefault(32))) * 1024 * 1024
    const ttlMs = Duration.toMillis(changes.ttl)

    const entries = makeByteLru<unknown>({ maxWeight, ttlMs })
    const pending = new Map<string, Deferred.Deferred<unknown, unknown>>()
    const counted = cacheCounters("catalog_read")
    yield* changes.onChange(() => {
      entries.clear()
      pending.clear()
    })

    /**
     * The answer for `key`: cached, being computed by another request, or computed now by `compute`
     * (and stored when the catalog did not change meanwhile). `weigh` sizes an answer for the budget.
     */
    const through = <A, E>(key: string, compute: Effect.Effect<A, E>, weigh: (value: A) => number) =>
      maxWeight === 0 ? compute : Effect.suspend((): Effect.Effect<A, E> => {
        const cached = entries.get(key)
        if (cached !== undefined) {
          counted.hit()
          return Effect.succeed(cached as A)
        }
        // A miss, whether this request computes the answer or waits for another's computation.
        counted.miss()
        const running = pending.get(key) as Deferred.Deferred<A, E> | undefined
        if (running !== undefined) return Deferred.await(running)
        const started = changes.generation()
        const deferred = Deferred.makeUnsafe<A, E>()
        pending.set(key, deferred as Deferred.Deferred<unknown, unknown>)
        return compute.pipe(
          Effect.exit,
          Effect.flatMap((exit) =>
            Effect.suspend(() => {
              if (pending.get(key) === deferred) pending.delete(key)
              if (Exit.isSuccess(exit) && started === changes.generation()) {
                entries.set(key, exit.value, weigh(exit.value))
              }
              return Deferred.done(deferred, exit)
            })
          ),
          Effect.forkDetach,
          Effect.andThen(Deferred.await(deferred))
        )
      })

    return {
      through,
      /** Empties every cache of catalog data (CatalogChanges.ts). */
      invalidate: changes.invalidate,
      /** A feed page is about to serve changes up to `position`: empties the caches if any is new here. */
      observeFeed: changes.observeFeed,
      /** Changes whenever the caches are emptied: an answer computed under an older one is outdated. */
      generation: changes.generation,
      /** The budget (`CATALOG_CACHE_MB`, in string length or bytes); 0 when answers are not kept. */
      maxWeight,
      ttlMs,
      size: entries.size
    } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provideMerge(CatalogChanges.layer))
}
