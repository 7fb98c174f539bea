/**
 * Engines (schema/Catalog/Engine.ts) and tags on a seeded catalog, against these sections of
 * docs/api-contract.md: cursor and batch lanes ("Records and lists", "Cursors and pages"),
 * `work_count` under the content gate ("Credentials, scopes and the content limit"), the detail
 * reads with ETag ("Caching, ETags and freshness"), merged ids ("Errors: catalog problem documents").
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { EngineId, TagId } from "../../schema/Catalog/Common.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
import { catalogClient, walkPages } from "../support/Clients.js"
import { expectProblem } from "../support/Problems.js"

const problem = (path: string, code: Parameters<typeof expectProblem>[1]) =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const res = yield* Effect.promise(() =>
      fetch(`${catalog.base}${path}`, { headers: { authorization: `Bearer ${catalog.nsfwKey}` } })
    )
    return yield* Effect.promise(() => expectProblem(res, code, path))
  })

const walk = (path: string, key: "sfw" | "nsfw" = "nsfw") =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const items: Array<any> = []
    let cursor: string | undefined
    do {
      const sep = path.includes("?") ? "&" : "?"
      const res = yield* catalog.get(cursor === undefined ? path : `${path}${sep}cursor=${cursor}`, { key })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      items.push(...res.body.items)
      cursor = res.body.next_cursor
    } while (cursor !== undefined)
    return items
  })

describe("engines and tags (schema/Catalog/Engine.ts, schema/Catalog/Tag.ts)", () => {
  it.layer(SeededCatalogLive({ works: 300, seed: 11 }), { timeout: "180 seconds" })((it) => {
    it.effect("engines: every live engine once with work_count under the content gate (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const truth = yield* sql<{ id: string; all: number; sfw: number }>`
          SELECT e.id::text AS id, count(w.id)::int AS all, count(w.id) FILTER (WHERE NOT w.nsfw)::int AS sfw
          FROM engines e LEFT JOIN works w ON w.engine_id = e.id AND w.live
          WHERE e.live GROUP BY e.id ORDER BY e.id`
        expect(truth.some((t) => t.all > t.sfw)).toBe(true)
        const nsfw = yield* walk("/v2/catalog/engines?limit=7")
        const sfwClient = yield* catalogClient("sfw")
        const sfw = yield* walkPages((cursor) =>
          sfwClient.engines.listEngines({ query: { limit: 100, ...(cursor === undefined ? {} : { cursor }) } })
        )
        expect(nsfw.map((e) => [e.id, e.work_count])).toEqual(truth.map((t) => [t.id, t.all]))
        expect(sfw.map((e) => [e.id, e.work_count])).toEqual(truth.map((t) => [t.id, t.sfw]))
        for (const e of nsfw) {
          expect(Object.keys(e).sort()).toEqual([
            "aliases",
            "description",
            "display_name",
            "id",
            "object",
            "work_count"
          ])
        }
        const client = yield* catalogClient()
        expect((yield* client.engines.listEngines({ query: { include_total: true, limit: 1 } })).total).toBe(
          truth.length
        )
      }))

    it.effect("engines: detail with ETag/304, merged and unknown ids, batch lane (docs/api-contract.md, \"Records and lists\", \"Errors: catalog problem documents\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const catalog = yield* Catalog
        const client = yield* catalogClient()
        const [engine, res] = yield* client.engines.getEngine({
          params: { id: EngineId.make("1") },
          responseMode: "decoded-and-response"
        })
        expect(engine).toMatchObject({ object: "engine", id: "1" })
        const etag = res.headers["etag"]!
        expect((yield* catalog.get("/v2/catalog/engines/1", { headers: { "if-none-match": etag } })).status).toBe(304)
        expect(
          (yield* catalog.get("/v2/catalog/engines/1", { headers: { "if-none-match": "\"other\"" } })).status
        ).toBe(200)
        const [merged] = yield* sql<{ id: string; current: string }>`
          SELECT from_id::text AS id, current_id::text AS current FROM catalog_redirects WHERE target_object = 'engine'
          LIMIT 1`
        expect(merged).toBeDefined()
        const body = yield* problem(`/v2/catalog/engines/${merged!.id}`, "ENTITY_MERGED")
        expect(body).toMatchObject({ object: "engine", current_id: merged!.current })
        yield* problem("/v2/catalog/engines/424242", "NOT_FOUND")
        const batch = yield* client.engines.listEngines({ query: { ids: ["2", merged!.id, "1"] } })
        expect(batch.items.map((e) => e.id)).toEqual(["2", "1"])
        expect(batch.missing).toEqual([merged!.id])
      }))

    it.effect("tags: category filter, gated work_count, cursor bound to the filter (docs/api-contract.md, \"Credentials, scopes and the content limit\", \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const truth = yield* sql<{ id: string; category: string; all: number; sfw: number }>`
          SELECT t.id::text AS id, t.category, count(w.id)::int AS all,
            count(w.id) FILTER (WHERE NOT w.nsfw)::int AS sfw
          FROM tags t LEFT JOIN work_tags wt ON wt.tag_id = t.id LEFT JOIN works w ON w.id = wt.work_id AND w.live
          WHERE t.live GROUP BY t.id ORDER BY t.id`
        const tags = (key: "sfw" | "nsfw", category?: "sexual") =>
          Effect.flatMap(catalogClient(key), (client) =>
            walkPages((cursor) =>
              client.tags.listTags({
                query: {
                  limit: 100,
                  ...(category === undefined ? {} : { category }),
                  ...(cursor === undefined ? {} : { cursor })
                }
              })
            ))
        const nsfw = yield* tags("nsfw")
        const sfw = yield* tags("sfw")
        expect(nsfw.map((t) => [t.id, t.work_count])).toEqual(truth.map((t) => [t.id, t.all]))
        expect(sfw.map((t) => [t.id, t.work_count])).toEqual(truth.map((t) => [t.id, t.sfw]))
        // Sexual tags only apply to nsfw works: an sfw credential sees them with a count of 0.
        const sexual = yield* tags("sfw", "sexual")
        expect(sexual.length).toBe(truth.filter((t) => t.category === "sexual").length)
        expect(sexual.every((t) => t.category === "sexual" && t.work_count === 0)).toBe(true)

        const first = yield* (yield* catalogClient()).tags.listTags({
          query: { limit: 3, category: "technical", include_total: true }
        })
        expect(first.total).toBe(truth.filter((t) => t.category === "technical").length)
        yield* problem(`/v2/catalog/tags?limit=3&category=content&cursor=${first.next_cursor}`, "INVALID_CURSOR")
        const bad = yield* problem("/v2/catalog/tags?category=romance", "INVALID_PARAMETER")
        expect(bad.errors).toEqual([
          expect.objectContaining({
            parameter: "category",
            reason: "UNKNOWN_VALUE",
            params: { allowed: ["content", "sexual", "technical"] }
          })
        ])
      }))

    it.effect("tags: detail with ETag/304, merged and unknown ids (docs/api-contract.md, \"Caching, ETags and freshness\", \"Errors: catalog problem documents\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const catalog = yield* Catalog
        const [child] = yield* sql<{ id: string; parent: string }>`
          SELECT id::text AS id, parent_id::text AS parent FROM tags WHERE live AND parent_id IS NOT NULL LIMIT 1`
        const path = `/v2/catalog/tags/${child?.id ?? "1"}`
        const [tag, res] = yield* (yield* catalogClient()).tags.getTag({
          params: { id: TagId.make(child?.id ?? "1") },
          responseMode: "decoded-and-response"
        })
        expect(tag).toMatchObject({ object: "tag", id: child?.id ?? "1", parent_id: child?.parent ?? null })
        const etag = res.headers["etag"]!
        expect((yield* catalog.get(path, { headers: { "if-none-match": `W/${etag}, "x"` } })).status).toBe(304)
        const [merged] = yield* sql<{ id: string; current: string }>`
          SELECT from_id::text AS id, current_id::text AS current FROM catalog_redirects WHERE target_object = 'tag'
          LIMIT 1`
        expect(merged).toBeDefined()
        expect(yield* problem(`/v2/catalog/tags/${merged!.id}`, "ENTITY_MERGED")).toMatchObject({
          object: "tag",
          current_id: merged!.current
        })
        yield* problem("/v2/catalog/tags/99999999999999999999", "NOT_FOUND")
        yield* problem("/v2/catalog/tags/abc", "INVALID_PARAMETER")
      }))
  })
})
