/**
 * The freshness bound of the catalog's caches, across two processes (docs/api-contract.md, "Caching,
 * ETags and freshness"): every cache of catalog data in a process (the stored answers, search result
 * sets, listing and facet counts, statistics) is emptied by every committed catalog write, so a read
 * that begins once the write's notification has reached that process sees the write. Process A is
 * the test's own catalog server, where the writes are made (claims, docs/writing.md "Claims");
 * process B is the built server (`dist/src/main.js`) on the same database, where every read is made
 * and cached first. B keeps `CATALOG_CACHE_SECONDS` at its default (60), so only the notification can
 * explain a fresh read within the bound waited here. When the notification is lost (the triggers
 * that send it are off), a process configured with a short `CATALOG_CACHE_SECONDS` sees the write
 * once that long has passed, and not through anything else.
 *
 * Also the model's own rule (src/catalog/shared/CatalogChanges.ts): a value whose computation began
 * before an emptying is never kept.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Layer, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { CatalogChanges } from "../../src/catalog/shared/CatalogChanges.js"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { startBuiltCatalog } from "../support/BuiltServer.js"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape } from "../support/Claims.js"
import { eventually } from "../support/Eventually.js"
import { sleepReal } from "../support/Problems.js"
import { TestSqlLive } from "../support/TestDatabase.js"
import { serverLayerOptions, testConfig } from "../support/TestServers.js"

/**
 * The documented bound for a notified write (docs/api-contract.md, "Caching, ETags and freshness":
 * notifications arrive within milliseconds; allow a second).
 */
const FRESHNESS_BOUND_MS = 1_000

/** What a read shows of the minted work, one probe per cached thing. */
interface Probe {
  readonly name: string
  readonly path: string
  readonly observe: (res: { readonly status: number; readonly body: any }) => unknown
}

const probes = (work: string, word: string): ReadonlyArray<Probe> => [
  {
    name: "works list answer (stored answer)",
    path: `/v2/catalog/works?ids=${work}`,
    observe: (res) => res.body.items.map((w: any) => w.id)
  },
  {
    name: "single work answer (stored answer)",
    path: `/v2/catalog/works/${work}`,
    observe: (res) => res.status === 200 ? res.body.id : res.status
  },
  {
    name: "search answer (result set)",
    path: `/v2/catalog/search?q=${word}&page=1`,
    observe: (res) => res.body.items.map((w: any) => w.id)
  },
  {
    name: "listing count of a filter (include_total)",
    path: "/v2/catalog/works?site=site_a&include_total=true",
    observe: (res) => res.body.total
  },
  {
    name: "listing count of the whole catalog (include_total)",
    path: "/v2/catalog/works?include_total=true&limit=1",
    observe: (res) => res.body.total
  },
  {
    name: "facet counts of a search",
    path: `/v2/catalog/search?q=${word}&facets=content_rating&page=1`,
    observe: (res) => res.body.facets.content_rating
  },
  {
    name: "facet counts of the whole catalog",
    path: "/v2/catalog/search?facets=content_rating&page=1&limit=1",
    observe: (res) => res.body.facets.content_rating.find((v: any) => v.value === "sfw")?.count
  },
  {
    name: "statistics",
    path: "/v2/catalog/stats",
    observe: (res) => res.body.works
  }
]

/** Every probe read on `base` with `key`: name -> what it shows. */
const readAll = (base: string, key: string, list: ReadonlyArray<Probe>) =>
  Effect.forEach(list, (probe) =>
    Effect.promise(async () => {
      const res = await fetch(`${base}${probe.path}`, { headers: { authorization: `Bearer ${key}` } })
      const text = await res.text()
      const body = text === "" ? null : JSON.parse(text)
      if (res.status !== 200 && res.status !== 404) throw new Error(`${probe.path}: ${res.status} ${text}`)
      return [probe.name, probe.observe({ status: res.status, body })] as const
    })).pipe(Effect.map((pairs): Record<string, any> => Object.fromEntries(pairs)))

/** What every probe shows once the minted `work` went live, given what it showed before. */
const liveAfter = (before: Record<string, any>, work: string) => ({
  "works list answer (stored answer)": [work],
  "single work answer (stored answer)": work,
  "search answer (result set)": [work],
  "listing count of a filter (include_total)": before["listing count of a filter (include_total)"] + 1,
  "listing count of the whole catalog (include_total)": before["listing count of the whole catalog (include_total)"] +
    1,
  "facet counts of a search": [{ value: "sfw", display_name: expect.any(String), count: 1 }],
  "facet counts of the whole catalog": before["facet counts of the whole catalog"] + 1,
  "statistics": before["statistics"] + 1
})

/** Mints a draft work titled with `word` as the fixture's creator (docs/writing.md, "Claims": minted works). */
const mint = (f: ClaimsFixtureShape, word: string) =>
  Effect.gen(function*() {
    const minted = yield* f.call("POST", "/v2/claims", {
      key: f.creator.key,
      body: { site_work_id: "9001", display_name: `Freshness ${word}` }
    })
    expect(minted.status, JSON.stringify(minted.body)).toBe(201)
    return minted.body.id as string
  })

/** The go-live: a creator's submission makes its minted work live (docs/writing.md, "Claims"). */
const goLive = (f: ClaimsFixtureShape, work: string) =>
  Effect.gen(function*() {
    const submitted = yield* f.call("POST", `/v2/claims/${work}/submission`, { key: f.creator.key })
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(200)
    expect(submitted.body.state).toBe("live")
  })

/** The tables whose statement triggers send `catalog_changed` (migrations/0005, migrations/0021). */
const notifyingTables = ["catalog_changes", "catalog_redirects", "claims", "claim_events"] as const

