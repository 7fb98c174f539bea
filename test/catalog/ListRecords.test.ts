/**
 * Every list the catalog serves, over real HTTP on a seeded catalog: its items are records that
 * carry their fixed `object` (docs/api-contract.md, "Records and lists"), and a cursor answers only
 * the collection that issued it (docs/api-contract.md, "Cursors and pages").
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { OpenApi } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { CatalogApiDocumented } from "../../schema/Api/CatalogApi.js"
import { Catalog, problem, SeededCatalogLive } from "../support/Catalog.js"
import { serverLayerOptions } from "../support/TestServers.js"

const spec = OpenApi.fromApi(CatalogApiDocumented) as any

/** A JSON schema with `$ref`s (and single-member `allOf` wrappers) followed. */
const resolve = (schema: any): any => {
  if (schema?.$ref !== undefined) return resolve(spec.components.schemas[schema.$ref.split("/").pop()])
  if (Array.isArray(schema?.allOf) && schema.allOf.length === 1) return resolve(schema.allOf[0])
  return schema
}

/** The single value a property schema allows, if it allows exactly one. */
const literal = (schema: any): unknown => {
  const resolved = resolve(schema)
  if (resolved?.const !== undefined) return resolved.const
  return Array.isArray(resolved?.enum) && resolved.enum.length === 1 ? resolved.enum[0] : undefined
}

/** Every GET whose 200 body is a list envelope, with the `object` its items must carry (if the schema fixes one). */
const lists: ReadonlyArray<{ readonly path: string; readonly itemObject: unknown }> = Object.entries(
  spec.paths as Record<string, any>
).flatMap(([path, item]) => {
  const body = resolve(item.get?.responses?.["200"]?.content?.["application/json"]?.schema)
  if (literal(body?.properties?.object) !== "list") return []
  const entry = resolve(resolve(body.properties.items).items)
  return [{
    path,
    itemObject: entry?.required?.includes("object") ? literal(entry.properties?.object) : undefined
  }]
})

/** The collections paged by id whose cursors must not cross: same sort, and (unfiltered) the same filters. */
const idOrdered = [
  "/v2/catalog/characters",
  "/v2/catalog/persons",
  "/v2/catalog/credit-names",
  "/v2/catalog/companies",
  "/v2/catalog/engines",
  "/v2/catalog/tags",
  "/v2/catalog/releases",
  "/v2/catalog/works"
]

