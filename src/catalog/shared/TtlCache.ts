/**
 * A small in-process cache for expensive aggregate reads (facet counts, totals, search result
 * sets): entries are fresh for `ttl`, then served stale for up to `stale` more while one refresh
 * runs in the background; concurrent misses of one key share one computation. Least recently used
 * entries beyond `max` are dropped. Per process: every API instance keeps its own.
 */
import { Deferred, Effect, Exit } from "effect"

interface Entry<V> {
  value: V | undefined
  fresh: number
  stale: number
  pending: Deferred.Deferred<V> | undefined
}

export interface TtlCache<V> {
  readonly get: (key: string, compute: Effect.Effect<V>) => Effect.Effect<V>
  /** The cached value, fresh or stale, without computing. */
  readonly peek: (key: string) => V | undefined
  readonly size: () => number
}

export const makeTtlCache = <V>(options: {
  readonly ttlMs: number
  readonly staleMs: number
  readonly max: number
}): TtlCache<V> => {
  const entries = new Map<string, Entry<V>>()

  const touch = (key: string, entry: Entry<V>) => {
    entries.delete(key)
    entries.set(key, entry)
    while (entries.size > options.max) {
      const oldest = entries.keys().next().value as string
      entries.delete(oldest)
    }
  }

  /** Starts the one computation of `key`; its result lands in the entry and in the returned deferred. */
  const start = (key: string, entry: Entry<V>, compute: Effect.Effect<V>) =>
    Effect.gen(function*() {
      const deferred = yield* Deferred.make<V>()
      entry.pending = deferred
      touch(key, entry)
      yield* compute.pipe(
        Effect.exit,
        Effect.tap((exit) =>
          Effect.sync(() => {
            entry.pending = undefined
            if (Exit.isSuccess(exit)) {
              const now = Date.now()
              entry.value = exit.value
              entry.fresh = now + options.ttlMs
              entry.stale = now + options.ttlMs + options.staleMs
            }
          })
        ),
        Effect.flatMap((exit) => Deferred.done(deferred, exit)),
        // Detached: a client that goes away does not cancel the computation others wait for.
        Effect.forkDetach
      )
      return deferred
    })

  const get = (key: string, compute: Effect.Effect<V>): Effect.Effect<V> =>
    Effect.suspend(() => {
      const now = Date.now()
      const entry = entries.get(key)
      if (entry !== undefined && entry.value !== undefined) {
        if (now < entry.fresh) {
          touch(key, entry)
          return Effect.succeed(entry.value)
        }
        if (now < entry.stale) {
          const value = entry.value
          return entry.pending !== undefined
            ? Effect.succeed(value)
            : Effect.as(start(key, entry, compute), value)
        }
      }
      if (entry?.pending !== undefined) return Deferred.await(entry.pending)
      const fresh: Entry<V> = entry ?? { value: undefined, fresh: 0, stale: 0, pending: undefined }
      return Effect.flatMap(start(key, fresh, compute), Deferred.await)
    })

  const peek = (key: string) => {
    const entry = entries.get(key)
    return entry !== undefined && Date.now() < entry.stale ? entry.value : undefined
  }

  return { get, peek, size: () => entries.size }
}