describe("catalog freshness across processes (docs/api-contract.md, \"Caching, ETags and freshness\")", () => {
  it.layer(ClaimsFixtureLive(), serverLayerOptions("180 seconds"))((it) => {
    it.effect("a write made through process A is seen by every cached read of process B within the bound", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const b = yield* startBuiltCatalog(Redacted.value(yield* DatabaseUrl))
        const word = `zqfresh${Date.now().toString(36)}`
        const reader = f.creator.key

        // A minted draft is invisible to every read.
        const work = yield* mint(f, word)
        const list = probes(work, word)

        // Each read twice on B, so that the second is answered from its caches.
        const before = yield* readAll(b.base, reader, list)
        expect(yield* readAll(b.base, reader, list)).toEqual(before)
        expect(before["works list answer (stored answer)"]).toEqual([])
        expect(before["search answer (result set)"]).toEqual([])

        // The go-live on A.
        yield* goLive(f, work)
        yield* sleepReal(FRESHNESS_BOUND_MS)
        const live = yield* readAll(b.base, reader, list)
        expect(live).toEqual(liveAfter(before, work))

        // Cached again on B (the single work too, now that it is served), then a ban on A hides it.
        expect(yield* readAll(b.base, reader, list)).toEqual(live)
        const claim = yield* f.call("GET", `/v2/claims/${work}`, { key: f.moderator.key })
        const banned = yield* f.call("POST", `/v2/moderation/claims/${work}/decisions`, {
          key: f.moderator.key,
          body: { decision: "ban", note: "freshness test" },
          headers: { "if-match": claim.headers.get("etag")! }
        })
        expect(banned.status, JSON.stringify(banned.body)).toBe(201)
        yield* sleepReal(FRESHNESS_BOUND_MS)
        expect(yield* readAll(b.base, reader, list)).toEqual({ ...before, "single work answer (stored answer)": 404 })
      }))

    it.effect("a write whose notification is lost is seen by process B within CATALOG_CACHE_SECONDS", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        // B keeps anything at most 2 seconds: the bound a lost notification leaves, and the wait below.
        const cacheSeconds = 2
        const b = yield* startBuiltCatalog(Redacted.value(yield* DatabaseUrl), {
          CATALOG_CACHE_SECONDS: String(cacheSeconds)
        })
        const word = `zqlost${Date.now().toString(36)}`
        const reader = f.creator.key
        const triggers = (enable: boolean) =>
          Effect.forEach(notifyingTables, (table) =>
            enable
              ? sql`ALTER TABLE ${sql(table)} ENABLE TRIGGER ${sql(`${table}_notify`)}`
              : sql`ALTER TABLE ${sql(table)} DISABLE TRIGGER ${sql(`${table}_notify`)}`).pipe(Effect.orDie)
        // No write notifies any process from here on (the listeners stay connected and hear nothing).
        yield* triggers(false)
        yield* Effect.gen(function*() {
          const work = yield* mint(f, word)
          const list = probes(work, word)
          const before = yield* readAll(b.base, reader, list)
          expect(yield* readAll(b.base, reader, list)).toEqual(before)
          expect(before["works list answer (stored answer)"]).toEqual([])

          yield* goLive(f, work)
          yield* sleepReal(cacheSeconds * 1_000)
          expect(yield* readAll(b.base, reader, list)).toEqual(liveAfter(before, work))
        }).pipe(Effect.ensuring(triggers(true)))
      }))
  })

  const ChangesLive = CatalogChanges.layer.pipe(Layer.provideMerge(TestSqlLive), Layer.provide(testConfig()))

  it.layer(ChangesLive, serverLayerOptions("60 seconds"))((it) => {
    it.effect("a value computed across an emptying reaches its askers and is not kept; concurrent misses share one computation", () =>
      Effect.gen(function*() {
        const changes = yield* CatalogChanges
        const sql = yield* SqlClient.SqlClient
        const cache = yield* changes.cache<number>({ name: "test", capacity: 8 })
        /** Sends a notification and waits until this process has heard it. */
        const notified = Effect.gen(function*() {
          const before = changes.generation()
          yield* sql`SELECT pg_notify('catalog_changed', 'test')`
          yield* eventually(Effect.sync(() => expect(changes.generation()).toBeGreaterThan(before)), {
            timeoutMs: 250
          })
        })
        // The listener is connected once a notification is heard (its `onConnected` emptied first).
        yield* eventually(notified)

        let runs = 0
        const started = yield* Deferred.make<void>()
        const release = yield* Deferred.make<void>()
        const slow = Deferred.succeed(started, undefined).pipe(
          Effect.andThen(Deferred.await(release)),
          Effect.andThen(Effect.sync(() => ++runs))
        )
        const askers = yield* Effect.forkChild(
          Effect.all(Array.from({ length: 5 }, () => cache.get("slow", slow)), { concurrency: "unbounded" })
        )
        yield* Deferred.await(started)
        yield* notified
        yield* Deferred.succeed(release, undefined)
        const answered = yield* Fiber.await(askers)
        expect(Exit.isSuccess(answered) && answered.value).toEqual([1, 1, 1, 1, 1])
        expect(runs).toBe(1)
        // Computed under the older generation: not kept, so the next ask computes.
        expect(yield* cache.peek("slow")).toEqual(Option.none())
        expect(yield* cache.get("slow", Effect.sync(() => -1))).toBe(-1)
        // A value computed within one generation is kept until the next emptying.
        expect(yield* cache.get("slow", Effect.sync(() => -2))).toBe(-1)
        changes.invalidate()
        expect(yield* cache.get("slow", Effect.sync(() => -3))).toBe(-3)
      }))
  })
})
