/**
 * Companies (schema/Catalog/Company.ts) on a seeded catalog, against these sections of
 * docs/api-contract.md:
 * "Records and lists" and "Cursors and pages" (the cursor and batch lanes, includes per lane),
 * "Credentials, scopes and the content limit" (`work_count` under the content gate),
 * "Caching, ETags and freshness" (the detail read's ETag) and
 * "Errors: catalog problem documents" (merged ids);
 * and the family graph (schema/Catalog/Company.ts: 60 nodes, 4 hops, `truncated`, no inverse
 * edges), checked against a breadth-first walk over the tables.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { CompanyId } from "../../schema/Catalog/Common.js"
import type { CatalogClient } from "../../schema/Client.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
import { catalogClient, fresh, walkPages } from "../support/Clients.js"
import { expectProblem } from "../support/Problems.js"

const raw = (path: string, key: "sfw" | "nsfw" = "nsfw") =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const token = key === "sfw" ? catalog.sfwKey : catalog.nsfwKey
    return yield* Effect.promise(() =>
      fetch(`${catalog.base}${path}`, { headers: { authorization: `Bearer ${token}` } })
    )
  })

const problem = (path: string, code: Parameters<typeof expectProblem>[1], key: "sfw" | "nsfw" = "nsfw") =>
  Effect.flatMap(raw(path, key), (res) => Effect.promise(() => expectProblem(res, code, path)))

/**
 * Every page of a cursor list, following `next_cursor` until it is absent (docs/api-contract.md,
 * "Cursors and pages").
 */
const walk = (path: string, key: "sfw" | "nsfw" = "nsfw") =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const items: Array<any> = []
    let cursor: string | undefined
    for (let pages = 0; pages < 1000; pages++) {
      const sep = path.includes("?") ? "&" : "?"
      const res = yield* catalog.get(cursor === undefined ? path : `${path}${sep}cursor=${cursor}`, { key })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      items.push(...res.body.items)
      cursor = res.body.next_cursor
      if (cursor === undefined) return items
    }
    throw new Error("no end")
  })

interface Family {
  readonly live: Set<string>
  readonly edges: ReadonlyArray<{ from_id: string; to_id: string; relation: string }>
}

const family = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const live = yield* sql<{ id: string }>`SELECT id::text AS id FROM companies WHERE live`
  const edges = yield* sql<{ from_id: string; to_id: string; relation: string }>`
    SELECT from_id::text AS from_id, to_id::text AS to_id, relation FROM company_relations`
  return { live: new Set(live.map((r) => r.id)), edges } satisfies Family
})

/** The reference walk: breadth-first both ways through live companies; nearest 60 within 4 hops. */
const expectedGraph = (f: Family, start: string) => {
  const neighbours = new Map<string, Array<string>>()
  for (const e of f.edges) {
    if (!f.live.has(e.from_id) || !f.live.has(e.to_id)) continue
    neighbours.set(e.from_id, [...(neighbours.get(e.from_id) ?? []), e.to_id])
    neighbours.set(e.to_id, [...(neighbours.get(e.to_id) ?? []), e.from_id])
  }
  const depth = new Map([[start, 0]])
  let frontier = [start]
  for (let d = 1; frontier.length > 0; d++) {
    const next: Array<string> = []
    for (const id of frontier) {
      for (const n of neighbours.get(id) ?? []) {
        if (!depth.has(n)) {
          depth.set(n, d)
          next.push(n)
        }
      }
    }
    frontier = next
  }
  const nodes = [...depth.entries()]
    .filter(([, d]) => d <= 4)
    .sort(([a, da], [b, db]) => da - db || Number(a) - Number(b))
    .slice(0, 60)
    .map(([id]) => id)
  const chosen = new Set(nodes)
  const edges = f.edges.filter((e) => chosen.has(e.from_id) && chosen.has(e.to_id))
  return { nodes, edges, truncated: depth.size > nodes.length, depth }
}

const sortEdges = (edges: ReadonlyArray<{ from_id: string; to_id: string; relation: string }>) =>
  [...edges].map((e) => `${e.from_id}-${e.relation}->${e.to_id}`).sort()

