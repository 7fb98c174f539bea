/**
 * Title search over a seeded catalog of 300 works: the search lane (`q=`, its sorts, page mode;
 * docs/api-contract.md, "Cursors and pages"), facets under the query (docs/api-contract.md,
 * "Records and lists"), titles and aliases, Japanese, Chinese and Korean by substring
 * (docs/decisions.md, "Search and facets") and the content gate (docs/api-contract.md,
 * "Credentials, scopes and the content limit").
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { ListWork } from "../../schema/Catalog/Work.js"
import { foldText } from "../../src/catalog/search/SearchKey.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
import { eventually } from "../support/Eventually.js"
import { expectProblem } from "../support/Problems.js"

const list = (path: string, key: "sfw" | "nsfw" = "nsfw") =>
  Effect.gen(function*() {
    const c = yield* Catalog
    const res = yield* c.get(path, { key })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    Schema.decodeUnknownSync(ListWork)(res.body)
    return res.body as any
  })

const walk = (path: string, key: "sfw" | "nsfw" = "nsfw") =>
  Effect.gen(function*() {
    const items: Array<any> = []
    let cursor: string | undefined
    for (let page = 0; page < 500; page++) {
      const body = yield* list(`${path}${cursor === undefined ? "" : `&cursor=${cursor}`}`, key)
      items.push(...body.items)
      cursor = body.next_cursor
      if (cursor === undefined) return items
    }
    throw new Error("too many pages")
  })

const q = (text: string) => encodeURIComponent(text)

/** The live works whose folded names contain the folded query: what a search must find. */
const expected = (text: string, nsfw: boolean) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ id: string }>`
      SELECT w.id::text AS id FROM work_search s JOIN works w ON w.id = s.work_id
      WHERE w.live ${nsfw ? sql`` : sql`AND NOT w.nsfw`} AND strpos(s.norm, ${foldText(text)}) > 0`.pipe(
      Effect.map((rows) => rows.map((r) => r.id).sort((a, b) => Number(a) - Number(b)))
    ))

const sorted = (items: ReadonlyArray<any>) =>
  items.map((w) => w.id).sort((a: string, b: string) => Number(a) - Number(b))

