/**
 * The mirror proof (docs/change-feed.md): a mirror client cold-starts from the change feed
 * and the redirects while concurrent writers commit, keeps polling from its stored cursors, and once
 * the writers stop and it has drained, its copy equals the catalog: the same live and gone ids per
 * entity type, and every merged id mapped to the final survivor of its chain. Along the way every
 * `updated_at` it receives is no earlier than the one before it.
 *
 * The writers: short updates touching one to three entities (some sleeping inside the transaction),
 * withdrawals and restorations, new tags and engines, merges of works, tags, companies and characters
 * through the merge service (often extending a chain), and "late" transactions that start, wait, then
 * write rows whose own `updated_at` (the transaction's `now()`) is older than changes the mirror has
 * already received, and hold their locks a while before committing. A feed ordered by the writers'
 * timestamps would skip those rows or go back in time; the test checks that such late rows happened
 * and that the mirror still converged with ascending times.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { SqlError } from "effect/sql/SqlError"
import type { TargetObject } from "../../schema/Catalog/Change.js"
import { entityTables } from "../../src/catalog/merge/MergeRepo.js"
import { Merges } from "../../src/catalog/merge/Merges.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
import { sleepReal } from "../support/Problems.js"

const Env = Merges.layer.pipe(Layer.provideMerge(SeededCatalogLive({ works: 400, seed: 23 })))

const objects: ReadonlyArray<TargetObject> = [
  "work",
  "release",
  "character",
  "credit_name",
  "person",
  "company",
  "tag",
  "engine"
]
const WRITE_MS = 8_000

const pick = <A>(xs: ReadonlyArray<A>): A => xs[Math.floor(Math.random() * xs.length)]!
/** `40P01` and `40001`: @effect/sql-pg gives them the reasons `DeadlockError` and `SerializationError`. */
const isRetryable = (e: SqlError) => e.reason._tag === "DeadlockError" || e.reason._tag === "SerializationError"

/** The mirror: what a client keeps, built only from the two feeds. */
interface MirrorState {
  readonly rows: Map<string, { gone: boolean; updated_at: string }>
  readonly redirects: Map<string, string>
  changesCursor: string | undefined
  redirectsCursor: string | undefined
  /** Latest `updated_at` received. */
  maxSeen: string
  /** Rows received with an `updated_at` earlier than one received before (docs/change-feed.md forbids any). */
  inversions: number
  sentFalse: number
}

