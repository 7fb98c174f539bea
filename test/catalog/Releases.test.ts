/**
 * Releases on a seeded catalog, against these sections of docs/api-contract.md:
 * "Records and lists" and "Cursors and pages" (the cursor lane with `work_id=`, the batch lane),
 * "Credentials, scopes and the content limit" (the content gate: neither nsfw releases nor releases
 * of nsfw works for an `sfw` credential),
 * "Caching, ETags and freshness" (ETag) and
 * "Errors: catalog problem documents" (merged ids);
 * and partial dates, companies with roles, includes.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { ReleaseId, WorkId } from "../../schema/Catalog/Common.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
import { catalogClient, fresh, walkPages } from "../support/Clients.js"
import { expectProblem } from "../support/Problems.js"

const problem = (path: string, code: Parameters<typeof expectProblem>[1], key: "sfw" | "nsfw" = "nsfw") =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const token = key === "sfw" ? catalog.sfwKey : catalog.nsfwKey
    const res = yield* Effect.promise(() =>
      fetch(`${catalog.base}${path}`, { headers: { authorization: `Bearer ${token}` } })
    )
    return yield* Effect.promise(() => expectProblem(res, code, path))
  })

/** Every release the list answers for `query`, page after page, decoded (docs/api-contract.md, "Cursors and pages"). */
const walk = (query: { readonly limit: number; readonly work_id?: string }, key: "sfw" | "nsfw" = "nsfw") =>
  Effect.flatMap(catalogClient(key), (client) =>
    walkPages((cursor) =>
      client.releases.listReleases({
        query: {
          limit: query.limit,
          ...(query.work_id === undefined ? {} : { work_id: WorkId.make(query.work_id) }),
          ...(cursor === undefined ? {} : { cursor })
        }
      })
    ))

interface Truth {
  readonly id: string
  readonly work_id: string
  readonly released: string | null
  readonly r_nsfw: boolean
  readonly w_nsfw: boolean
}

const truth = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<Truth>`
    SELECT r.id::text AS id, r.work_id::text AS work_id, r.nsfw AS r_nsfw, w.nsfw AS w_nsfw,
      CASE WHEN r.released_year IS NULL THEN NULL
        WHEN r.released_month IS NULL THEN r.released_year::text
        WHEN r.released_day IS NULL THEN r.released_year || '-' || lpad(r.released_month::text, 2, '0')
        ELSE r.released_year || '-' || lpad(r.released_month::text, 2, '0') || '-' || lpad(r.released_day::text, 2, '0')
      END AS released
    FROM releases r JOIN works w ON w.id = r.work_id
    WHERE r.live AND w.live ORDER BY r.id`
})

