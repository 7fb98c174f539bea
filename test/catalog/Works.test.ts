/**
 * The works collection and single-work reads over a seeded catalog of 300 works, against these
 * sections of docs/api-contract.md:
 * "Records and lists" (the list envelope, views, includes, lanes), "Cursors and pages",
 * "Errors: catalog problem documents" (problem shapes),
 * "Credentials, scopes and the content limit" (content gate) and
 * "Caching, ETags and freshness" (ETag).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { workFacets, workIncludes, workSorts } from "../../schema/Api/WorksApi.js"
import { ListRosterCharacter } from "../../schema/Catalog/Character.js"
import { ListCover, ListIntro } from "../../schema/Catalog/Common.js"
import { ListCreditGroup } from "../../schema/Catalog/Credit.js"
import { ListWork, Work } from "../../schema/Catalog/Work.js"
import { Catalog, problem, raw, SeededCatalogLive } from "../support/Catalog.js"
import { expectProblem } from "../support/Problems.js"

const BASIC_FIELDS = [
  "content_rating",
  "display_name",
  "id",
  "latin",
  "length_minutes",
  "localized",
  "media",
  "object",
  "olang",
  "platforms",
  "popularity",
  "released",
  "updated_at"
]
const FULL_FIELDS = ["aliases", "created_at", "development_status", "engine", "links"]

/** GET that must succeed; the body must decode with `schema` (the records' constraints, schema/Catalog/). */
const ok = <A, I>(path: string, schema: Schema.Codec<A, I>, key: "sfw" | "nsfw" = "nsfw") =>
  Effect.gen(function*() {
    const c = yield* Catalog
    const res = yield* c.get(path, { key })
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    expect(res.headers.get("content-type")).toContain("application/json")
    Schema.decodeUnknownSync(schema)(res.body)
    return res.body as any
  })

const list = (path: string, key: "sfw" | "nsfw" = "nsfw") => ok(path, ListWork, key)

/**
 * Every page of a cursor list (docs/api-contract.md, "Cursors and pages": the end is the absence of
 * next_cursor).
 */
const walk = (path: string, key: "sfw" | "nsfw" = "nsfw") =>
  Effect.gen(function*() {
    const items: Array<any> = []
    let cursor: string | undefined
    for (let page = 0; page < 500; page++) {
      const sep = path.includes("?") ? "&" : "?"
      const body = yield* list(`${path}${cursor === undefined ? "" : `${sep}cursor=${cursor}`}`, key)
      items.push(...body.items)
      cursor = body.next_cursor
      if (cursor === undefined) return items
      expect(cursor).toMatch(/^cur_[A-Za-z0-9._~-]+$/)
      expect(cursor.length).toBeLessThanOrEqual(512)
    }
    throw new Error("too many pages")
  })

interface WorkRow {
  readonly id: string
  readonly nsfw: boolean
  readonly live: boolean
  readonly merged_into: string | null
  readonly popularity: number
  readonly released_key: number | null
  readonly rating_vndb: number | null
  readonly updated_at: string
  readonly platforms: ReadonlyArray<string>
}

const works = Effect.flatMap(SqlClient.SqlClient, (sql) =>
  sql<WorkRow>`
    SELECT id::text AS id, nsfw, live, merged_into::text AS merged_into, popularity, released_key, rating_vndb,
      updated_at::text AS updated_at, platforms
    FROM works w ORDER BY w.id`)

const byNumber = (a: string, b: string) => Number(a) - Number(b)