describe("companies (schema/Catalog/Company.ts)", () => {
  it.layer(SeededCatalogLive({ works: 300, seed: 7 }), { timeout: "180 seconds" })((it) => {
    it.effect("cursor lane: every live company once, in id order; include_total agrees (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const expected = yield* sql<
          { id: string }
        >`SELECT id::text AS id FROM companies WHERE live ORDER BY companies.id`
        const items = yield* walk("/v2/catalog/companies?limit=37")
        expect(items.map((c) => c.id)).toEqual(expected.map((r) => r.id))
        const catalog = yield* Catalog
        const first = yield* catalog.get("/v2/catalog/companies?include_total=true&limit=1")
        expect(first.body.total).toBe(expected.length)
        // An exact multiple of limit still ends with a page without next_cursor, not an empty guess.
        const all = yield* catalog.get(`/v2/catalog/companies?company_kind=group&limit=100`)
        expect(all.body.items.every((c: any) => c.company_kind === "group")).toBe(true)
      }))

    it.effect("includes: aliases and logo on every lane; intros and links only on detail and batch (schema/Catalog/Company.ts)", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [withIntro] = yield* sql<{ id: string }>`
          SELECT c.id::text AS id FROM companies c
          WHERE c.live AND EXISTS (SELECT 1 FROM entity_intros i WHERE i.entity_type = 'company' AND i.entity_id = c.id)
            AND EXISTS (SELECT 1 FROM entity_links l WHERE l.entity_type = 'company' AND l.entity_id = c.id)
          ORDER BY c.id LIMIT 1`
        const [withLogo] = yield* sql<{ id: string }>`
          SELECT entity_id::text AS id FROM entity_images WHERE entity_type = 'company' AND slot = 'logo'
          ORDER BY entity_id LIMIT 1`
        const catalog = yield* Catalog
        const include = "include=aliases,intros,links,logo"
        const list = yield* walk(`/v2/catalog/companies?limit=100&${include}`)
        for (const c of list) {
          expect(c.intros).toBeUndefined()
          expect(c.links).toBeUndefined()
          expect(Array.isArray(c.aliases)).toBe(true)
        }
        expect(list.find((c) => c.id === withLogo!.id).logo.hash).toMatch(/^[0-9a-f]{64}$/)
        expect(list.filter((c) => c.logo !== undefined).length).toBeLessThan(list.length)

        const batch = yield* catalog.get(`/v2/catalog/companies?ids=${withIntro!.id},${withLogo!.id}&${include}`)
        expect(batch.body.items[0].intros.length).toBeGreaterThan(0)
        expect(batch.body.items[0].links.length).toBeGreaterThan(0)
        expect(batch.body.items[1].logo).toBeDefined()

        const detail = yield* catalog.get(`/v2/catalog/companies/${withIntro!.id}?${include}`)
        expect(detail.body.intros).toEqual(batch.body.items[0].intros)
        expect(detail.body.links).toEqual(batch.body.items[0].links)
        const bare = yield* catalog.get(`/v2/catalog/companies/${withIntro!.id}`)
        expect(Object.keys(bare.body).sort()).toEqual(
          ["object", "id", "display_name", "latin", "lang", "localized", "company_kind", "work_count"].sort()
        )

        const unknown = yield* problem("/v2/catalog/companies?include=aliases,titles", "UNKNOWN_INCLUDE")
        expect(unknown.errors).toEqual([
          expect.objectContaining({
            parameter: "include",
            reason: "UNKNOWN_VALUE",
            params: { allowed: ["aliases", "intros", "links", "logo"] }
          })
        ])
        yield* problem("/v2/catalog/companies/1?include=refs", "UNKNOWN_INCLUDE")
      }))

    it.effect("work_count counts the works visible under the credential's content limit (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const truth = yield* sql<{ id: string; all: number; sfw: number }>`
          SELECT c.id::text AS id, count(w.id)::int AS all, count(w.id) FILTER (WHERE NOT w.nsfw)::int AS sfw
          FROM companies c LEFT JOIN work_companies wc ON wc.company_id = c.id
          LEFT JOIN works w ON w.id = wc.work_id AND w.live
          WHERE c.live GROUP BY c.id ORDER BY c.id`
        expect(truth.some((t) => t.all > t.sfw)).toBe(true)
        const companies = (client: CatalogClient) =>
          walkPages((cursor) =>
            client.companies.listCompanies({ query: { limit: 100, ...(cursor === undefined ? {} : { cursor }) } })
          )
        const sfwClient = yield* catalogClient("sfw")
        const nsfw = yield* companies(yield* catalogClient("nsfw"))
        const sfw = yield* companies(sfwClient)
        expect(nsfw.map((c) => [c.id, c.work_count])).toEqual(truth.map((t) => [t.id, t.all]))
        expect(sfw.map((c) => [c.id, c.work_count])).toEqual(truth.map((t) => [t.id, t.sfw]))
        const gated = truth.find((t) => t.all > t.sfw)!
        const id = CompanyId.make(gated.id)
        expect(fresh(yield* sfwClient.companies.getCompany({ params: { id }, query: {} })).work_count).toBe(gated.sfw)
        expect(fresh(yield* sfwClient.companies.getCompanyGraph({ params: { id }, query: {} })).nodes[0]!.work_count)
          .toBe(gated.sfw)
      }))

    it.effect("batch lane: request order, no next_cursor, merged/unknown/out-of-range ids in missing[] (docs/api-contract.md, \"Records and lists\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [merged] = yield* sql<
          { id: string }
        >`SELECT id::text AS id FROM companies WHERE merged_into IS NOT NULL LIMIT 1`
        const client = yield* catalogClient()
        const ids = ["5", merged!.id, "3", "987654321", "99999999999999999999", "5"]
        const res = yield* client.companies.listCompanies({ query: { ids } })
        expect(res.items.map((c) => c.id)).toEqual(["5", "3"])
        expect(res.missing).toEqual([merged!.id, "987654321", "99999999999999999999"])
        expect(res.next_cursor).toBeUndefined()

        const many = Array.from({ length: 101 }, (_, i) => String(i + 1)).join(",")
        yield* problem(`/v2/catalog/companies?ids=${many}`, "TOO_MANY_IDS")
        const first = yield* client.companies.listCompanies({ query: { limit: 2 } })
        const mixed = yield* problem(
          `/v2/catalog/companies?ids=1&cursor=${first.next_cursor}&company_kind=group`,
          "INVALID_PARAMETER"
        )
        expect(mixed.errors.map((e) => [e.parameter, e.reason])).toEqual([
          ["cursor", "INCONSISTENT_WITH"],
          ["company_kind", "INCONSISTENT_WITH"]
        ])
      }))

    it.effect("cursors are bound to the collection and its filters (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const client = yield* catalogClient()
        const first = yield* client.companies.listCompanies({ query: { limit: 2, company_kind: "game_brand" } })
        const cursor = first.next_cursor!
        expect(cursor).toMatch(/^cur_[A-Za-z0-9._~-]+$/)
        yield* problem(`/v2/catalog/companies?limit=2&company_kind=publisher&cursor=${cursor}`, "INVALID_CURSOR")
        yield* problem(`/v2/catalog/engines?limit=2&cursor=${cursor}`, "INVALID_CURSOR")
        yield* problem(`/v2/catalog/companies?cursor=${cursor.slice(0, -2)}`, "INVALID_CURSOR")
        const second = yield* client.companies.listCompanies({
          query: { limit: 2, company_kind: "game_brand", cursor }
        })
        expect(Number(second.items[0]!.id)).toBeGreaterThan(Number(first.items[1]!.id))
        const big = yield* problem("/v2/catalog/companies?limit=101", "LIMIT_TOO_LARGE")
        expect(big.errors[0]).toMatchObject({ parameter: "limit", reason: "OUT_OF_RANGE" })
      }))

    it.effect("detail: ETag and 304 (docs/api-contract.md, \"Caching, ETags and freshness\"); merged is 404 ENTITY_MERGED, never a redirect (docs/api-contract.md, \"Errors: catalog problem documents\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const catalog = yield* Catalog
        for (const path of ["/v2/catalog/companies/7?include=logo", "/v2/catalog/companies/7/graph"]) {
          const res = yield* catalog.get(path)
          const etag = res.headers.get("etag")
          expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/)
          const again = yield* catalog.get(path, { headers: { "if-none-match": etag! } })
          expect(again.status).toBe(304)
          expect(again.body).toBeNull()
        }
        const [merged] = yield* sql<{ id: string; current: string }>`
          SELECT from_id::text AS id, current_id::text AS current FROM catalog_redirects
          WHERE target_object = 'company' LIMIT 1`
        for (const suffix of ["", "/graph"]) {
          const body = yield* problem(`/v2/catalog/companies/${merged!.id}${suffix}`, "ENTITY_MERGED")
          expect(body).toMatchObject({ object: "company", current_id: merged!.current })
        }
        const res = yield* raw(`/v2/catalog/companies/${merged!.id}`)
        expect(res.headers.get("link")).toMatch(
          new RegExp(`/v2/catalog/companies/${merged!.current}>; rel="canonical"$`)
        )
        yield* problem("/v2/catalog/companies/987654321", "NOT_FOUND")
        yield* problem("/v2/catalog/companies/99999999999999999999/graph", "NOT_FOUND")
        const long = yield* problem("/v2/catalog/companies/1234567890123456789012345", "INVALID_PARAMETER")
        expect(long.errors[0]).toMatchObject({ parameter: "id", reason: "TOO_LONG" })
      }))

    it.effect("graph: nearest 60 within 4 hops, stored edges only, truncated when the family goes on (schema/Catalog/Company.ts)", () =>
      Effect.gen(function*() {
        const f = yield* family
        const client = yield* catalogClient()
        const sizes = new Map<string, number>()
        const starts = [...f.live]
        let sawTruncated = false
        let sawComplete = false
        let sawAlone = false
        for (const start of starts) {
          const expected = expectedGraph(f, start)
          const graph = fresh(
            yield* client.companies.getCompanyGraph({
              params: { id: CompanyId.make(start) },
              query: { include: ["logo"] }
            })
          )
          expect(graph.object).toBe("company_graph")
          expect(graph.nodes.map((n) => n.id)).toEqual(expected.nodes)
          expect(graph.nodes.length).toBeLessThanOrEqual(60)
          expect(graph.nodes[0].id).toBe(start)
          for (const node of graph.nodes) expect(expected.depth.get(node.id)).toBeLessThanOrEqual(4)
          // Every edge is a stored relation in its stored direction (no inverses) between two nodes.
          expect(sortEdges(graph.edges)).toEqual(sortEdges(expected.edges))
          expect(graph.truncated).toBe(expected.truncated)
          sizes.set(start, graph.nodes.length)
          if (graph.truncated) sawTruncated = true
          if (!graph.truncated && graph.nodes.length > 1) sawComplete = true
          if (graph.nodes.length === 1 && graph.edges.length === 0) sawAlone = true
        }
        expect(sizes.get("1")).toBe(60)
        expect({ sawTruncated, sawComplete, sawAlone }).toEqual({
          sawTruncated: true,
          sawComplete: true,
          sawAlone: true
        })
        const bad = yield* problem("/v2/catalog/companies/1/graph?include=aliases", "UNKNOWN_INCLUDE")
        expect(bad.errors[0]!.params).toEqual({ allowed: ["logo"] })
      }))

    // Runs last: it adds companies to the shared catalog.
    it.effect("graph: a chain longer than 4 hops is cut at 4 and truncated; edges keep their direction", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const ids = yield* sql<{ id: string }>`
          INSERT INTO companies (display_name, company_kind)
          SELECT 'Chain ' || n, 'game_brand' FROM generate_series(1, 7) n RETURNING id::text AS id`
        const chain = ids.map((r) => r.id)
        // c0 -parent-> c1 <-imprint- c2 -parent-> c3 ... alternating stored directions.
        for (let i = 0; i + 1 < chain.length; i++) {
          if (i % 2 === 0) yield* sql`INSERT INTO company_relations VALUES (${chain[i]!}, 'parent', ${chain[i + 1]!})`
          else yield* sql`INSERT INTO company_relations VALUES (${chain[i + 1]!}, 'imprint', ${chain[i]!})`
        }
        const client = yield* catalogClient()
        const graphOf = (id: string) =>
          Effect.map(client.companies.getCompanyGraph({ params: { id: CompanyId.make(id) }, query: {} }), fresh)
        const fromEnd = yield* graphOf(chain[0]!)
        expect(fromEnd.nodes.map((n) => n.id)).toEqual(chain.slice(0, 5))
        expect(fromEnd.truncated).toBe(true)
        expect(sortEdges(fromEnd.edges)).toEqual(sortEdges([
          { from_id: chain[0]!, relation: "parent", to_id: chain[1]! },
          { from_id: chain[2]!, relation: "imprint", to_id: chain[1]! },
          { from_id: chain[2]!, relation: "parent", to_id: chain[3]! },
          { from_id: chain[4]!, relation: "imprint", to_id: chain[3]! }
        ]))
        const fromMiddle = yield* graphOf(chain[3]!)
        expect(fromMiddle.nodes.map((n) => n.id)).toEqual([
          chain[3],
          chain[2],
          chain[4],
          chain[1],
          chain[5],
          chain[0],
          chain[6]
        ])
        expect(fromMiddle.truncated).toBe(false)
        expect(fromMiddle.edges).toHaveLength(6)
        // A withdrawn company cuts the walk: it is not a node, and the family beyond it is not reached.
        yield* sql`UPDATE companies SET withdrawn = true WHERE id = ${chain[1]!}`
        const cut = yield* graphOf(chain[0]!)
        expect(cut).toEqual({
          object: "company_graph",
          nodes: [expect.objectContaining({ id: chain[0] })],
          edges: [],
          truncated: false
        })
      }))
  })
})