describe("mirror under concurrent writers (docs/change-feed.md, \"What a mirror can rely on\")", () => {
  it.layer(Env, { timeout: "120 seconds" })((it) => {
    it.effect("cold start + increments while writers commit end identical to the catalog, merges included", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const merges = yield* Merges
        const { get } = yield* Catalog
        let writing = true
        const stats = { updates: 0, withdrawals: 0, created: 0, merges: 0, late: 0, retries: 0 }

        const retrying = <A, R>(effect: Effect.Effect<A, SqlError, R>) =>
          effect.pipe(
            Effect.tapError((e) => Effect.sync(() => isRetryable(e) && stats.retries++)),
            Effect.retry({ while: isRetryable, times: 20 }),
            Effect.orDie
          )
        const touchRow = (object: TargetObject, id: string) =>
          sql`
            UPDATE ${sql(entityTables[object])} SET updated_at = now() WHERE id = ${id}
          `.pipe(
            Effect.andThen(sql`
              SELECT catalog_touch(${object}, x.id, NOT x.live) FROM ${sql(entityTables[object])} x WHERE x.id = ${id}
            `)
          )
        const randomIds = (object: TargetObject, n: number, where = sql.literal("live")) =>
          Effect.map(
            sql<{ id: string }>`
              SELECT id::text AS id FROM ${sql(entityTables[object])} WHERE ${where} ORDER BY random() LIMIT ${n}
            `.pipe(Effect.orDie),
            (rows) => rows.map((r) => r.id)
          )
        const loop = (pauseMs: number, step: Effect.Effect<void>) =>
          Effect.gen(function*() {
            while (writing) {
              yield* step
              yield* sleepReal(pauseMs)
            }
          })

        // Short updates of one to three entities, some sleeping inside the transaction.
        const updater = loop(
          5,
          Effect.gen(function*() {
            const targets: Array<readonly [TargetObject, string]> = []
            for (let i = 1 + Math.floor(Math.random() * 3); i > 0; i--) {
              const object = pick(objects)
              const [id] = yield* randomIds(object, 1, sql.literal("true"))
              if (id !== undefined) targets.push([object, id])
            }
            const hold = Math.random() < 0.3 ? Math.floor(Math.random() * 80) : 0
            yield* retrying(
              Effect.forEach(targets, ([o, id]) => touchRow(o, id), { discard: true }).pipe(
                Effect.andThen(hold > 0 ? sleepReal(hold) : Effect.void),
                sql.withTransaction
              )
            )
            stats.updates += targets.length
          })
        )

        // Withdrawals and restorations of works (gone, then back).
        const withdrawer = loop(
          40,
          Effect.gen(function*() {
            const restore = Math.random() < 0.4
            const [id] = yield* randomIds(
              "work",
              1,
              restore ? sql.literal("withdrawn AND merged_into IS NULL") : sql.literal("live")
            )
            if (id === undefined) return
            yield* retrying(
              sql`UPDATE works SET withdrawn = ${!restore}, updated_at = now() WHERE id = ${id}`.pipe(
                Effect.andThen(touchRow("work", id)),
                sql.withTransaction
              )
            )
            stats.withdrawals++
          })
        )

        // New entities.
        const creator = loop(
          60,
          Effect.gen(function*() {
            yield* retrying(
              Effect.gen(function*() {
                const [tag] = yield* sql<{ id: string }>`
                  INSERT INTO tags (display_name, category) VALUES (${`Mirror tag ${Date.now()}`}, 'content')
                  RETURNING id::text AS id
                `
                yield* sql`SELECT catalog_touch('tag', ${tag!.id}, false)`
                const [engine] = yield* sql<{ id: string }>`
                  INSERT INTO engines (display_name) VALUES (${`Mirror engine ${Date.now()}`}) RETURNING id::text AS id
                `
                yield* sql`SELECT catalog_touch('engine', ${engine!.id}, false)`
              }).pipe(sql.withTransaction)
            )
            stats.created += 2
          })
        )

        // Merges through the merge service, half of them extending the previous chain.
        let lastSurvivor: string | undefined
        const merger = loop(
          80,
          Effect.gen(function*() {
            const object: TargetObject = Math.random() < 0.7 ? "work" : pick(["tag", "company", "character"])
            const [a, b] = yield* randomIds(object, 2)
            if (a === undefined || b === undefined) return
            const from = object === "work" && lastSurvivor !== undefined && Math.random() < 0.5 ? lastSurvivor : a
            const into = from === b ? a : b
            yield* merges.merge(object, from, into).pipe(
              Effect.tap(() =>
                Effect.sync(() => {
                  stats.merges++
                  if (object === "work") lastSurvivor = into
                })
              ),
              Effect.catchTag("MergeRefused", () => Effect.void)
            )
          })
        )

        // Late transactions: start (now() is taken here), wait, write, hold, commit.
        const lateWriter = Effect.gen(function*() {
          yield* sleepReal(1_000)
          while (writing) {
            const ids = yield* randomIds("work", 3)
            yield* sql`SELECT 1`.pipe(
              Effect.andThen(sleepReal(700)),
              Effect.andThen(Effect.forEach(ids, (id) => touchRow("work", id), { discard: true })),
              Effect.andThen(sleepReal(900)),
              sql.withTransaction,
              retrying
            )
            stats.late++
            yield* sleepReal(300)
          }
        })

        const mirror: MirrorState = {
          rows: new Map(),
          redirects: new Map(),
          changesCursor: undefined,
          redirectsCursor: undefined,
          maxSeen: "",
          inversions: 0,
          sentFalse: 0
        }
        /** Pages one feed from the stored cursor to the current end (a cold start when there is none). */
        const pull = (feed: "changes" | "redirects") =>
          Effect.gen(function*() {
            let received = 0
            for (;;) {
              const cursor = feed === "changes" ? mirror.changesCursor : mirror.redirectsCursor
              const res = yield* get(`/v2/catalog/${feed}?limit=100${cursor ? `&cursor=${cursor}` : ""}`)
              expect(res.status, JSON.stringify(res.body)).toBe(200)
              for (const item of res.body.items) {
                received++
                if (feed === "redirects") {
                  mirror.redirects.set(`${item.target_object}/${item.from_id}`, item.current_id)
                  continue
                }
                if ("gone" in item && item.gone !== true) mirror.sentFalse++
                if (item.updated_at < mirror.maxSeen) mirror.inversions++
                else mirror.maxSeen = item.updated_at
                mirror.rows.set(`${item.target_object}/${item.id}`, {
                  gone: item.gone === true,
                  updated_at: item.updated_at
                })
              }
              if (res.body.next_cursor === undefined) return received
              if (feed === "changes") mirror.changesCursor = res.body.next_cursor
              else mirror.redirectsCursor = res.body.next_cursor
            }
          })

        const writers = yield* Effect.all(
          [updater, updater, withdrawer, creator, merger, lateWriter].map((w) => Effect.forkChild(w))
        )
        // Cold start while the writers run, then increments.
        yield* sleepReal(300)
        const coldRows = yield* pull("changes")
        yield* pull("redirects")
        expect(coldRows).toBeGreaterThan(1000)
        let polls = 0
        const deadline = Date.now() + WRITE_MS
        while (Date.now() < deadline) {
          yield* pull("changes")
          yield* pull("redirects")
          polls++
          yield* sleepReal(100)
        }
        writing = false
        for (const fiber of writers) yield* Fiber.join(fiber)

        // Every writer has committed: the next pull is the whole catalog, with no waiting.
        yield* pull("changes")
        yield* pull("redirects")

        // The catalog as it is.
        const truth = new Map<string, boolean>()
        const mergedInto = new Map<string, string>()
        for (const object of objects) {
          const rows = yield* sql<{ id: string; live: boolean; merged_into: string | null }>`
            SELECT id::text AS id, live, merged_into::text AS merged_into FROM ${sql(entityTables[object])}
          `
          for (const row of rows) {
            truth.set(`${object}/${row.id}`, !row.live)
            if (row.merged_into !== null) mergedInto.set(`${object}/${row.id}`, row.merged_into)
          }
        }
        const finalSurvivor = (key: string): string => {
          const [object] = key.split("/")
          let id = mergedInto.get(key)!
          for (let guard = 0; mergedInto.has(`${object}/${id}`); guard++) {
            expect(guard).toBeLessThan(1000)
            id = mergedInto.get(`${object}/${id}`)!
          }
          return id
        }

        console.log(
          `mirror: ${coldRows} rows on cold start, ${polls} polls; writers: ${JSON.stringify(stats)}; ` +
            `${mirror.inversions} updated_at inversions`
        )
        // The writers did what the proof needs.
        expect(stats.merges).toBeGreaterThan(10)
        expect(stats.late).toBeGreaterThan(2)
        expect(stats.withdrawals).toBeGreaterThan(5)
        expect(mirror.inversions).toBe(0)
        expect(mirror.sentFalse).toBe(0)

        // Same live and gone ids per entity type.
        for (const object of objects) {
          const live = (gone: boolean, from: Map<string, { gone: boolean } | boolean>) =>
            [...from].filter(([k, v]) => k.startsWith(`${object}/`) && (typeof v === "boolean" ? v : v.gone) === gone)
              .map(([k]) => k).sort()
          expect(live(false, mirror.rows), `${object} live`).toEqual(live(false, truth))
          expect(live(true, mirror.rows), `${object} gone`).toEqual(live(true, truth))
        }
        expect(mirror.rows.size).toBe(truth.size)
        // Every merged id maps to the final survivor of its chain, and nothing else is mapped.
        expect(mergedInto.size).toBeGreaterThan(stats.merges)
        expect(new Set(mirror.redirects.keys())).toEqual(new Set(mergedInto.keys()))
        for (const key of mergedInto.keys()) expect(mirror.redirects.get(key), key).toBe(finalSurvivor(key))
      }))
  })
})