describe("works (docs/api-contract.md, \"Records and lists\")", () => {
  it.layer(SeededCatalogLive({ works: 300, seed: 7 }), { timeout: "300 seconds" })((it) => {
    it.effect("a page is a list envelope of works at view=basic; view=full adds five fields (docs/api-contract.md, \"Records and lists\")", () =>
      Effect.gen(function*() {
        const body = yield* list("/v2/catalog/works?limit=5")
        expect(body.object).toBe("list")
        expect(body.items).toHaveLength(5)
        expect(body.total).toBeUndefined()
        expect(body.facets).toBeUndefined()
        expect(body.missing).toBeUndefined()
        for (const item of body.items) expect(Object.keys(item).sort()).toEqual(BASIC_FIELDS)
        const full = yield* list("/v2/catalog/works?limit=5&view=full")
        for (const item of full.items) {
          expect(Object.keys(item).sort()).toEqual([...BASIC_FIELDS, ...FULL_FIELDS].sort())
        }
      }))

    it.effect("the id-ordered cursor walk visits every live work exactly once (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const rows = yield* works
        const live = rows.filter((r) => r.live).map((r) => r.id)
        const all = yield* walk("/v2/catalog/works?limit=17")
        const ids = all.map((w) => w.id)
        expect(ids).toEqual(live)
        // The last page may be exactly `limit` long and still be the last (no inference from counts).
        const exact = yield* list(`/v2/catalog/works?limit=100&ids=${live.slice(0, 3).join(",")}`)
        expect(exact.next_cursor).toBeUndefined()
      }))

    it.effect("every sort pages through the whole population in its order, no duplicates (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const rows = yield* works
        const live = new Map(rows.filter((r) => r.live).map((r) => [r.id, r]))
        for (const sort of workSorts) {
          const all = yield* walk(`/v2/catalog/works?limit=23&sort=${sort}`)
          const ids = all.map((w) => w.id)
          expect(new Set(ids).size, sort).toBe(ids.length)
          expect([...ids].sort(byNumber), sort).toEqual([...live.keys()].sort(byNumber))
          const key = (id: string): Array<number> => {
            const r = live.get(id)!
            switch (sort) {
              case "id":
                return [Number(id)]
              case "updated":
                return [-Date.parse(r.updated_at.replace(" ", "T").replace(/\+00$/, "Z")), -Number(id)]
              case "released_asc":
                return [r.released_key ?? 2147483647, Number(id)]
              case "released_desc":
                return [-(r.released_key ?? -1), -Number(id)]
              case "popularity":
              case "relevance":
                return [-r.popularity, -Number(id)]
              case "rating_vndb":
                return [-(r.rating_vndb ?? -1), -Number(id)]
              default:
                return []
            }
          }
          for (let i = 1; i < ids.length; i++) {
            const [a, b] = [key(ids[i - 1]), key(ids[i])]
            const cmp = a.findIndex((x, j) => x !== b[j])
            expect(cmp === -1 || a[cmp]! < b[cmp]!, `${sort}: ${ids[i - 1]} before ${ids[i]}`).toBe(true)
          }
        }
      }))

    it.effect("rating sorts put works the source does not rate last (README, \"Reading the catalog\")", () =>
      Effect.gen(function*() {
        for (const source of ["vndb", "bangumi", "egs", "steam", "dlsite"]) {
          const all = yield* walk(`/v2/catalog/works?limit=100&sort=rating_${source}&include=ratings`)
          const rated = all.map((w) => w.ratings.some((r: any) => r.source === source))
          const firstUnrated = rated.indexOf(false)
          expect(firstUnrated, source).toBeGreaterThan(0)
          expect(rated.slice(firstUnrated).every((r) => !r), source).toBe(true)
          const scores = all.slice(0, firstUnrated).map((w) => w.ratings.find((r: any) => r.source === source).score)
          expect(scores, source).toEqual([...scores].sort((a, b) => b - a))
        }
      }))

    it.effect("limit above 100 is LIMIT_TOO_LARGE, never clamped; 0 and -5 are out of range (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        expect((yield* list("/v2/catalog/works?limit=100")).items).toHaveLength(100)
        const large = yield* problem("/v2/catalog/works?limit=101", "LIMIT_TOO_LARGE")
        expect(large.errors[0]).toMatchObject({ parameter: "limit", reason: "OUT_OF_RANGE", params: { maximum: 100 } })
        for (const limit of ["0", "-5"]) {
          const p = yield* problem(`/v2/catalog/works?limit=${limit}`, "INVALID_PARAMETER")
          expect(p.errors[0]).toMatchObject({ parameter: "limit", reason: "OUT_OF_RANGE", params: { minimum: 1 } })
        }
        yield* problem("/v2/catalog/search?q=a&limit=500", "LIMIT_TOO_LARGE")
      }))

    it.effect("an unknown sort is UNKNOWN_SORT with the closed set in params.allowed (README, \"Reading the catalog\")", () =>
      Effect.gen(function*() {
        const p = yield* problem("/v2/catalog/works?sort=rating_imdb", "UNKNOWN_SORT")
        expect(p.errors).toHaveLength(1)
        expect(p.errors[0]).toMatchObject({ parameter: "sort", reason: "UNKNOWN_VALUE" })
        expect(p.errors[0]!.params.allowed).toEqual([...workSorts])
      }))

    it.effect("each include token adds its member ([] when empty; playtime an object); unknown is UNKNOWN_INCLUDE (docs/api-contract.md, \"Records and lists\")", () =>
      Effect.gen(function*() {
        const body = yield* list(`/v2/catalog/works?limit=40&include=${workIncludes.join(",")}`)
        const arrays = workIncludes.filter((token) => token !== "playtime")
        for (const item of body.items) {
          for (const token of arrays) expect(Array.isArray(item[token]), token).toBe(true)
          // The playtime aggregate (docs/writing.md, "Playtimes"): nobody reported on a fresh seed.
          expect(item.playtime, "playtime").toEqual({ players: 0, median_minutes: null })
        }
        for (const token of workIncludes) {
          if (token !== "playtime") {
            expect(body.items.some((w: any) => w[token].length > 0), `${token} has data somewhere`).toBe(true)
          }
          const one = yield* list(`/v2/catalog/works?limit=3&include=${token}`)
          for (const item of one.items) {
            expect(Object.keys(item).sort()).toEqual([...BASIC_FIELDS, token].sort())
          }
        }
        const withCredits = body.items.find((w: any) => w.credits.length > 0)
        expect(withCredits.credits[0]).toMatchObject({ role_key: expect.any(String), credits: expect.any(Array) })
        const p = yield* problem("/v2/catalog/works?include=titles,screenshots", "UNKNOWN_INCLUDE")
        expect(p.errors[0]).toMatchObject({ parameter: "include", reason: "UNKNOWN_VALUE" })
        expect(p.errors[0]!.params.allowed).toEqual([...workIncludes])
      }))

    it.effect("ids= returns visible works in the order asked, the rest in missing[] (docs/api-contract.md, \"Records and lists\")", () =>
      Effect.gen(function*() {
        const rows = yield* works
        const live = rows.filter((r) => r.live && !r.nsfw)
        const merged = rows.find((r) => r.merged_into !== null)!
        const withdrawn = rows.find((r) => !r.live && r.merged_into === null)
        const nsfw = rows.find((r) => r.live && r.nsfw)!
        const asked = [live[5]!.id, "999999", live[2]!.id, merged.id, nsfw.id, live[5]!.id, "99999999999999999999"]
        if (withdrawn !== undefined) asked.push(withdrawn.id)
        const body = yield* list(`/v2/catalog/works?ids=${asked.join(",")}&include=titles`)
        expect(body.items.map((w: any) => w.id)).toEqual([live[5]!.id, live[2]!.id, nsfw.id])
        expect(body.items[0].titles.length).toBeGreaterThan(0)
        expect(body.next_cursor).toBeUndefined()
        expect(body.missing).toEqual(
          ["999999", merged.id, "99999999999999999999", ...(withdrawn === undefined ? [] : [withdrawn.id])]
        )
        // For an sfw credential the nsfw work is just missing
        // (docs/api-contract.md, "Credentials, scopes and the content limit").
        const sfw = yield* list(`/v2/catalog/works?ids=${asked.join(",")}`, "sfw")
        expect(sfw.items.map((w: any) => w.id)).toEqual([live[5]!.id, live[2]!.id])
        expect(sfw.missing).toContain(nsfw.id)
        const many = Array.from({ length: 101 }, (_, i) => String(i + 1)).join(",")
        const p = yield* problem(`/v2/catalog/works?ids=${many}`, "TOO_MANY_IDS")
        expect(p.errors[0]).toMatchObject({ parameter: "ids", reason: "TOO_MANY_ITEMS", params: { max_items: 100 } })
        expect((yield* list(`/v2/catalog/works?ids=${many.split(",").slice(0, 100).join(",")}`)).items.length)
          .toBeGreaterThan(90)
      }))

    it.effect("refs= takes source:external_id pairs; unmatched pairs are listed as sent (docs/api-contract.md, \"Records and lists\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const refs = yield* sql<{ source: string; external_id: string; id: string; live: boolean }>`
          SELECT r.source, r.external_id, r.entity_id::text AS id, w.live
          FROM entity_refs r JOIN works w ON w.id = r.entity_id
          WHERE r.entity_type = 'work' ORDER BY r.entity_id DESC, r.source`
        const live = refs.filter((r) => r.live)
        const a = live[0]!
        const b = live.find((r) => r.id !== a.id)!
        const dead = refs.find((r) => !r.live)
        const asked = [`${b.source}:${b.external_id}`, "vndb:v0", `${a.source}:${a.external_id}`]
        if (dead !== undefined) asked.push(`${dead.source}:${dead.external_id}`)
        const body = yield* list(`/v2/catalog/works?refs=${encodeURIComponent(asked.join(","))}`)
        expect(body.items.map((w: any) => w.id)).toEqual([b.id, a.id])
        expect(body.missing).toEqual(["vndb:v0", ...(dead === undefined ? [] : [`${dead.source}:${dead.external_id}`])])
        const p = yield* problem("/v2/catalog/works?refs=v17", "INVALID_PARAMETER")
        expect(p.errors[0]).toMatchObject({ parameter: "refs", reason: "INVALID_FORMAT" })
        const many = Array.from({ length: 101 }, (_, i) => `vndb:v${i}`).join(",")
        yield* problem(`/v2/catalog/works?refs=${many}`, "TOO_MANY_IDS")
      }))

    it.effect("page mode has total and total_relation, no next_cursor, and matches cursor order (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const all = yield* walk("/v2/catalog/works?limit=100&sort=popularity")
        const pages: Array<any> = []
        for (let page = 1; page <= 4; page++) {
          const body = yield* list(`/v2/catalog/works?page=${page}&limit=90&sort=popularity`)
          expect(body.total).toBe(all.length)
          expect(body.total_relation).toBe("eq")
          expect(body.next_cursor).toBeUndefined()
          pages.push(...body.items)
        }
        expect(pages.map((w) => w.id)).toEqual(all.map((w) => w.id))
        const byId = yield* list("/v2/catalog/works?page=2&limit=10")
        expect(byId.items.map((w: any) => w.id)).toEqual(all.map((w) => w.id).sort(byNumber).slice(10, 20))
      }))

    it.effect("page * limit above 10000 is INVALID_PARAMETER OUT_OF_RANGE with the last page (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const total = (yield* list("/v2/catalog/works?page=1&limit=1")).total as number
        // min(ceil(total / limit), floor(10000 / limit))
        const p = yield* problem("/v2/catalog/works?page=101&limit=100", "INVALID_PARAMETER")
        expect(p.errors).toEqual([{
          parameter: "page",
          reason: "OUT_OF_RANGE",
          detail: expect.any(String),
          params: { minimum: 1, maximum: Math.ceil(total / 100) }
        }])
        const q = yield* problem("/v2/catalog/search?page=5001&limit=2", "INVALID_PARAMETER")
        expect(q.errors[0]!.params).toEqual({ minimum: 1, maximum: Math.ceil(total / 2) })
        const zero = yield* problem("/v2/catalog/works?page=0", "INVALID_PARAMETER")
        expect(zero.errors[0]).toMatchObject({ parameter: "page", reason: "OUT_OF_RANGE", params: { minimum: 1 } })
        // Within the depth, a page past the end is empty (not an error).
        const past = yield* list("/v2/catalog/works?page=50&limit=100")
        expect(past.items).toEqual([])
        expect(past.total).toBe(total)
      }))

    it.effect("a forged, truncated or foreign cursor is INVALID_CURSOR (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const first = yield* list("/v2/catalog/works?limit=5&sort=popularity")
        const cursor = first.next_cursor as string
        yield* problem(`/v2/catalog/works?limit=5&sort=popularity&cursor=${cursor.slice(0, -3)}`, "INVALID_CURSOR")
        yield* problem("/v2/catalog/works?cursor=cur_AAAA.BBBB", "INVALID_CURSOR")
        yield* problem("/v2/catalog/works?cursor=not-a-cursor", "INVALID_CURSOR")
        // Issued for another sort or other filters.
        yield* problem(`/v2/catalog/works?limit=5&sort=updated&cursor=${cursor}`, "INVALID_CURSOR")
        yield* problem(`/v2/catalog/works?limit=5&sort=popularity&olang=ja&cursor=${cursor}`, "INVALID_CURSOR")
        const other = (yield* list("/v2/catalog/works?limit=1")).next_cursor
        yield* problem(`/v2/catalog/search?q=a&cursor=${other}`, "INVALID_CURSOR")
        // The same cursor with another limit or include is fine.
        const next = yield* list(`/v2/catalog/works?limit=3&sort=popularity&include=tags&cursor=${cursor}`)
        expect(next.items).toHaveLength(3)
      }))

    it.effect("lanes do not mix; each offending parameter is an INCONSISTENT_WITH entry (docs/api-contract.md, \"Errors: catalog problem documents\")", () =>
      Effect.gen(function*() {
        const cases: ReadonlyArray<readonly [string, ReadonlyArray<string>]> = [
          ["/v2/catalog/works?page=2&cursor=cur_abc", ["cursor"]],
          ["/v2/catalog/works?ids=1,2&cursor=cur_abc&q=x", ["cursor", "q"]],
          ["/v2/catalog/works?ids=1&refs=vndb:v1", ["refs"]],
          ["/v2/catalog/works?ids=1&page=1&facets=olang&olang=ja", ["page", "facets", "olang"]],
          ["/v2/catalog/works?q=x&platform=win", ["platform"]],
          ["/v2/catalog/works?page=1&owner_uid=5&site=acme", ["owner_uid", "site"]],
          ["/v2/catalog/works?facets=olang&platform=win", ["platform"]],
          ["/v2/catalog/works?sort=rating_egs&site=acme", ["site"]],
          ["/v2/catalog/works?q=x&sort=id", ["sort"]],
          ["/v2/catalog/search?ids=1,2", ["ids"]],
          ["/v2/catalog/search?platform=win", ["platform"]]
        ]
        for (const [path, parameters] of cases) {
          const p = yield* problem(path, "INVALID_PARAMETER")
          expect(p.errors.map((e) => e.parameter), path).toEqual(parameters)
          for (const e of p.errors) expect(e.reason, path).toBe("INCONSISTENT_WITH")
        }
      }))

    it.effect("facets are counted under the same filters as the items (docs/api-contract.md, \"Records and lists\")", () =>
      Effect.gen(function*() {
        const body = yield* list(`/v2/catalog/works?facets=${workFacets.join(",")}&limit=1&include_total=true`)
        expect(Object.keys(body.facets).sort()).toEqual([...workFacets].sort())
        const total = body.total as number
        const crSum = body.facets.content_rating.reduce((n: number, v: any) => n + v.count, 0)
        expect(crSum).toBe(total)
        for (const facet of workFacets) {
          const values = body.facets[facet] as Array<any>
          expect(values.length, facet).toBeGreaterThan(0)
          expect(values.map((v) => v.count), facet).toEqual([...values.map((v) => v.count)].sort((a, b) => b - a))
          // Passing a value back as the filter of the same name gives as many items as it counted.
          const value = values[values.length - 1]!
          const lane = facet === "platform" ? "" : "facets=olang&"
          const filtered = yield* list(`/v2/catalog/works?${lane}${facet}=${value.value}&limit=1&include_total=true`)
          expect(filtered.total, `${facet}=${value.value}`).toBe(value.count)
        }
        // With another filter, the counts shrink to the filtered set.
        const ja = yield* list("/v2/catalog/works?facets=olang,content_rating&olang=ja&include_total=true&limit=1")
        expect(ja.facets.olang).toEqual([{ value: "ja", display_name: "Japanese", count: ja.total }])
        const p = yield* problem("/v2/catalog/works?facets=olang,genre", "UNKNOWN_FACET")
        expect(p.errors[0]).toMatchObject({ parameter: "facets", reason: "UNKNOWN_VALUE" })
        expect(p.errors[0]!.params.allowed).toEqual([...workFacets])
      }))

    it.effect("include_total in cursor mode is the number of works the walk visits (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        for (const query of ["", "&olang=ja", "&platform=win", "&sort=rating_bangumi", "&content_rating=sfw"]) {
          const first = yield* list(`/v2/catalog/works?limit=50&include_total=true${query}`)
          expect(first.total_relation).toBeUndefined()
          const all = yield* walk(`/v2/catalog/works?limit=50${query}`)
          expect(first.total, query).toBe(all.length)
        }
      }))

    it.effect("platform filters works.platforms; owner_uid and site are validated (no claims yet; schema/Api/WorksApi.ts)", () =>
      Effect.gen(function*() {
        const win = yield* walk("/v2/catalog/works?limit=100&platform=win")
        expect(win.length).toBeGreaterThan(0)
        for (const w of win) expect(w.platforms).toContain("win")
        const claimed = yield* list("/v2/catalog/works?site=acme&owner_uid=42&include_total=true")
        expect(claimed.items).toEqual([])
        expect(claimed.total).toBe(0)
        const p = yield* problem("/v2/catalog/works?site=Bad-Site&owner_uid=x1&platform=W", "INVALID_PARAMETER")
        expect(p.errors.map((e) => e.parameter).sort()).toEqual(["owner_uid", "platform", "site"])
      }))

    it.effect("an sfw credential never sees an nsfw work, in items, totals or facets (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const rows = yield* works
        const sfwLive = rows.filter((r) => r.live && !r.nsfw).map((r) => r.id)
        expect(rows.some((r) => r.live && r.nsfw)).toBe(true)
        const all = yield* walk("/v2/catalog/works?limit=100&sort=released_desc", "sfw")
        expect(all.map((w) => w.id).sort(byNumber)).toEqual(sfwLive)
        expect(all.every((w) => w.content_rating === "sfw")).toBe(true)
        const paged = yield* list("/v2/catalog/works?page=1&facets=content_rating,tag_id", "sfw")
        expect(paged.total).toBe(sfwLive.length)
        expect(paged.facets.content_rating).toEqual([
          { value: "sfw", display_name: "Safe for work", count: sfwLive.length }
        ])
        const nsfwOnly = yield* list("/v2/catalog/works?content_rating=nsfw&include_total=true", "sfw")
        expect(nsfwOnly.items).toEqual([])
        expect(nsfwOnly.total).toBe(0)
      }))

    it.effect("a merged-away work is 404 ENTITY_MERGED with current_id and Link (docs/api-contract.md, \"Errors: catalog problem documents\")", () =>
      Effect.gen(function*() {
        const rows = yield* works
        const merged = rows.find((r) => r.merged_into !== null)!
        const sql = yield* SqlClient.SqlClient
        const [redirect] = yield* sql<{ current_id: string }>`
          SELECT current_id::text AS current_id FROM catalog_redirects
          WHERE target_object = 'work' AND from_id = ${merged.id}::bigint`
        for (const suffix of ["", "/characters", "/credits", "/covers", "/intros"]) {
          const path = `/v2/catalog/works/${merged.id}${suffix}`
          const res = yield* raw(path)
          expect(res.headers.get("link")).toMatch(
            new RegExp(`<[^>]*/v2/catalog/works/${redirect!.current_id}>; rel="canonical"`)
          )
          const p = yield* Effect.promise(() => expectProblem(res, "ENTITY_MERGED", path))
          expect(p.object).toBe("work")
          expect(p.current_id).toBe(redirect!.current_id)
        }
        yield* problem("/v2/catalog/works/999999999", "NOT_FOUND")
        yield* problem("/v2/catalog/works/99999999999999999999/credits", "NOT_FOUND")
        const nsfw = rows.find((r) => r.live && r.nsfw)!
        yield* problem(`/v2/catalog/works/${nsfw.id}`, "NOT_FOUND", "sfw")
        yield* problem(`/v2/catalog/works/${nsfw.id}/characters`, "NOT_FOUND", "sfw")
      }))

    it.effect("the single-work read is view=full with its roster, ETag and 304 (docs/api-contract.md, \"Records and lists\", \"Caching, ETags and freshness\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [id] = yield* sql<{ id: string }>`
          SELECT w.id::text AS id FROM works w WHERE w.live AND NOT w.nsfw
            AND EXISTS (SELECT 1 FROM work_characters wc WHERE wc.work_id = w.id) ORDER BY w.id LIMIT 1`
        const path = `/v2/catalog/works/${id!.id}`
        const c = yield* Catalog
        const res = yield* c.get(path)
        expect(res.status).toBe(200)
        const work = Schema.decodeUnknownSync(Work)(res.body)
        expect(Object.keys(res.body).sort()).toEqual([...BASIC_FIELDS, ...FULL_FIELDS, "characters"].sort())
        expect(work.characters!.length).toBeGreaterThan(0)
        for (const ch of work.characters!) expect(ch.identity.length).toBeGreaterThan(0)
        const etag = res.headers.get("etag")!
        expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/)
        const again = yield* raw(path, "nsfw", { "if-none-match": etag })
        expect(again.status).toBe(304)
        expect(again.headers.get("etag")).toBe(etag)
        const changed = yield* c.get(`${path}?include=tags`, { headers: { "if-none-match": etag } })
        expect(changed.status).toBe(200)
        expect(changed.body.tags).toBeDefined()
        const basic = yield* c.get(`${path}?view=basic&include=${workIncludes.join(",")}`)
        expect(Object.keys(basic.body).sort()).toEqual([...BASIC_FIELDS, ...workIncludes].sort())
        Schema.decodeUnknownSync(Work)(basic.body)
        yield* problem(`${path}?include=bogus`, "UNKNOWN_INCLUDE")
        // One representation (docs/api-contract.md, "Records and lists"): the detail is the batch
        // lane's item with the same view and
        // includes, plus the embedded roster, which is the roster list's first page.
        const every = `view=full&include=${workIncludes.join(",")}`
        const { characters, ...item } = (yield* c.get(`${path}?${every}`)).body
        const batch = yield* c.get(`/v2/catalog/works?ids=${id!.id}&${every}`)
        expect(item).toEqual(batch.body.items[0])
        expect(characters).toEqual((yield* ok(`${path}/characters?limit=100`, ListRosterCharacter)).items)
      }))

    it.effect("roster, credits, covers and intros are cursor lists of the work (docs/api-contract.md, \"Records and lists\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [w] = yield* sql<{ id: string }>`
          SELECT w.id::text AS id FROM works w WHERE w.live
            AND (SELECT count(*) FROM work_characters wc WHERE wc.work_id = w.id) > 1
            AND (SELECT count(*) FROM covers c WHERE c.work_id = w.id) > 1
            AND (SELECT count(DISTINCT role_key) FROM credits c WHERE c.work_id = w.id) > 1
          ORDER BY w.id LIMIT 1`
        const base = `/v2/catalog/works/${w!.id}`
        const detail = yield* ok(`${base}?include=covers,credits,intros`, Work)
        const cases = [
          ["characters", ListRosterCharacter, detail.characters],
          ["credits", ListCreditGroup, detail.credits],
          ["covers", ListCover, detail.covers],
          ["intros", ListIntro, detail.intros]
        ] as const
        for (const [name, schema, expected] of cases) {
          const whole = yield* ok(`${base}/${name}?limit=100`, schema as any)
          expect(whole.items, name).toEqual(expected)
          expect(whole.next_cursor).toBeUndefined()
          const paged: Array<unknown> = []
          let cursor: string | undefined
          do {
            const page: any = yield* ok(
              `${base}/${name}?limit=1${cursor === undefined ? "" : `&cursor=${cursor}`}`,
              schema as any
            )
            paged.push(...page.items)
            cursor = page.next_cursor
          } while (cursor !== undefined)
          expect(paged, name).toEqual(expected)
        }
        // A cursor is bound to its list and its work.
        const first = yield* ok(`${base}/covers?limit=1`, ListCover)
        yield* problem(`${base}/intros?cursor=${first.next_cursor}`, "INVALID_CURSOR")
        yield* problem(`/v2/catalog/works/1/covers?cursor=${first.next_cursor}`, "INVALID_CURSOR")
        yield* problem(`${base}/covers?limit=101`, "LIMIT_TOO_LARGE")
      }))

    it.effect("the works endpoints need a credential with catalog:read (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        for (const path of ["/v2/catalog/works", "/v2/catalog/search?q=x", "/v2/catalog/works/1"]) {
          const res = yield* Effect.promise(() => fetch(`${c.base}${path}`))
          yield* Effect.promise(() => expectProblem(res, "MISSING_CREDENTIAL", path))
        }
      }))
  })
})