describe("catalog lists", () => {
  it("the OpenAPI document gives every list item a required `object` literal (docs/api-contract.md, \"Records and lists\")", () => {
    expect(lists.map((l) => l.path)).toEqual(expect.arrayContaining(["/v2/problems/reasons", ...idOrdered]))
    for (const { itemObject, path } of lists) expect(itemObject, path).toEqual(expect.any(String))
  })

  it.layer(SeededCatalogLive({ works: 120 }), serverLayerOptions("180 seconds"))((it) => {
    it.effect("list items are records: each carries `object` (docs/api-contract.md, \"Records and lists\")", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const [work] = yield* sql<{ id: string }>`
          SELECT w.id::text AS id FROM works w
          WHERE w.live
            AND EXISTS (SELECT 1 FROM covers v WHERE v.work_id = w.id)
            AND EXISTS (SELECT 1 FROM entity_intros n WHERE n.entity_type = 'work' AND n.entity_id = w.id)
            AND EXISTS (SELECT 1 FROM credits r JOIN credit_names cn ON cn.id = r.credit_name_id AND cn.live
              WHERE r.work_id = w.id)
            AND EXISTS (SELECT 1 FROM work_characters wc JOIN characters ch ON ch.id = wc.character_id AND ch.live
              WHERE wc.work_id = w.id)
          ORDER BY w.id LIMIT 1`
        const [character] = yield* sql<{ id: string }>`
          SELECT wc.character_id::text AS id FROM work_characters wc
          JOIN works w ON w.id = wc.work_id AND w.live JOIN characters ch ON ch.id = wc.character_id AND ch.live
          ORDER BY wc.character_id LIMIT 1`
        const [name] = yield* sql<{ id: string }>`
          SELECT r.credit_name_id::text AS id FROM credits r
          JOIN works w ON w.id = r.work_id AND w.live JOIN credit_names cn ON cn.id = r.credit_name_id AND cn.live
          ORDER BY r.credit_name_id LIMIT 1`
        expect([work, character, name]).not.toContain(undefined)
        const ids: Record<string, string> = {
          "/v2/catalog/works/{id}": work!.id,
          "/v2/catalog/characters/{id}": character!.id,
          "/v2/catalog/credit-names/{id}": name!.id
        }
        // Lists that can be empty on a fresh seed get a query that is not.
        const query: Record<string, string> = { "/v2/catalog/calendar": "?window=undated" }
        const checked: Array<string> = []
        // Claim lists need a user's credential and claims to show; test/claims/Claims.test.ts checks their items.
        // Proposal, amendment and revision lists need a user's credential and merged proposals to show;
        // test/proposals/ProposalRules.test.ts checks their items. A work's cover votes need a user's
        // credential and votes to show; test/votes/CoverVotes.test.ts checks their items.
        // News lists need news items, which only a site's post makes; test/news/News.test.ts checks their items.
        // The playtime list is the bearer's own: it needs a user's credential; test/playtimes/Playtimes.test.ts
        // checks its items.
        const writeLists = [
          "/v2/claims",
          "/v2/moderation/claims",
          "/v2/catalog/claim-events",
          "/v2/proposals",
          "/v2/moderation/proposals",
          "/v2/proposals/{id}/amendments",
          "/v2/catalog/{collection}/{id}/revisions",
          "/v2/catalog/works/{id}/cover-votes",
          "/v2/news",
          "/v2/catalog/works/{id}/news",
          "/v2/playtimes"
        ]
        expect(lists.map((l) => l.path)).toEqual(expect.arrayContaining(writeLists))
        for (const { itemObject, path } of lists.filter((l) => !writeLists.includes(l.path))) {
          const url = path.replace(/^(.*)\/\{id\}/, (parent: string) => {
            const id = ids[parent]
            expect(id, `an id for ${path}`).toBeDefined()
            return parent.replace("{id}", id!)
          }) + (query[path] ?? "")
          const res = yield* c.get(url)
          expect(res.status, `${url}: ${JSON.stringify(res.body)}`).toBe(200)
          expect(res.body.object, url).toBe("list")
          // The merge map of a fresh seed may be empty; every other list must show its items.
          if (path !== "/v2/catalog/redirects") expect(res.body.items.length, url).toBeGreaterThan(0)
          for (const item of res.body.items) expect(item.object, url).toBe(itemObject)
          checked.push(path)
        }
        expect(checked).toContain("/v2/problems/reasons")
        const reasons = yield* c.get("/v2/problems/reasons", { key: "none" })
        expect(reasons.body.items.map((item: any) => item.object)).toEqual(
          reasons.body.items.map(() => "reason")
        )
      }))

    it.effect("a cursor of one id-ordered collection is INVALID_CURSOR on every other (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        const cursors = new Map<string, string>()
        for (const path of idOrdered) {
          const res = yield* c.get(`${path}?limit=1`)
          expect(res.status, path).toBe(200)
          expect(res.body.next_cursor, path).toEqual(expect.any(String))
          cursors.set(path, res.body.next_cursor)
          // The cursor is good where it was issued.
          const again = yield* c.get(`${path}?limit=1&cursor=${res.body.next_cursor}`)
          expect(again.status, path).toBe(200)
        }
        for (const [issuer, cursor] of cursors) {
          for (const path of idOrdered) {
            if (path === issuer) continue
            const body = yield* problem(`${path}?limit=1&cursor=${cursor}`, "INVALID_CURSOR")
            expect(body.errors, `${issuer} -> ${path}`).toEqual([expect.objectContaining({ parameter: "cursor" })])
          }
        }
      }))
  })
})