describe("releases", () => {
  it.layer(SeededCatalogLive({ works: 300, seed: 5 }), { timeout: "180 seconds" })((it) => {
    it.effect("cursor lane: every visible release once, in id order, with its partial date (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const rows = yield* truth
        const all = yield* walk({ limit: 100 })
        expect(all.map((r) => [r.id, r.work_id, r.released])).toEqual(rows.map((r) => [r.id, r.work_id, r.released]))
        expect(all.some((r) => r.released?.length === 4)).toBe(true)
        expect(all.some((r) => r.released?.length === 7)).toBe(true)
        expect(all.some((r) => r.released === null)).toBe(true)
        const sfw = yield* walk({ limit: 100 }, "sfw")
        const visible = rows.filter((r) => !r.r_nsfw && !r.w_nsfw)
        expect(sfw.map((r) => r.id)).toEqual(visible.map((r) => r.id))
        // An all-ages edition of an nsfw work would still name that work: hidden too.
        expect(rows.some((r) => !r.r_nsfw && r.w_nsfw)).toBe(true)
        expect(sfw.every((r) => r.content_rating === "sfw")).toBe(true)
      }))

    it.effect("work_id= narrows to one work's releases; the cursor is bound to it (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const rows = yield* truth
        const counts = new Map<string, number>()
        for (const r of rows) counts.set(r.work_id, (counts.get(r.work_id) ?? 0) + 1)
        const [workId] = [...counts.entries()].sort((a, b) => b[1] - a[1])[0]!
        const catalog = yield* Catalog
        const page = yield* walk({ work_id: workId, limit: 1 })
        expect(page.map((r) => r.id)).toEqual(rows.filter((r) => r.work_id === workId).map((r) => r.id))
        const client = yield* catalogClient()
        const first = yield* client.releases.listReleases({ query: { work_id: WorkId.make(workId), limit: 1 } })
        yield* problem(`/v2/catalog/releases?limit=1&cursor=${first.next_cursor}`, "INVALID_CURSOR")
        const nsfwWork = rows.find((r) => r.w_nsfw)!.work_id
        const sfwClient = yield* catalogClient("sfw")
        expect((yield* sfwClient.releases.listReleases({ query: { work_id: WorkId.make(nsfwWork) } })).items).toEqual(
          []
        )
        expect((yield* catalog.get("/v2/catalog/releases?work_id=99999999999999999999")).body).toEqual({
          object: "list",
          items: []
        })
        const mixed = yield* problem(`/v2/catalog/releases?ids=1&work_id=${workId}`, "INVALID_PARAMETER")
        expect(mixed.errors).toEqual([expect.objectContaining({ parameter: "work_id", reason: "INCONSISTENT_WITH" })])
      }))

    it.effect("batch lane: invisible under the gate and merged ids are missing (docs/api-contract.md, \"Records and lists\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const rows = yield* truth
        const nsfwRelease = rows.find((r) => r.r_nsfw)!.id
        const [merged] = yield* sql<{ id: string }>`
          SELECT from_id::text AS id FROM catalog_redirects WHERE target_object = 'release' LIMIT 1`
        const ids = [rows[0]!.id, nsfwRelease, merged!.id]
        const nsfw = yield* (yield* catalogClient()).releases.listReleases({ query: { ids } })
        expect(nsfw.items.map((r) => r.id)).toEqual([rows[0]!.id, nsfwRelease])
        expect(nsfw.missing).toEqual([merged!.id])
        const sfw = yield* (yield* catalogClient("sfw")).releases.listReleases({ query: { ids } })
        expect(sfw.missing).toEqual([nsfwRelease, merged!.id])
      }))

    it.effect("detail: companies with roles, refs and links includes, ETag/304, 404s (docs/api-contract.md, \"Caching, ETags and freshness\", \"Errors: catalog problem documents\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [withRef] = yield* sql<{ id: string }>`
          SELECT r.id::text AS id FROM releases r JOIN works w ON w.id = r.work_id
          WHERE r.live AND w.live AND NOT w.nsfw
            AND EXISTS (SELECT 1 FROM entity_refs e WHERE e.entity_type = 'release' AND e.entity_id = r.id)
          ORDER BY r.id LIMIT 1`
        const companies = yield* sql<{ company_id: string; developer: boolean; publisher: boolean }>`
          SELECT company_id::text AS company_id, developer, publisher FROM release_companies
          WHERE release_id = ${withRef!.id}`
        const catalog = yield* Catalog
        const path = `/v2/catalog/releases/${withRef!.id}?include=refs,links`
        const [answer, res] = yield* (yield* catalogClient("sfw")).releases.getRelease({
          params: { id: ReleaseId.make(withRef!.id) },
          query: { include: ["refs", "links"] },
          responseMode: "decoded-and-response"
        })
        const release = fresh(answer)
        expect(release.refs?.length).toBeGreaterThan(0)
        expect(Array.isArray(release.links)).toBe(true)
        expect(release.companies.map((c) => [c.company.id, c.roles]).sort()).toEqual(
          companies.map((c) => [
            c.company_id,
            [...(c.developer ? ["developer"] : []), ...(c.publisher ? ["publisher"] : [])]
          ]).sort()
        )
        const bare = yield* catalog.get(`/v2/catalog/releases/${withRef!.id}`)
        expect(bare.body.refs).toBeUndefined()
        expect(bare.body.links).toBeUndefined()
        const etag = res.headers["etag"]!
        expect((yield* catalog.get(path, { key: "sfw", headers: { "if-none-match": etag } })).status).toBe(304)

        const rows = yield* truth
        yield* problem(`/v2/catalog/releases/${rows.find((r) => r.r_nsfw)!.id}`, "NOT_FOUND", "sfw")
        const [merged] = yield* sql<{ id: string; current: string }>`
          SELECT from_id::text AS id, current_id::text AS current FROM catalog_redirects
          WHERE target_object = 'release' LIMIT 1`
        expect(yield* problem(`/v2/catalog/releases/${merged!.id}`, "ENTITY_MERGED")).toMatchObject({
          object: "release",
          current_id: merged!.current
        })
        const bad = yield* problem("/v2/catalog/releases/1?include=covers", "UNKNOWN_INCLUDE")
        expect(bad.errors[0]!.params).toEqual({ allowed: ["refs", "links"] })
      }))
  })
})
