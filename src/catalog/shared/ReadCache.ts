/**
 * The catalog read cache: finished answers of catalog reads (a list body, a work with its ETag),
 * keyed by what the request asked after validation (decoded parameters and the credential's
 * content limit), so a repeated read costs a map lookup instead of statements.
 *
 * Freshness. An answer is only ever kept for the catalog it was computed from: every catalog write
 * upserts `catalog_changes` in its transaction and a statement trigger NOTIFYs `catalog_changed` at
 * commit (migrations/0005); each process empties its cache when it hears it, and an answer whose
 * computation started before the latest notification is never stored. Readers of a process can
 * therefore lag a commit by the notification's delivery time (milliseconds, like a read replica).
 * Entries also expire after `CATALOG_CACHE_SECONDS` (default 60), which bounds what a notification
 * lost while the listener reconnects could leave behind; on every (re)connection the cache is
 * emptied as well.
 *
 * The mirror protocol needs more than that: a client that saw a change in the feed and then reads
 * the record must get the new record, even if the notification is still on its way. So the feeds
 * report what they serve (`observeFeed`): a page reaching past the highest feed position this
 * process has served empties the cache before the page is sent. That is enough because of the
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
 * Why not effect's `Cache`: it bounds entries by count, not by size, and stores whatever a lookup
 * returns; this one must refuse an answer whose computation began before the latest change
 * notification (the generation above) and bound its memory in bytes.
 */
import { Config, Context, Deferred, Effect, Exit, Layer } from "effect"
import { keepListening } from "../../platform/Notifications.js"
import { makeByteLru } from "./ByteLru.js"

export const CATALOG_CHANNEL = "catalog_changed"

export class ReadCache extends Context.Service<ReadCache>()("catalog/ReadCache", {
  make: Effect.gen(function*() {
    const maxWeight = (yield* Config.Finite("CATALOG_CACHE_MB").pipe(Config.withDefault(32))) * 1024 * 1024
    const ttlMs = (yield* Config.Finite("CATALOG_CACHE_SECONDS").pipe(Config.withDefault(60))) * 1000

    const entries = makeByteLru<unknown>({ maxWeight, ttlMs })
    const pending = new Map<string, Deferred.Deferred<unknown, unknown>>()
    /** Bumped by every invalidation: a computation that began under an older one is not stored. */
    let generation = 0

    const invalidate = () => {
      generation++
      entries.clear()
      pending.clear()
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

    if (maxWeight > 0) {
      // Whatever was written while nobody listened is unknown: empty the cache each time LISTEN is in
      // force again (platform/Notifications.ts), not before, or a write in between would be kept.
      yield* keepListening(CATALOG_CHANNEL, {
        onConnected: Effect.sync(invalidate),
        onNotification: () => Effect.sync(invalidate)
      })
    }

    /**
     * The answer for `key`: cached, being computed by another request, or computed now by `compute`
     * (and stored when the catalog did not change meanwhile). `weigh` sizes an answer for the budget.
     */
    const through = <A, E>(key: string, compute: Effect.Effect<A, E>, weigh: (value: A) => number) =>
      maxWeight === 0 ? compute : Effect.suspend((): Effect.Effect<A, E> => {
        const cached = entries.get(key)
        if (cached !== undefined) return Effect.succeed(cached as A)
        const running = pending.get(key) as Deferred.Deferred<A, E> | undefined
        if (running !== undefined) return Deferred.await(running)
        const started = generation
        const deferred = Deferred.makeUnsafe<A, E>()
        pending.set(key, deferred as Deferred.Deferred<unknown, unknown>)
        return compute.pipe(
          Effect.exit,
          Effect.flatMap((exit) =>
            Effect.suspend(() => {
              if (pending.get(key) === deferred) pending.delete(key)
              if (Exit.isSuccess(exit) && started === generation) {
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
      invalidate,
      /** A feed page is about to serve changes up to `position`: empties the cache if any is new here. */
      observeFeed,
      /** Changes whenever the cache is emptied: an answer computed under an older one is outdated. */
      generation: () => generation,
      /** The budget (`CATALOG_CACHE_MB`, in string length or bytes); 0 when answers are not kept. */
      maxWeight,
      ttlMs,
      size: entries.size
    } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
