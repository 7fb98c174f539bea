/**
 * The change feed and the merge map (SPEC 6, SPEC 2.7 Change, SPEC 2.2 list envelope, SPEC 4.1 rules
 * 1 and 8, DECISIONS 4, 6 and 8), over a seeded demo catalog.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Schema } from "effect"
import { Change, Redirect } from "../../schema/Catalog/Change.js"
import { Merges } from "../../src/catalog/merge/Merges.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
import { expectProblem, sleepReal } from "../support/Problems.js"

const Env = Merges.Default.pipe(Layer.provideMerge(SeededCatalogLive({ works: 300, seed: 11 })))

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
 * Polls a feed from `cursor` until `count` items arrived. Transactions of other test files share the
 * PostgreSQL cluster and may hold the watermark back for a moment (DECISIONS 8: a long writer delays
 * the feed), so a just-committed change is "eventually" served, not necessarily at once.
 */
const poll = (feed: "changes" | "redirects", cursor: string | undefined, count: number, key: Key = "nsfw") =>
  Effect.gen(function*() {
    const items: Array<any> = []
    const deadline = Date.now() + 20_000
    for (;;) {
      const page = yield* drain(feed, { ...(cursor === undefined ? {} : { cursor }), key })
      items.push(...page.items)
      cursor = page.cursor
      if (items.length >= count || Date.now() > deadline) return { items, cursor }
      yield* sleepReal(50)
    }
  })

const key = (object: string, id: string) => `${object}/${id}`

describe("change feed and redirects (SPEC 6, DECISIONS 8)", () => {
  it.layer(Env, { timeout: "120 seconds" })((it) => {
    it.effect("SPEC 6 / 2.7: a cold start lists every entity exactly once, `gone` only ever true", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ target_object: string; id: string; gone: boolean }>`
          SELECT target_object, id::text AS id, gone FROM catalog_changes
        `
        const { items } = yield* poll("changes", undefined, rows.length)
        expect(rows.length).toBeGreaterThan(300)
        for (const item of items) {
          expect(Schema.is(Change)(item), JSON.stringify(item)).toBe(true)
          expect(item.gone === undefined || item.gone === true, JSON.stringify(item)).toBe(true)
        }
        const seen = items.map((i) => key(i.target_object, i.id))
        expect(new Set(seen).size).toBe(seen.length)
        expect(new Set(seen)).toEqual(new Set(rows.map((r) => key(r.target_object, r.id))))
        const gone = new Set(items.filter((i) => i.gone).map((i) => key(i.target_object, i.id)))
        expect(gone).toEqual(new Set(rows.filter((r) => r.gone).map((r) => key(r.target_object, r.id))))
        // The seeded catalog has merged and withdrawn works: both are gone (DECISIONS 8).
        const notLive = yield* sql<{ id: string }>`SELECT id::text AS id FROM works WHERE NOT live`
        expect(notLive.length).toBeGreaterThan(0)
        for (const { id } of notLive) expect(gone.has(key("work", id)), id).toBe(true)
        // All eight entity types are in the feed.
        expect(new Set(items.map((i) => i.target_object))).toEqual(
          new Set(["work", "release", "character", "credit_name", "person", "company", "tag", "engine"])
        )
      }))

    it.effect("SPEC 6: polling with the stored cursor returns only what committed since; a row can come back", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const cold = yield* drain("changes")
        expect((yield* drain("changes", { cursor: cold.cursor })).items).toEqual([])

        const [work] = yield* sql<{ id: string }>`SELECT id::text AS id FROM works WHERE live ORDER BY id LIMIT 1`
        yield* sql`UPDATE works SET withdrawn = true WHERE id = ${work!.id}`.pipe(
          Effect.zipRight(sql`SELECT catalog_touch('work', ${work!.id}, true)`),
          sql.withTransaction
        )
        const first = yield* poll("changes", cold.cursor, 1)
        expect(first.items).toEqual([expect.objectContaining({ target_object: "work", id: work!.id, gone: true })])

        yield* sql`UPDATE works SET withdrawn = false WHERE id = ${work!.id}`.pipe(
          Effect.zipRight(sql`SELECT catalog_touch('work', ${work!.id}, false)`),
          sql.withTransaction
        )
        const second = yield* poll("changes", first.cursor, 1)
        expect(second.items).toHaveLength(1)
        expect(second.items[0]).toEqual({
          object: "change",
          target_object: "work",
          id: work!.id,
          updated_at: expect.any(String)
        })
        expect(Object.keys(second.items[0])).not.toContain("gone")
      }))

    it.effect("DECISIONS 8: a change is not served until every older transaction has finished", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const { get } = yield* Catalog
        const cold = yield* drain("changes")
        const [a, b] = yield* sql<{ id: string }>`SELECT id::text AS id FROM tags WHERE live ORDER BY id LIMIT 2`
        // The long transaction takes its id first and commits last.
        const long = yield* Effect.fork(
          sql`SELECT catalog_touch('tag', ${a!.id}, false)`.pipe(
            Effect.zipRight(sleepReal(1500)),
            sql.withTransaction
          )
        )
        yield* sleepReal(300)
        yield* sql`SELECT catalog_touch('tag', ${b!.id}, false)`.pipe(sql.withTransaction)
        // b committed, but a's transaction is older and still open: nothing is served yet.
        const during = yield* get(`/v2/catalog/changes?limit=100&cursor=${cold.cursor}`)
        expect(during.body.items).toEqual([])
        yield* long.await
        const after = yield* poll("changes", cold.cursor, 2)
        expect(after.items.map((i: any) => i.id)).toEqual([a!.id, b!.id])
      }))

    it.effect("DECISIONS 8: redirects map merged ids to the final survivor and are re-listed when a chain grows", () =>
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
        const first = yield* poll("redirects", cold.cursor, 1)
        expect(first.items).toEqual([
          expect.objectContaining({ object: "redirect", target_object: "work", from_id: x!.id, current_id: y!.id })
        ])
        yield* merges.merge("work", y!.id, z!.id)
        const second = yield* poll("redirects", first.cursor, 2)
        expect(second.items.map((i) => [i.from_id, i.current_id]).sort()).toEqual(
          [[x!.id, z!.id], [y!.id, z!.id]].sort()
        )
      }))

    it.effect("DECISIONS 4: an sfw credential sees nsfw works, releases and characters only as gone", () =>
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
        const all = yield* poll("redirects", beforeNsfw.cursor, 1, "nsfw")
        expect((yield* drain("redirects", { key: "sfw", cursor: before.cursor })).items).toEqual([])
        expect(all.items).toContainEqual(expect.objectContaining({ from_id: p!.id, current_id: q!.id }))
        const nsfwWorks = new Set(flagged.filter((r) => r.target_object === "work").map((r) => r.id))
        for (const item of before.items) {
          if (item.target_object === "work") {
            expect(nsfwWorks.has(item.from_id) || nsfwWorks.has(item.current_id), JSON.stringify(item)).toBe(false)
          }
        }
      }))

    it.effect("SPEC 4.1 rules 1 and 8, DECISIONS 6: limit and cursor problems", () =>
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
