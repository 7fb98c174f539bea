/**
 * The change feed and the merge map (docs/change-feed.md; the Change record in
 * schema/Catalog/Change.ts; the list envelope, `limit` and cursors of docs/api-contract.md), over a
 * seeded demo catalog. A committed change is served by the very next read: the tests read right
 * after each commit, never after a pause.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { inject } from "vitest"
import { Change, Redirect } from "../../schema/Catalog/Change.js"
import { Merges } from "../../src/catalog/merge/Merges.js"
import { quoteIdentifier, withPgClient } from "../../src/platform/Database.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
import { expectProblem, sleepReal } from "../support/Problems.js"

const Env = Merges.layer.pipe(Layer.provideMerge(SeededCatalogLive({ works: 300, seed: 11 })))

type Key = "sfw" | "nsfw"

/** Pages a feed from `cursor` until a page has no `next_cursor`; returns the items and the cursor to keep. */
const drain = (
  feed: "changes" | "redirects",
  options: { cursor?: string | undefined; key?: Key; limit?: number } = {}
) =>
  Effect.gen(function*() {
    const { get } = yield* Catalog
    const items: Array<any> = []
    let cursor = options.cursor
    let pages = 0
    for (;;) {
      const query = new URLSearchParams({ limit: String(options.limit ?? 100) })
      if (cursor !== undefined) query.set("cursor", cursor)
      const res = yield* get(`/v2/catalog/${feed}?${query}`, { key: options.key ?? "nsfw" })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      expect(res.body.object).toBe("list")
      pages++
      items.push(...res.body.items)
      if (res.body.items.length > 0) {
        // The feed has no end, only a current end: a page with items always says where to resume.
        expect(res.body.next_cursor).toMatch(/^cur_[A-Za-z0-9._~-]+$/)
      }
      if (res.body.next_cursor === undefined) {
        expect(res.body.items).toEqual([])
        return { items, cursor, pages }
      }
      expect(res.body.next_cursor.length).toBeLessThanOrEqual(512)
      cursor = res.body.next_cursor
    }
  })

/**
 * Every feed item after the first has an `updated_at` no earlier than the item before it
 * (docs/change-feed.md, "What a mirror can rely on": the feed is in ascending update-time order; a
 * mirror may checkpoint on `updated_at`).
 */
const expectAscendingTimes = (items: ReadonlyArray<{ readonly updated_at: string }>, before = "") => {
  let previous = before
  for (const [index, item] of items.entries()) {
    expect(item.updated_at >= previous, `item ${index}: ${item.updated_at} after ${previous}`).toBe(true)
    previous = item.updated_at
  }
}

const key = (object: string, id: string) => `${object}/${id}`