describe("search (docs/decisions.md, \"Search and facets\")", () => {
  it.layer(SeededCatalogLive({ works: 300, seed: 11 }), { timeout: "300 seconds" })((it) => {
    it.effect("Japanese, Chinese and Korean titles are found by any substring (docs/decisions.md, \"Search and facets\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        for (const lang of ["ja", "zh-Hans", "ko"]) {
          const [title] = yield* sql<{ work_id: string; value: string }>`
            SELECT t.work_id::text AS work_id, t.value FROM work_titles t JOIN works w ON w.id = t.work_id
            WHERE w.live AND t.lang = ${lang} AND char_length(t.value) >= 4 ORDER BY t.work_id LIMIT 1`
          if (title === undefined) continue
          const chars = [...title.value]
          const middle = chars.slice(1, 3).join("")
          const found = yield* walk(`/v2/catalog/search?q=${q(middle)}&limit=100`)
          expect(found.map((w) => w.id), `${lang}: ${middle}`).toContain(title.work_id)
          expect(sorted(found), `${lang}: ${middle}`).toEqual(yield* expected(middle, true))
          const single = yield* walk(`/v2/catalog/search?q=${q(chars[0]!)}&limit=100`)
          expect(sorted(single), `${lang}: ${chars[0]}`).toEqual(yield* expected(chars[0]!, true))
        }
      }))

    it.effect("matching ignores case, width and accents, and covers romanizations and aliases (docs/decisions.md, \"Search and facets\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [latin] = yield* sql<{ id: string; latin: string }>`
          SELECT id::text AS id, latin FROM works WHERE live AND latin ~ '^[A-Za-z ]{8,}$' ORDER BY id LIMIT 1`
        const word = latin!.latin.split(" ").sort((a, b) => b.length - a.length)[0]!
        const fullWidth = [...word.toUpperCase()].map((ch) => String.fromCharCode(ch.charCodeAt(0) + 0xfee0)).join("")
        for (const variant of [word.toUpperCase(), fullWidth, word.toLowerCase()]) {
          const found = yield* walk(`/v2/catalog/works?q=${q(variant)}&limit=100`)
          expect(found.map((w) => w.id), variant).toContain(latin!.id)
        }
        const [alias] = yield* sql<{ id: string; value: string }>`
          SELECT a.entity_id::text AS id, a.value FROM entity_aliases a JOIN works w ON w.id = a.entity_id AND w.live
          WHERE a.entity_type = 'work' AND char_length(a.value) >= 3 ORDER BY a.entity_id LIMIT 1`
        if (alias !== undefined) {
          const found = yield* walk(`/v2/catalog/works?q=${q(alias.value)}&limit=100`)
          expect(found.map((w) => w.id)).toContain(alias.id)
        }
      }))

    it.effect("relevance (the default with q) puts an exact title first, then popularity (docs/decisions.md, \"Search and facets\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [work] = yield* sql<{ id: string; display_name: string }>`
          SELECT id::text AS id, display_name FROM works WHERE live ORDER BY popularity ASC, id LIMIT 1`
        const body = yield* list(`/v2/catalog/works?q=${q(work!.display_name)}&limit=100`)
        const exact = body.items.filter((w: any) => foldText(w.display_name) === foldText(work!.display_name))
        expect(exact.map((w: any) => w.id)).toContain(work!.id)
        expect(body.items.slice(0, exact.length).map((w: any) => w.id)).toEqual(exact.map((w: any) => w.id))
        // Tiers: a name equal to the query, a name starting with it, any other match; each by popularity.
        const norms = new Map(
          (yield* sql<{ id: string; norm: string }>`SELECT work_id::text AS id, norm FROM work_search`).map((
            r
          ) => [r.id, r.norm.split("\n")])
        )
        const broad = yield* walk(`/v2/catalog/search?q=a&limit=50`)
        const rank = (w: any) => {
          const names = norms.get(w.id)!
          return [names.includes("a") ? 0 : names.some((n) => n.startsWith("a")) ? 1 : 2, -w.popularity, -Number(w.id)]
        }
        expect(new Set(broad.map((w) => rank(w)[0])).size).toBeGreaterThan(1)
        for (let i = 1; i < broad.length; i++) {
          const [a, b] = [rank(broad[i - 1]), rank(broad[i])]
          const j = a.findIndex((x, k) => x !== b[k])
          expect(j === -1 || a[j]! < b[j]!, `${broad[i - 1].id} before ${broad[i].id}`).toBe(true)
        }
      }))

    it.effect("search pages (page and cursor modes) cover the hits once, in one order (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        for (const sort of ["relevance", "popularity", "released_desc", "released_asc", "rating_steam"]) {
          const all = yield* walk(`/v2/catalog/search?q=a&limit=13&sort=${sort}`)
          expect(new Set(all.map((w) => w.id)).size, sort).toBe(all.length)
          expect(sorted(all), sort).toEqual(yield* expected("a", true))
          const paged: Array<any> = []
          const first = yield* list(`/v2/catalog/works?q=a&sort=${sort}&page=1&limit=40`)
          expect(first.total).toBe(all.length)
          expect(first.total_relation).toBe("eq")
          expect(first.next_cursor).toBeUndefined()
          for (let page = 1; page <= Math.ceil(first.total / 40); page++) {
            paged.push(...(yield* list(`/v2/catalog/works?q=a&sort=${sort}&page=${page}&limit=40`)).items)
          }
          expect(paged.map((w) => w.id), sort).toEqual(all.map((w) => w.id))
          const counted = yield* list(`/v2/catalog/search?q=a&sort=${sort}&include_total=true&limit=1`)
          expect(counted.total).toBe(all.length)
        }
      }))

    it.effect("a query that folds to nothing finds nothing; /search without q lists every work (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const none = yield* list(`/v2/catalog/search?q=${q("!!! ---")}&include_total=true&facets=olang`)
        expect(none.items).toEqual([])
        expect(none.total).toBe(0)
        expect(none.facets).toEqual({ olang: [] })
        const unmatched = yield* list(`/v2/catalog/search?q=zzqqxxjj&page=1`)
        expect(unmatched).toEqual({ object: "list", items: [], total: 0, total_relation: "eq" })
        const all = yield* walk("/v2/catalog/search?limit=100")
        const ids = all.map((w) => w.id)
        expect(ids).toEqual([...ids].sort((a, b) => Number(a) - Number(b)))
        const byList = yield* walk("/v2/catalog/works?limit=100")
        expect(ids).toEqual(byList.map((w) => w.id))
      }))

    it.effect("facets of a search count its hits; a value passed back filters to its count (docs/api-contract.md, \"Records and lists\")", () =>
      Effect.gen(function*() {
        const body = yield* list("/v2/catalog/search?q=a&facets=tag_id,company_id,olang,medium&include_total=true")
        for (const facet of ["tag_id", "company_id", "olang", "medium"]) {
          const values = body.facets[facet] as Array<any>
          expect(values.length, facet).toBeGreaterThan(0)
          expect(values.length, facet).toBeLessThanOrEqual(50)
          for (const value of values.slice(0, 3)) {
            const filtered = yield* list(`/v2/catalog/search?q=a&${facet}=${q(value.value)}&include_total=true&limit=1`)
            expect(filtered.total, `${facet}=${value.value}`).toBe(value.count)
            expect(filtered.total).toBeLessThanOrEqual(body.total)
          }
        }
      }))

    it.effect("a search by an sfw credential never finds, counts or facets an nsfw work (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [nsfw] = yield* sql<{ id: string; display_name: string }>`
          SELECT id::text AS id, display_name FROM works WHERE live AND nsfw ORDER BY id LIMIT 1`
        const nsfwHits = yield* list(`/v2/catalog/search?q=${q(nsfw!.display_name)}&limit=100`)
        expect(nsfwHits.items.map((w: any) => w.id)).toContain(nsfw!.id)
        const sfwHits = yield* walk(`/v2/catalog/search?q=${q(nsfw!.display_name)}&limit=100`, "sfw")
        expect(sfwHits.map((w) => w.id)).not.toContain(nsfw!.id)
        const sfw = yield* list("/v2/catalog/search?q=a&facets=content_rating&page=1", "sfw")
        expect(sfw.total).toBe((yield* expected("a", false)).length)
        expect(sfw.facets.content_rating.map((v: any) => v.value)).toEqual(["sfw"])
      }))

    it.effect("q is 1..256 characters without NUL; an unknown sort with q is UNKNOWN_SORT (schema/Api/WorksApi.ts)", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        for (
          const [path, code] of [
            [`/v2/catalog/search?q=${"x".repeat(257)}`, "INVALID_PARAMETER"],
            ["/v2/catalog/search?q=", "INVALID_PARAMETER"],
            ["/v2/catalog/search?q=a%00b", "INVALID_PARAMETER"],
            ["/v2/catalog/search?q=a&sort=best", "UNKNOWN_SORT"]
          ] as const
        ) {
          const res = yield* Effect.promise(() =>
            fetch(`${c.base}${path}`, { headers: { authorization: `Bearer ${c.nsfwKey}` } })
          )
          const p = yield* Effect.promise(() => expectProblem(res, code, path))
          expect(p.errors[0]!.parameter).toBe(path.includes("sort=") ? "sort" : "q")
        }
      }))

    it.effect("the search ranks and facets on its own copy of the work's columns, which follows every write (docs/decisions.md, \"Search and facets\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const drift = sql<{ n: number }>`
          SELECT count(*)::int AS n FROM works w
          JOIN work_search s ON s.work_id = w.id LEFT JOIN work_facets f ON f.work_id = w.id
          WHERE (s.popularity, s.live, s.nsfw) IS DISTINCT FROM (w.popularity, w.live, w.nsfw)
            OR f.work_id IS NULL OR (f.olang, f.media, f.platforms) IS DISTINCT FROM (w.olang, w.media, w.platforms)
            OR f.tag_ids IS DISTINCT FROM ARRAY(SELECT t.tag_id FROM work_tags t WHERE t.work_id = w.id ORDER BY 1)
            OR f.company_ids IS DISTINCT FROM
              ARRAY(SELECT c.company_id FROM work_companies c WHERE c.work_id = w.id ORDER BY 1)`
        // As seeded (the generator writes the copy with its trigger off).
        expect((yield* drift)[0]!.n).toBe(0)
        const [work] = yield* sql<{ id: string; display_name: string }>`
          SELECT id::text AS id, display_name FROM works WHERE live AND NOT nsfw ORDER BY popularity LIMIT 1`
        const search = `/v2/catalog/search?q=${q(work!.display_name)}&limit=100`
        const ids = (body: any) => body.items.map((w: any) => w.id)
        expect(ids(yield* list(search))).toContain(work!.id)

        // The least popular work becomes the most popular: it leads the "any match" tier.
        yield* sql`UPDATE works SET popularity = 100 WHERE id = ${work!.id}::bigint`.pipe(
          Effect.andThen(sql`SELECT catalog_touch('work', ${work!.id}::bigint, false)`),
          sql.withTransaction
        )
        const rows = yield* sql<{ popularity: number }>`SELECT popularity FROM work_search WHERE work_id = ${
          work!.id
        }::bigint`
        expect(rows[0]!.popularity).toBe(100)
        // The facet row: the work's own columns, and its tag and company links (migrations/0008).
        yield* sql`UPDATE works SET platforms = ARRAY['lin', 'win'], olang = 'ko' WHERE id = ${work!.id}::bigint`
        yield* sql`
          INSERT INTO work_tags (work_id, tag_id, spoiler, score)
          SELECT ${work!.id}::bigint, t.id, 'none', 1 FROM tags t
          WHERE t.live AND t.id NOT IN (SELECT tag_id FROM work_tags WHERE work_id = ${work!.id}::bigint)
          ORDER BY t.id LIMIT 2`
        yield* sql`
          DELETE FROM work_tags WHERE (work_id, tag_id) =
            (SELECT work_id, tag_id FROM work_tags WHERE work_id = ${work!.id}::bigint ORDER BY tag_id LIMIT 1)`
        yield* sql`DELETE FROM work_companies WHERE work_id = ${work!.id}::bigint`
        expect((yield* drift)[0]!.n).toBe(0)
        const copy = yield* sql<{ platforms: ReadonlyArray<string>; company_ids: ReadonlyArray<string> }>`
          SELECT platforms, company_ids FROM work_facets WHERE work_id = ${work!.id}::bigint`
        expect(copy[0]).toEqual({ platforms: ["lin", "win"], company_ids: [] })
        // Turned nsfw: gone for an sfw credential; withdrawn: gone for everyone.
        yield* sql`UPDATE works SET nsfw = true WHERE id = ${work!.id}::bigint`
        yield* sql`SELECT catalog_touch('work', ${work!.id}::bigint, false)`
        yield* eventually(Effect.map(list(search, "sfw"), (body) => expect(ids(body)).not.toContain(work!.id)))
        expect(ids(yield* list(search))).toContain(work!.id)
        yield* sql`UPDATE works SET withdrawn = true WHERE id = ${work!.id}::bigint`
        yield* sql`SELECT catalog_touch('work', ${work!.id}::bigint, true)`
        yield* eventually(Effect.map(list(search), (body) => expect(ids(body)).not.toContain(work!.id)))
        expect((yield* drift)[0]!.n).toBe(0)
      }))
  })
})
