/**
 * The catalog read cache (src/catalog/shared/ReadCache.ts): repeated reads are answered from
 * memory, and a catalog write (which touches `catalog_changes`, migrations/0002 "Change feed")
 * empties every process's cache at commit through `NOTIFY catalog_changed` (migrations/0005), so a
 * list or a work read after a write shows it. Also the cache's own rules: concurrent misses share
 * one computation, failures are never stored, and a computation that began before a write is not kept.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { CATALOG_CHANNEL, ReadCache } from "../../src/catalog/shared/ReadCache.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
import { eventually } from "../support/Eventually.js"
import { withListenerDown } from "../support/Listeners.js"
import { sleepReal } from "../support/Problems.js"
import { TestSqlLive } from "../support/TestDatabase.js"
import { serverLayerOptions, testConfig } from "../support/TestServers.js"

describe("catalog read cache (docs/life-of-a-request.md, \"Stored answers (the read cache)\")", () => {
  it.layer(SeededCatalogLive({ works: 60, seed: 5 }), serverLayerOptions("180 seconds"))((it) => {
    it.effect("a list and a work are served from memory until a write touches the change feed (docs/api-contract.md, \"Caching, ETags and freshness\")", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const [{ id }] = yield* sql<{ id: string }>`SELECT id::text AS id FROM works WHERE live ORDER BY id LIMIT 1`
        const list = `/v2/catalog/works?ids=${id}`
        const detail = `/v2/catalog/works/${id}`
        const before = yield* catalog.get(list)
        const beforeDetail = yield* catalog.get(detail)
        expect(before.status).toBe(200)
        expect(beforeDetail.status).toBe(200)

        // A change that skips the change feed (against the convention) is not seen: the answers are cached.
        yield* sql`UPDATE works SET display_name = 'Renamed behind the feed' WHERE id = ${id}::bigint`
        // Part of the check: nothing must arrive meanwhile (no condition signals "no notification").
        yield* sleepReal(200)
        expect((yield* catalog.get(list)).body.items[0].display_name).toBe(before.body.items[0].display_name)
        expect((yield* catalog.get(detail)).headers.get("etag")).toBe(beforeDetail.headers.get("etag"))

        // A write that follows it (catalog_touch in the writer's transaction) reaches every reader.
        yield* sql`UPDATE works SET display_name = 'Renamed', updated_at = now() WHERE id = ${id}::bigint`.pipe(
          Effect.andThen(sql`SELECT catalog_touch('work', ${id}::bigint, false)`),
          sql.withTransaction
        )
        yield* eventually(Effect.map(catalog.get(list), (r) => expect(r.body.items[0].display_name).toBe("Renamed")))
        const afterDetail = yield* eventually(Effect.map(catalog.get(detail), (r) => {
          expect(r.body.display_name).toBe("Renamed")
          return r
        }))
        expect(afterDetail.headers.get("etag")).not.toBe(beforeDetail.headers.get("etag"))
      }))

    it.effect("a change served by the feed is never older than the records read after it (docs/change-feed.md, \"The read cache and the feed\")", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const [{ id }] = yield* sql<
          { id: string }
        >`SELECT id::text AS id FROM works WHERE live ORDER BY id DESC LIMIT 1`
        const record = `/v2/catalog/works?ids=${id}`
        // Walk the feed to its current end; keep the cursor to poll with.
        let cursor: string | undefined
        for (;;) {
          const page = yield* catalog.get(`/v2/catalog/changes?limit=100${cursor ? `&cursor=${cursor}` : ""}`)
          if (page.body.next_cursor === undefined) break
          cursor = page.body.next_cursor
        }
        expect((yield* catalog.get(record)).body.items[0].display_name).not.toBe("Seen in the feed")
        // The notification never comes (its trigger is off): only the feed can tell this process.
        yield* sql`ALTER TABLE catalog_changes DISABLE TRIGGER catalog_changes_notify`
        yield* Effect.gen(function*() {
          yield* sql`UPDATE works SET display_name = 'Seen in the feed', updated_at = now() WHERE id = ${id}::bigint`
            .pipe(Effect.andThen(sql`SELECT catalog_touch('work', ${id}::bigint, false)`), sql.withTransaction)
          yield* sleepReal(200) // part of the check: no notification may arrive meanwhile

          expect((yield* catalog.get(record)).body.items[0].display_name).not.toBe("Seen in the feed")
          const poll = yield* catalog.get(`/v2/catalog/changes?limit=100&cursor=${cursor}`)
          expect(poll.body.items.map((c: any) => `${c.target_object}/${c.id}`)).toContain(`work/${id}`)
          expect((yield* catalog.get(record)).body.items[0].display_name).toBe("Seen in the feed")
        }).pipe(
          Effect.ensuring(sql`ALTER TABLE catalog_changes ENABLE TRIGGER catalog_changes_notify`.pipe(Effect.orDie))
        )
      }))

    it.effect("an answer cached before a write made while the change listener was down is not served once it reconnects", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const [{ id }] = yield* sql<{ id: string }>`
          SELECT id::text AS id FROM works WHERE live ORDER BY id OFFSET 1 LIMIT 1`
        const list = `/v2/catalog/works?ids=${id}`
        const before = (yield* catalog.get(list)).body.items[0].display_name
        expect(before).not.toBe("Renamed while nobody listened")
        expect((yield* catalog.get(list)).body.items[0].display_name).toBe(before) // cached
        yield* withListenerDown(
          CATALOG_CHANNEL,
          Effect.gen(function*() {
            // A write by the convention (catalog_touch): its NOTIFY reaches nobody.
            yield* sql`UPDATE works SET display_name = 'Renamed while nobody listened', updated_at = now()
              WHERE id = ${id}::bigint`.pipe(
              Effect.andThen(sql`SELECT catalog_touch('work', ${id}::bigint, false)`),
              sql.withTransaction
            )
            // Nobody told this process: the cached answer is still served while the listener is down.
            expect((yield* catalog.get(list)).body.items[0].display_name).toBe(before)
          })
        )
        // Reconnected, the listener empties the cache: the write shows well within the cache's TTL.
        yield* eventually(Effect.map(
          catalog.get(list),
          (r) => expect(r.body.items[0].display_name).toBe("Renamed while nobody listened")
        ))
      }))

    it.effect("the content limit is part of the key: an sfw credential never gets an nsfw answer (docs/decisions.md, \"Catalog reads\")", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const [{ id }] = yield* sql<{ id: string }>`SELECT id::text AS id FROM works WHERE live AND nsfw LIMIT 1`
        const nsfw = yield* catalog.get(`/v2/catalog/works?ids=${id}`)
        expect(nsfw.body.items.map((w: any) => w.id)).toEqual([id])
        const sfw = yield* catalog.get(`/v2/catalog/works?ids=${id}`, { key: "sfw" })
        expect(sfw.body.items).toEqual([])
        expect(sfw.body.missing).toEqual([id])
        expect((yield* catalog.get(`/v2/catalog/works/${id}`, { key: "sfw" })).status).toBe(404)
      }))
  })

  const CacheLive = ReadCache.layer.pipe(Layer.provideMerge(TestSqlLive), Layer.provide(testConfig()))

  it.layer(CacheLive, serverLayerOptions("60 seconds"))((it) => {
    it.effect("concurrent misses of one key share one computation; hits do not compute", () =>
      Effect.gen(function*() {
        const cache = yield* ReadCache
        // The listener's first connection empties the cache (ReadCache.ts: on every (re)connection), so
        // an answer computed across it is rightly not kept: wait for it, outside what is measured here.
        yield* eventually(Effect.sync(() => expect(cache.generation()).toBeGreaterThan(0)))
        let runs = 0
        const compute = Effect.promise(async () => {
          runs++
          // A computation that takes a while, so the other askers arrive while it runs (what is checked).
          await new Promise((resolve) => setTimeout(resolve, 100))
          return "answer"
        })
        const answers = yield* Effect.all(
          Array.from({ length: 20 }, () => cache.through("shared", compute, (s) => s.length)),
          { concurrency: "unbounded" }
        )
        expect(answers).toEqual(Array(20).fill("answer"))
        expect(runs).toBe(1)
        expect(yield* cache.through("shared", compute, (s) => s.length)).toBe("answer")
        expect(runs).toBe(1)
      }))

    it.effect("failures reach every waiter and are not stored", () =>
      Effect.gen(function*() {
        const cache = yield* ReadCache
        let runs = 0
        const failing = Effect.suspend(() => {
          runs++
          return Effect.fail("boom" as const)
        })
        const exits = yield* Effect.all(
          Array.from({ length: 3 }, () => Effect.exit(cache.through("failing", failing, () => 1))),
          { concurrency: "unbounded" }
        )
        for (const exit of exits) expect(Exit.isFailure(exit)).toBe(true)
        yield* Effect.exit(cache.through("failing", failing, () => 1))
        expect(runs).toBe(2)
      }))

    it.effect("a NOTIFY catalog_changed empties the cache; an answer computed across it is not kept", () =>
      Effect.gen(function*() {
        const cache = yield* ReadCache
        const sql = yield* SqlClient.SqlClient
        /** Sends a notification and waits until the cache has heard it. */
        const notified = Effect.gen(function*() {
          const before = cache.generation()
          yield* sql`SELECT pg_notify('catalog_changed', 'test')`
          yield* eventually(Effect.sync(() => expect(cache.generation()).toBeGreaterThan(before)), {
            timeoutMs: 250
          })
        })
        // The listener is connected once a notification is heard (`onConnected` ran before it).
        yield* eventually(notified)
        let runs = 0
        const counted = Effect.sync(() => ++runs)
        expect(yield* cache.through("counted", counted, () => 1)).toBe(1)
        expect(yield* cache.through("counted", counted, () => 1)).toBe(1)
        yield* notified
        expect(yield* cache.through("counted", counted, () => 1)).toBe(2)

        // Started before the notification, finished after it: served to its asker, then forgotten.
        const started = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const slow = Deferred.succeed(started, undefined).pipe(
          Effect.andThen(Deferred.await(release)),
          Effect.andThen(Effect.sync(() => ++runs))
        )
        const fiber = yield* Effect.forkChild(cache.through("slow", slow, () => 1))
        yield* Deferred.await(started)
        yield* notified
        yield* Deferred.succeed(release, undefined)
        const first = yield* Fiber.await(fiber)
        expect(Exit.isSuccess(first)).toBe(true)
        const again = yield* cache.through("slow", Effect.sync(() => -1), () => 1)
        expect(again).toBe(-1)
      }))
  })
})