describe("change feed and redirects (docs/change-feed.md, \"What a mirror can rely on\")", () => {
  it.layer(Env, { timeout: "120 seconds" })((it) => {
    it.effect("a cold start lists every entity exactly once in ascending update time, `gone` only ever true (docs/change-feed.md, \"What a mirror can rely on\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ target_object: string; id: string; gone: boolean }>`
          SELECT target_object, id::text AS id, gone FROM catalog_changes
        `
        const { items } = yield* drain("changes", { limit: 37 })
        expect(rows.length).toBeGreaterThan(300)
        expect(items).toHaveLength(rows.length)
        // The seeded history reads forward in time, across page boundaries too.
        expectAscendingTimes(items)
        // ... and keeps its own times (not flattened to one publication moment).
        expect(new Set(items.map((i) => i.updated_at)).size).toBeGreaterThan(100)
        for (const item of items) {
          expect(Schema.is(Change)(item), JSON.stringify(item)).toBe(true)
          expect(item.gone === undefined || item.gone === true, JSON.stringify(item)).toBe(true)
        }
        const seen = items.map((i) => key(i.target_object, i.id))
        expect(new Set(seen).size).toBe(seen.length)
        expect(new Set(seen)).toEqual(new Set(rows.map((r) => key(r.target_object, r.id))))
        const gone = new Set(items.filter((i) => i.gone).map((i) => key(i.target_object, i.id)))
        expect(gone).toEqual(new Set(rows.filter((r) => r.gone).map((r) => key(r.target_object, r.id))))
        // The seeded catalog has merged and withdrawn works: both are gone
        // (docs/change-feed.md, "What a mirror can rely on").
        const notLive = yield* sql<{ id: string }>`SELECT id::text AS id FROM works WHERE NOT live`
        expect(notLive.length).toBeGreaterThan(0)
        for (const { id } of notLive) expect(gone.has(key("work", id)), id).toBe(true)
        // All eight entity types are in the feed.
        expect(new Set(items.map((i) => i.target_object))).toEqual(
          new Set(["work", "release", "character", "credit_name", "person", "company", "tag", "engine"])
        )
      }))

    it.effect("polling with the stored cursor returns only what committed since; a row can come back (docs/change-feed.md, \"What a mirror can rely on\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const cold = yield* drain("changes")
        expect((yield* drain("changes", { cursor: cold.cursor })).items).toEqual([])

        const [work] = yield* sql<{ id: string }>`SELECT id::text AS id FROM works WHERE live ORDER BY id LIMIT 1`
        yield* sql`UPDATE works SET withdrawn = true WHERE id = ${work!.id}`.pipe(
          Effect.andThen(sql`SELECT catalog_touch('work', ${work!.id}, true)`),
          sql.withTransaction
        )
        const first = yield* drain("changes", { cursor: cold.cursor })
        expect(first.items).toEqual([expect.objectContaining({ target_object: "work", id: work!.id, gone: true })])
        expectAscendingTimes(first.items, cold.items.at(-1)!.updated_at)

        yield* sql`UPDATE works SET withdrawn = false WHERE id = ${work!.id}`.pipe(
          Effect.andThen(sql`SELECT catalog_touch('work', ${work!.id}, false)`),
          sql.withTransaction
        )
        const second = yield* drain("changes", { cursor: first.cursor })
        expect(second.items).toHaveLength(1)
        expectAscendingTimes(second.items, first.items[0].updated_at)
        expect(second.items[0]).toEqual({
          object: "change",
          target_object: "work",
          id: work!.id,
          updated_at: expect.any(String)
        })
        expect(Object.keys(second.items[0])).not.toContain("gone")
      }))

    it.effect("changes are served in commit order; a long writer holds back nobody and is not skipped (docs/change-feed.md, \"What a mirror can rely on\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const cold = yield* drain("changes")
        const [a, b] = yield* sql<{ id: string }>`SELECT id::text AS id FROM tags WHERE live ORDER BY id LIMIT 2`
        // The long transaction writes first and commits last.
        const long = yield* Effect.forkChild(
          sql`SELECT catalog_touch('tag', ${a!.id}, false)`.pipe(
            Effect.andThen(sleepReal(1500)),
            sql.withTransaction
          )
        )
        yield* sleepReal(300) // the long transaction has written and is now sleeping inside its transaction
        yield* sql`SELECT catalog_touch('tag', ${b!.id}, false)`.pipe(sql.withTransaction)
        // b committed: it is served at once, although an older writer is still open.
        const during = yield* drain("changes", { cursor: cold.cursor })
        expect(during.items.map((i: any) => i.id)).toEqual([b!.id])
        yield* Fiber.await(long)
        // a committed after b: it comes after b's position, never before the cursor the mirror holds.
        const after = yield* drain("changes", { cursor: during.cursor })
        expect(after.items.map((i: any) => i.id)).toEqual([a!.id])
        expectAscendingTimes([...cold.items.slice(-1), ...during.items, ...after.items])
      }))

    it.effect("a transaction left open in another database of the same server does not hold the feed back (docs/change-feed.md, \"How it works\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const catalog = yield* Catalog
        const admin = Redacted.make(inject("pgAdminUrl"))
        const other = `shiori_feed_neighbour_${process.pid}`
        yield* withPgClient(admin, async (client) => {
          await client.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(other)}`)
          await client.query(`CREATE DATABASE ${quoteIdentifier(other)}`)
        })
        const url = new URL(inject("pgAdminUrl"))
        url.pathname = `/${other}`
        const cold = yield* drain("changes")
        const [tag] = yield* sql<{ id: string }>`SELECT id::text AS id FROM tags WHERE live ORDER BY id DESC LIMIT 1`
        // The neighbour takes a transaction id and sits idle in its transaction (as pg_dump or a seed
        // elsewhere would) while this catalog commits a change.
        const during = yield* withPgClient(Redacted.make(url.toString()), async (neighbour) => {
          await neighbour.query("BEGIN")
          await neighbour.query("CREATE TABLE held (id int)")
          try {
            await Effect.runPromise(sql`SELECT catalog_touch('tag', ${tag!.id}, false)`.pipe(Effect.orDie))
            return await Effect.runPromise(
              drain("changes", { cursor: cold.cursor }).pipe(Effect.provideService(Catalog, catalog))
            )
          } finally {
            await neighbour.query("ROLLBACK")
          }
        })
        expect(during.items.map((i: any) => [i.target_object, i.id])).toEqual([["tag", tag!.id]])
        yield* withPgClient(admin, (client) => client.query(`DROP DATABASE ${quoteIdentifier(other)}`))
      }))

    it.effect("redirects map merged ids to the final survivor and are re-listed when a chain grows (docs/decisions.md, \"Mirroring\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const merges = yield* Merges
        const cold = yield* drain("redirects")
        for (const item of cold.items) expect(Schema.is(Redirect)(item), JSON.stringify(item)).toBe(true)
        const rows = yield* sql<{ target_object: string; from_id: string; current_id: string }>`
          SELECT target_object, from_id::text AS from_id, current_id::text AS current_id FROM catalog_redirects
        `
        expect(rows.length).toBeGreaterThan(0)
        expect(new Set(cold.items.map((i) => `${key(i.target_object, i.from_id)}>${i.current_id}`))).toEqual(
          new Set(rows.map((r) => `${key(r.target_object, r.from_id)}>${r.current_id}`))
        )

        const [x, y, z] = yield* sql<{ id: string }>`
          SELECT id::text AS id FROM works WHERE live AND NOT nsfw ORDER BY id DESC LIMIT 3
        `
        yield* merges.merge("work", x!.id, y!.id)
        const first = yield* drain("redirects", { cursor: cold.cursor })
        expect(first.items).toEqual([
          expect.objectContaining({ object: "redirect", target_object: "work", from_id: x!.id, current_id: y!.id })
        ])
        yield* merges.merge("work", y!.id, z!.id)
        const second = yield* drain("redirects", { cursor: first.cursor })
        expect(second.items.map((i) => [i.from_id, i.current_id]).sort()).toEqual(
          [[x!.id, z!.id], [y!.id, z!.id]].sort()
        )
      }))

    it.effect("an sfw credential sees nsfw works, releases and characters only as gone (docs/change-feed.md, \"What a mirror can rely on\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const sfw = yield* drain("changes", { key: "sfw" })
        const nsfw = yield* drain("changes", { key: "nsfw" })
        // Same rows in the same order: the gate changes what is said about a row, not the positions.
        const common = Math.min(sfw.items.length, nsfw.items.length)
        expect(common).toBeGreaterThan(300)
        expect(sfw.items.slice(0, common).map((i) => key(i.target_object, i.id))).toEqual(
          nsfw.items.slice(0, common).map((i) => key(i.target_object, i.id))
        )
        const flagged = yield* sql<{ target_object: string; id: string }>`
          SELECT 'work' AS target_object, id::text AS id FROM works WHERE nsfw
          UNION ALL SELECT 'release', id::text FROM releases WHERE nsfw
          UNION ALL SELECT 'character', id::text FROM characters WHERE nsfw
        `
        expect(flagged.length).toBeGreaterThan(0)
        const hidden = new Set(flagged.map((r) => key(r.target_object, r.id)))
        for (const item of sfw.items) {
          if (hidden.has(key(item.target_object, item.id))) expect(item.gone, JSON.stringify(item)).toBe(true)
        }
        const liveNsfwForNsfw = nsfw.items.filter((i) => hidden.has(key(i.target_object, i.id)) && i.gone !== true)
        expect(liveNsfwForNsfw.length).toBeGreaterThan(0)

        // Redirects touching an nsfw work are not shown to the sfw credential.
        const merges = yield* Merges
        const [p, q] = yield* sql<
          { id: string }
        >`SELECT id::text AS id FROM works WHERE live AND nsfw ORDER BY id LIMIT 2`
        const before = yield* drain("redirects", { key: "sfw" })
        const beforeNsfw = yield* drain("redirects", { key: "nsfw" })
        yield* merges.merge("work", p!.id, q!.id)
        const all = yield* drain("redirects", { cursor: beforeNsfw.cursor, key: "nsfw" })
        expect((yield* drain("redirects", { key: "sfw", cursor: before.cursor })).items).toEqual([])
        expect(all.items).toContainEqual(expect.objectContaining({ from_id: p!.id, current_id: q!.id }))
        const nsfwWorks = new Set(flagged.filter((r) => r.target_object === "work").map((r) => r.id))
        for (const item of before.items) {
          if (item.target_object === "work") {
            expect(nsfwWorks.has(item.from_id) || nsfwWorks.has(item.current_id), JSON.stringify(item)).toBe(false)
          }
        }
      }))

    it.effect("limit and cursor problems (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const { base, nsfwKey } = yield* Catalog
        const call = (path: string, headers: Record<string, string> = { authorization: `Bearer ${nsfwKey}` }) =>
          Effect.promise(() => fetch(`${base}${path}`, { headers }))
        const tooLarge = yield* call("/v2/catalog/changes?limit=101")
        yield* Effect.promise(() => expectProblem(tooLarge, "LIMIT_TOO_LARGE", "/v2/catalog/changes?limit=101"))
        const tooBig = yield* call("/v2/catalog/redirects?limit=101")
        yield* Effect.promise(() => expectProblem(tooBig, "LIMIT_TOO_LARGE", "/v2/catalog/redirects?limit=101"))
        const zero = yield* call("/v2/catalog/changes?limit=0")
        yield* Effect.promise(() => expectProblem(zero, "INVALID_PARAMETER", "/v2/catalog/changes?limit=0"))
        const garbage = yield* call("/v2/catalog/changes?cursor=cur_garbage")
        yield* Effect.promise(() => expectProblem(garbage, "INVALID_CURSOR", "/v2/catalog/changes?cursor=cur_garbage"))
        // A redirects cursor is not a changes cursor.
        const page = yield* call("/v2/catalog/redirects?limit=1")
        const redirectsCursor = ((yield* Effect.promise(() => page.json())) as any).next_cursor as string
        const foreign = yield* call(`/v2/catalog/changes?cursor=${redirectsCursor}`)
        yield* Effect.promise(() =>
          expectProblem(foreign, "INVALID_CURSOR", `/v2/catalog/changes?cursor=${redirectsCursor}`)
        )
        const anonymous = yield* call("/v2/catalog/changes", {})
        yield* Effect.promise(() => expectProblem(anonymous, "MISSING_CREDENTIAL", "/v2/catalog/changes"))
      }))
  })
})
