/**
 * Facet counts (docs/api-contract.md, "Records and lists"; FacetValue in schema/Catalog/Common.ts:
 * `count` is the hits after the same filters as the items), counted by the in-memory facet copy
 * (src/catalog/search/FacetIndex.ts): its table on its own, and the copy of a seeded catalog against counts taken from `works`, `work_tags` and
 * `work_companies` directly, before and after writes.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { type CountedFacet, type FacetRow, FacetTable, makeFacetIndex } from "../../src/catalog/search/FacetIndex.js"
import { foldText } from "../../src/catalog/search/SearchKey.js"
import { contentRatingNames } from "../../src/catalog/works/WorkSql.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"

const all: ReadonlyArray<CountedFacet> = ["tag_id", "company_id", "olang", "medium", "platform"]
const sortedPairs = (pairs: ReadonlyArray<readonly [string, number]>) =>
  [...pairs].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))

describe("FacetTable (the in-memory copy's table)", () => {
  it("counts each listed work's values once per list entry; unknown and skipped ids count nothing", () => {
    const table = new FacetTable()
    table.append([
      [1, "ja", ["vn"], ["win", "lin"], [5, 7], [100]],
      [2, null, [], ["win"], [7], []],
      [5, "en", ["vn", "dvd"], [], [], [100, 200]]
    ])
    const counts = table.count(["1,2", "5,3,999"], all)
    expect(sortedPairs(counts.tag_id)).toEqual([["5", 1], ["7", 2]])
    expect(sortedPairs(counts.company_id)).toEqual([["100", 2], ["200", 1]])
    expect(sortedPairs(counts.olang)).toEqual([["en", 1], ["ja", 1]])
    // A language that is an empty string is a value (SQL counts every non-null one), null is none.
    table.update([[3, "", [], [], [], []]])
    expect(table.count(["3,2"], ["olang"]).olang).toEqual([["", 1]])
    expect(sortedPairs(counts.medium)).toEqual([["dvd", 1], ["vn", 2]])
    expect(sortedPairs(counts.platform)).toEqual([["lin", 1], ["win", 2]])
    // Only the facets asked for; an empty list counts nothing.
    expect(Object.keys(table.count(["", "2"], ["platform"]))).toEqual(["platform"])
    expect(table.count([""], ["tag_id"]).tag_id).toEqual([])
  })

  it("a written work's new values replace its old ones, before and after compaction", () => {
    const table = new FacetTable()
    table.append([[1, "ja", [], ["win"], [5], []], [2, "ja", [], ["win"], [5], []]])
    table.update([[2, "ko", [], ["lin"], [6], [9]], [40, "en", [], [], [5], []]])
    const check = () => {
      const counts = table.count(["1,2,40"], all)
      expect(sortedPairs(counts.tag_id)).toEqual([["5", 2], ["6", 1]])
      expect(sortedPairs(counts.olang)).toEqual([["en", 1], ["ja", 1], ["ko", 1]])
      expect(sortedPairs(counts.platform)).toEqual([["lin", 1], ["win", 1]])
      expect(counts.company_id).toEqual([["9", 1]])
    }
    check()
    table.compact()
    check()
    expect(table.footprint().works).toBe(40)
  })

  it("agrees with a plain tally after random loads, writes and compactions", () => {
    let seed = 42
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % n
    }
    const pick = <A>(values: ReadonlyArray<A>, n: number) =>
      Array.from({ length: random(n) }, () => values[random(values.length)]!)
    const row = (id: number): FacetRow => [
      id,
      random(4) === 0 ? null : ["ja", "en", "zh-Hans", "ko"][random(4)]!,
      [...new Set(pick(["vn", "dvd", "cd"], 3))],
      [...new Set(pick(["win", "lin", "mac", "ps5", "swi"], 4))],
      [...new Set(Array.from({ length: random(8) }, () => 1 + random(700)))],
      [...new Set(Array.from({ length: random(3) }, () => 1 + random(50_000)))]
    ]
    const rows = new Map<number, FacetRow>()
    const table = new FacetTable()
    const loaded: Array<FacetRow> = []
    for (let id = 1; id <= 30_000; id += 1 + random(3)) loaded.push(row(id))
    table.append(loaded)
    for (const r of loaded) rows.set(r[0], r)
    const check = () => {
      const ids = [...rows.keys()].filter(() => random(3) === 0)
      const counts = table.count([ids.join(",")], all)
      const tally = Object.fromEntries(all.map((f) => [f, new Map<string, number>()])) as Record<
        CountedFacet,
        Map<string, number>
      >
      const add = (facet: CountedFacet, value: string | number) =>
        tally[facet].set(String(value), (tally[facet].get(String(value)) ?? 0) + 1)
      for (const id of ids) {
        const [, olang, media, platforms, tags, companies] = rows.get(id)!
        if (olang !== null) add("olang", olang)
        for (const v of media) add("medium", v)
        for (const v of platforms) add("platform", v)
        for (const v of tags) add("tag_id", v)
        for (const v of companies) add("company_id", v)
      }
      for (const facet of all) expect(sortedPairs(counts[facet]), facet).toEqual(sortedPairs([...tally[facet]]))
    }
    check()
    // Rewrites of loaded works and new works past the loaded range; the 12,000 writes of the second
    // round pass the automatic compaction's threshold.
    for (const writes of [500, 12_000]) {
      const written = Array.from({ length: writes }, () => row(1 + random(40_000)))
      table.update(written)
      for (const r of written) rows.set(r[0], r)
      check()
    }
    table.compact()
    check()
  })

  it("an id that does not fit a 32-bit code makes the table unusable (searches count in SQL)", () => {
    const table = new FacetTable()
    table.append([[1, null, [], [], [2 ** 28], []]])
    expect(table.usable).toBe(false)
  })
})

/** Counts of the facets over the works matching `q` (and `olang`), straight from the source tables. */
const truth = (q: string, olang?: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const matched = sql`SELECT w.id FROM work_search s JOIN works w ON w.id = s.work_id
      WHERE w.live AND strpos(s.norm, ${foldText(q)}) > 0 ${olang === undefined ? sql`` : sql`AND w.olang = ${olang}`}`
    const rows = yield* sql<{ facet: CountedFacet; value: string; n: number }>`
      SELECT 'tag_id' AS facet, t.tag_id::text AS value, count(*)::int AS n FROM work_tags t
        WHERE t.work_id IN (${matched}) GROUP BY 2
      UNION ALL SELECT 'company_id', c.company_id::text, count(*)::int FROM work_companies c
        WHERE c.work_id IN (${matched}) GROUP BY 2
      UNION ALL SELECT 'olang', w.olang, count(*)::int FROM works w
        WHERE w.id IN (${matched}) AND w.olang IS NOT NULL GROUP BY 2
      UNION ALL SELECT 'medium', m, count(*)::int FROM works w, unnest(w.media) m WHERE w.id IN (${matched}) GROUP BY 2
      UNION ALL SELECT 'platform', p, count(*)::int FROM works w, unnest(w.platforms) p
        WHERE w.id IN (${matched}) GROUP BY 2`
    const ids = yield* sql<{ id: string }>`${matched}`
    const out = Object.fromEntries(all.map((f) => [f, [] as Array<readonly [string, number]>])) as Record<
      CountedFacet,
      Array<readonly [string, number]>
    >
    for (const row of rows) out[row.facet].push([row.value, row.n])
    return { counts: out, ids: ids.map((r) => r.id) }
  })

