/**
 * Page mode at its depth limit (docs/api-contract.md, "Cursors and pages": `page * limit` at most
 * 10,000) and search cursors past the search lane's cached depth, over a catalog of 11,000 works.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
import { expectProblem } from "../support/Problems.js"

const get = (path: string) =>
  Effect.gen(function*() {
    const c = yield* Catalog
    const res = yield* c.get(path)
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    return res.body as any
  })

const problem = (path: string) =>
  Effect.gen(function*() {
    const c = yield* Catalog
    const res = yield* Effect.promise(() =>
      fetch(`${c.base}${path}`, { headers: { authorization: `Bearer ${c.nsfwKey}` } })
    )
    return yield* Effect.promise(() => expectProblem(res, "INVALID_PARAMETER", path))
  })

describe("works at depth (docs/api-contract.md, \"Cursors and pages\")", () => {
  it.layer(SeededCatalogLive({ works: 11_000, seed: 3 }), { timeout: "600 seconds" })((it) => {
    it.effect("beyond 10000 matches, total is a lower bound (gte) and the last page is 10000/limit (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [{ n }] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM works WHERE live`
        expect(n).toBeGreaterThan(10_000)
        for (const query of ["sort=popularity", "q=a", "facets=olang"]) {
          const first = yield* get(`/v2/catalog/works?${query}&page=1&limit=100`)
          expect(first.total, query).toBe(10_000)
          expect(first.total_relation, query).toBe("gte")
          expect(first.next_cursor).toBeUndefined()
          const last = yield* get(`/v2/catalog/works?${query}&page=500&limit=20`)
          expect(last.items, query).toHaveLength(20)
          const p = yield* problem(`/v2/catalog/works?${query}&page=334&limit=30`)
          expect(p.errors).toEqual([{
            parameter: "page",
            reason: "OUT_OF_RANGE",
            detail: expect.any(String),
            params: { minimum: 1, maximum: 333 }
          }])
        }
        // The exact total of the cursor lanes is not capped.
        expect((yield* get("/v2/catalog/works?include_total=true&limit=1")).total).toBe(n)
      }))

    it.effect("a search cursor walks past the cached depth without skipping or repeating (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const expected = (yield* sql<{ id: string }>`
          SELECT w.id::text AS id FROM work_search s JOIN works w ON w.id = s.work_id
          WHERE w.live AND strpos(s.norm, 'a') > 0`).map((r) => r.id)
        expect(expected.length).toBeGreaterThan(10_001)
        const counted = yield* get("/v2/catalog/search?q=a&include_total=true&limit=1")
        expect(counted.total).toBe(expected.length)
        for (const sort of ["popularity", "relevance"]) {
          const seen: Array<string> = []
          let cursor: string | undefined
          let previous: number | undefined
          do {
            const body: any = yield* get(
              `/v2/catalog/search?q=a&sort=${sort}&limit=100${cursor ? `&cursor=${cursor}` : ""}`
            )
            for (const w of body.items) {
              if (sort === "popularity" && previous !== undefined) expect(w.popularity).toBeLessThanOrEqual(previous)
              previous = w.popularity
              seen.push(w.id)
            }
            cursor = body.next_cursor
          } while (cursor !== undefined)
          expect(new Set(seen).size, sort).toBe(seen.length)
          expect([...seen].sort(), sort).toEqual([...expected].sort())
        }
      }))
  })
})