describe("the facet copy of a seeded catalog (docs/decisions.md, \"Search and facets\")", () => {
  it.layer(SeededCatalogLive({ works: 300, seed: 5 }), { timeout: "300 seconds" })((it) => {
    it.effect("counts what the source tables count, and follows writes committed before a count", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const index = yield* makeFacetIndex
        for (let i = 0; i < 100 && !index.ready(); i++) {
          yield* Effect.promise(() => new Promise((r) => setTimeout(r, 50)))
        }
        expect(index.ready()).toBe(true)
        const compare = (q: string) =>
          Effect.gen(function*() {
            const expected = yield* truth(q)
            expect(expected.ids.length, q).toBeGreaterThan(0)
            const counts = yield* index.count([expected.ids.join(",")], all)
            for (const facet of all) {
              expect(sortedPairs(counts![facet]), `${q} ${facet}`).toEqual(
                sortedPairs(expected.counts[facet])
              )
            }
            return expected.ids
          })
        yield* compare("a")
        const ids = yield* compare("e")

        // Writes after the load: links added and removed, a work's own columns, a new work's row.
        const work = ids[0]!
        yield* sql`
          INSERT INTO work_tags (work_id, tag_id, spoiler, score)
          SELECT ${work}::bigint, t.id, 'none', 1 FROM tags t
          WHERE t.live AND t.id NOT IN (SELECT tag_id FROM work_tags WHERE work_id = ${work}::bigint)
          ORDER BY t.id DESC LIMIT 3`
        yield* sql`DELETE FROM work_companies WHERE work_id = ${ids[1]!}::bigint`
        yield* sql`UPDATE works SET platforms = ARRAY['ps5', 'win'], olang = 'ko', media = '{}' WHERE id = ${ids[
          2
        ]!}::bigint`
        yield* compare("e")
        yield* compare("a")
      }))

    it.effect("the API's search facets equal the source tables' counts (top 50 of tags and companies, filters applied)", () =>
      Effect.gen(function*() {
        const c = yield* Catalog
        // With a filter too (rule 4: the same filters as the items).
        for (const [q, olang] of [["o", undefined], ["an", undefined], ["a", "ja"]] as const) {
          const res = yield* c.get(
            `/v2/catalog/works?q=${q}&limit=1&facets=tag_id,company_id,olang,medium,platform,content_rating${
              olang === undefined ? "" : `&olang=${olang}`
            }`
          )
          expect(res.status).toBe(200)
          const expected = yield* truth(q, olang)
          expect(expected.ids.length).toBeGreaterThan(0)
          for (const facet of all) {
            const got = (res.body.facets[facet] as Array<{ value: string; count: number }>).map((v) =>
              [v.value, v.count] as const
            )
            const want = [...expected.counts[facet]].sort((a, b) =>
              b[1] - a[1] || (facet === "tag_id" || facet === "company_id"
                ? Number(a[0]) - Number(b[0])
                : a[0] < b[0]
                ? -1
                : 1)
            )
            expect(got, `${q} ${facet}`).toEqual(
              facet === "tag_id" || facet === "company_id" ? want.slice(0, 50) : want
            )
          }
          for (const v of res.body.facets.content_rating as Array<{ value: "sfw" | "nsfw"; display_name: string }>) {
            expect(v.display_name).toBe(contentRatingNames[v.value])
          }
          const rated = (res.body.facets.content_rating as Array<{ count: number }>).reduce((n, v) => n + v.count, 0)
          expect(rated).toBe(expected.ids.length)
        }
      }))
  })
})
