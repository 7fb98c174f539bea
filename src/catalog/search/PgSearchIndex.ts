/**
 * The PostgreSQL search index (docs/decisions.md, "Search and facets"): `work_search` (trigram GIN on
 * the re-spelled `key`, see SearchKey.ts) for `q=`, the works table and its keyset indexes for
 * everything else.
 *
 * Cost model and the caches that follow from it (per process; all emptied at every catalog change and
 * kept `CATALOG_CACHE_SECONDS` at most, src/catalog/shared/CatalogChanges.ts):
 * - A query's result set is computed once, up to the page-mode depth (10,001 ids with their sort
 *   keys), and pages of it (page mode and cursors) are slices of it (16 result sets at most). A
 *   popular word can match tens of thousands of titles; ordering them costs one scan, not one per
 *   page. Cursors past the cached depth, or whose row has moved, continue with an exact keyset query.
 * - Without `q`, pages are keyset or OFFSET (at most 10,000 deep) queries on the sort's index.
 * - Facets and exact totals are aggregates over every matching work. Those of the unfiltered catalog
 *   come from one grouped scan of `works` plus the maintained `work_count`/`work_count_sfw` columns of
 *   tags and companies; those of a query or filter are computed over the matching works. Both are
 *   kept until the next change. A query's matches are listed by the database and counted in memory
 *   (FacetIndex.ts, exact on its own: it catches up with committed writes before each count); a
 *   filter without a query counts in SQL.
 */
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import type { WorkFacet } from "../../../schema/Api/WorksApi.js"
import { workFacets } from "../../../schema/Api/WorksApi.js"
import { FacetValue } from "../../../schema/Catalog/Common.js"
import { MAX_DEPTH } from "../../../schema/Catalog/Query.js"
import { CatalogChanges } from "../shared/CatalogChanges.js"
import { type SearchHit, SearchIndex, type SearchRequest } from "../works/SearchIndex.js"
import {
  afterSql,
  contentRatingNames,
  FACET_TOP,
  facetsSql,
  filterSql,
  gateSql,
  keyColumnsSql,
  orderSql,
  sortFacet,
  sortSpecs,
  type WorkFilters
} from "../works/WorkSql.js"
import { type CountedFacet, makeFacetIndex } from "./FacetIndex.js"
import { searchPattern } from "./SearchKey.js"

/** Rows fetched to decide page mode's `total_relation`: one more than the deepest reachable row. */
const CAP = MAX_DEPTH + 1

// The rows of the search statements, decoded as they are read (every statement is assembled from
// the request's fragments, so each is decoded after it runs rather than through `SqlSchema`).
// `count(*)` is int8: decimal text (src/platform/Database.ts).

/** A hit: its id and sort key columns (`k0`, `k1`, as text; as many as the order is wide). */
const decodeHits = Schema.decodeUnknownEffect(
  Schema.Array(Schema.Struct({
    id: Schema.String,
    k0: Schema.optionalKey(Schema.NullOr(Schema.String)),
    k1: Schema.optionalKey(Schema.NullOr(Schema.String))
  }))
)
const decodeCount = Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({ n: Schema.NumberFromString })))
const FacetName = Schema.Literals(workFacets)
const decodeStatsGroups = Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({
  kind: Schema.Literals(["olang", "platform", "medium"]),
  value: Schema.NullOr(Schema.String),
  nsfw: Schema.Boolean,
  n: Schema.Int
})))
const decodeNames = Schema.decodeUnknownEffect(
  Schema.Array(Schema.Struct({ kind: Schema.String, code: Schema.String, display_name: Schema.String }))
)
const decodeTop = Schema.decodeUnknownEffect(Schema.Array(FacetValue))
const decodeIdLists = Schema.decodeUnknownEffect(
  Schema.Array(Schema.Struct({ sfw: Schema.NullOr(Schema.String), nsfw: Schema.NullOr(Schema.String) }))
)
const decodeFacetNames = Schema.decodeUnknownEffect(
  Schema.Array(Schema.Struct({ facet: Schema.String, value: Schema.String, display_name: Schema.String }))
)
const decodeFacetCounts = Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({
  facet: FacetName,
  value: Schema.String,
  display_name: Schema.String,
  count: Schema.NumberFromString
})))

interface ResultSet {
  readonly hits: ReadonlyArray<SearchHit>
  /** False when the query has more hits than were kept. */
  readonly complete: boolean
  index?: Map<string, number>
}

interface GateStats {
  readonly total: number
  readonly facets: Readonly<Record<WorkFacet, ReadonlyArray<FacetValue>>>
}

type Match = { readonly needle: string; readonly pattern: string }

interface Ordering {
  readonly columns: Fragment
  readonly order: Fragment
  readonly after: (after: { readonly key: ReadonlyArray<string | number | null>; readonly id: string }) => Fragment
  readonly width: number
}

const hasFilters = (filters: WorkFilters) => Object.values(filters).some((v) => v !== undefined)

const cacheKey = (kind: string, request: SearchRequest, extra: unknown = null) =>
  JSON.stringify([
    kind,
    request.nsfw,
    request.q ?? null,
    Object.entries(request.filters).filter(([, v]) => v !== undefined).sort(),
    extra
  ])

export const PgSearchIndexLive = Layer.effect(
  SearchIndex,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const facetIndex = yield* makeFacetIndex
    // Capacities as before; freshness is the catalog's one model (CatalogChanges.ts): emptied at
    // every change, kept `CATALOG_CACHE_SECONDS` at most.
    const changes = yield* CatalogChanges
    const resultSets = yield* changes.cache<ResultSet>({ name: "catalog_search_results", capacity: 16 })
    const counts = yield* changes.cache<number>({ name: "catalog_search_counts", capacity: 512 })
    const facetCache = yield* changes.cache<Readonly<Record<string, ReadonlyArray<FacetValue>>>>({
      name: "catalog_search_facets",
      capacity: 256
    })
    const statsCache = yield* changes.cache<{ readonly sfw: GateStats; readonly nsfw: GateStats }>({
      name: "catalog_search_stats",
      capacity: 1
    })

    /** The rows of `work_search` a query matches (the trigram index narrows, `strpos` decides). */
    const matches = (match: Match) => sql`s.key LIKE ${match.pattern} AND strpos(s.norm, ${match.needle}) > 0`
    /** The content gate on `work_search`'s copies of `live` and `nsfw`. */
    const searchGate = (nsfw: boolean) => nsfw ? sql`s.live` : sql`s.live AND NOT s.nsfw`

    /**
     * `FROM` and `WHERE` of the works matching a request, and its id column. A query without filters
     * that needs nothing else of `works` (`wholeWorks` false) stays in `work_search`, which carries
     * the ranking and gate columns (migrations/0006): no probe into `works` per match.
     */
    const source = (request: SearchRequest, match: Match | undefined, wholeWorks: boolean) => {
      if (match === undefined) {
        return {
          id: sql`w.id`,
          from: sql`works w`,
          where: sql`${gateSql(sql, request.nsfw)} AND ${filterSql(sql, request.filters)}`
        }
      }
      return wholeWorks || hasFilters(request.filters)
        ? {
          id: sql`w.id`,
          from: sql`work_search s JOIN works w ON w.id = s.work_id`,
          where: sql`${matches(match)} AND ${gateSql(sql, request.nsfw)} AND ${filterSql(sql, request.filters)}`
        }
        : {
          id: sql`s.work_id`,
          from: sql`work_search s`,
          where: sql`${matches(match)} AND ${searchGate(request.nsfw)}`
        }
    }

    /**
     * The order of a request. `relevance` with a query: a name equal to the query, then a name
     * starting with it, then any other match; each tier by popularity, then id (all descending but
     * the tier, so the keyset condition is spelled out).
     */
    const ordering = (request: SearchRequest, match: Match | undefined): Ordering => {
      if (request.sort === "relevance" && match !== undefined) {
        const nl = "\n"
        const tier = sql`(CASE WHEN strpos(${nl} || s.norm || ${nl}, ${nl} || ${match.needle} || ${nl}) > 0 THEN 0
          WHEN strpos(${nl} || s.norm, ${nl} || ${match.needle}) > 0 THEN 1 ELSE 2 END)`
        return {
          columns: sql`${tier}::text AS k0, s.popularity::text AS k1`,
          order: sql`${tier} ASC, s.popularity DESC, s.work_id DESC`,
          after: (after) =>
            sql`(${tier} > ${Number(after.key[0])} OR (${tier} = ${Number(after.key[0])}
              AND (s.popularity, s.work_id) < (${String(after.key[1])}::real, ${after.id}::bigint)))`,
          width: 2
        }
      }
      const spec = sortSpecs[request.sort]
      return {
        columns: keyColumnsSql(sql, spec),
        order: orderSql(sql, spec),
        after: (after) => afterSql(sql, spec, after),
        width: spec.keys.length
      }
    }

    const toHits = (
      rows: ReadonlyArray<{ readonly id: string; readonly k0?: string | null; readonly k1?: string | null }>,
      width: number
    ): Array<SearchHit> =>
      rows.map((row) => ({
        id: row.id,
        key: width === 0 ? [] : width === 1 ? [row.k0 ?? null] : [row.k0 ?? null, row.k1 ?? null]
      }))

    const hitsQuery = (
      request: SearchRequest,
      match: Match | undefined,
      options: {
        readonly after?: { readonly key: ReadonlyArray<string | number | null>; readonly id: string } | undefined
        readonly offset?: number | undefined
        readonly limit: number
      }
    ) => {
      // Only the relevance order of a query is spelled on `work_search`'s own columns.
      const { from, id, where } = source(request, match, !(request.sort === "relevance" && match !== undefined))
      const order = ordering(request, match)
      return sql`
        SELECT ${id}::text AS id, ${order.columns} FROM ${from}
        WHERE ${where} ${options.after === undefined ? sql`` : sql`AND ${order.after(options.after)}`}
        ORDER BY ${order.order}
        ${options.offset ? sql`OFFSET ${options.offset}` : sql``} LIMIT ${options.limit}`.pipe(
        Effect.flatMap(decodeHits),
        Effect.map((rows) => toHits(rows, order.width)),
        Effect.orDie,
        Effect.withSpan("PgSearchIndex.hits")
      )
    }

    /** The result set of a query, computed once up to the depth limit. */
    const resultSet = (request: SearchRequest, match: Match) =>
      resultSets.get(
        cacheKey("hits", request, request.sort),
        Effect.map(hitsQuery(request, match, { limit: CAP }), (hits) => ({ hits, complete: hits.length < CAP }))
      )

    const indexOf = (set: ResultSet, id: string) => {
      if (set.index === undefined) set.index = new Map(set.hits.map((hit, i) => [hit.id, i]))
      return set.index.get(id) ?? -1
    }

    /** The query of a request: none (`q` absent), or the match; `null` when `q` folds to nothing. */
    const matchOf = (request: SearchRequest): Match | undefined | null =>
      request.q === undefined ? undefined : searchPattern(request.q) ?? null

    const countUpTo = (request: SearchRequest, cap: number) =>
      counts.get(
        cacheKey("count-up-to", request, cap),
        sql`
          SELECT count(*)::text AS n FROM (SELECT 1 FROM works w
            WHERE ${gateSql(sql, request.nsfw)} AND ${filterSql(sql, request.filters)} LIMIT ${cap}) x`.pipe(
          Effect.flatMap(decodeCount),
          Effect.map((rows) => rows[0]?.n ?? 0),
          Effect.orDie,
          Effect.withSpan("PgSearchIndex.countUpTo")
        )
      )

    const exactCount = (request: SearchRequest, match: Match | undefined) => {
      const { from, where } = source(request, match, false)
      return counts.get(
        cacheKey("count", request),
        sql`SELECT count(*)::text AS n FROM ${from} WHERE ${where}`.pipe(
          Effect.flatMap(decodeCount),
          Effect.map((rows) => rows[0]?.n ?? 0),
          Effect.orDie,
          Effect.withSpan("PgSearchIndex.count")
        )
      )
    }

    // --- Statistics of the unfiltered catalog -----------------------------------------------------

    const computeStats = Effect.gen(function*() {
      // Three hash aggregates (grouping by the arrays themselves would sort them): per nsfw flag.
      const groups = yield* sql`
        SELECT 'olang' AS kind, olang AS value, nsfw, count(*)::int AS n FROM works WHERE live GROUP BY 2, 3
        UNION ALL SELECT 'platform', p, nsfw, count(*)::int FROM works, unnest(platforms) AS p WHERE live GROUP BY 2, 3
        UNION ALL SELECT 'medium', m, nsfw, count(*)::int FROM works, unnest(media) AS m WHERE live GROUP BY 2, 3`
        .pipe(Effect.flatMap(decodeStatsGroups))
      const names = yield* sql`
        SELECT 'olang' AS kind, tag AS code, display_name FROM catalog_languages
        UNION ALL SELECT 'platform', code, display_name FROM catalog_platforms
        UNION ALL SELECT 'medium', code, display_name FROM catalog_media`.pipe(Effect.flatMap(decodeNames))
      const top = (table: "tags" | "companies", nsfw: boolean) => {
        const column = sql.literal(nsfw ? "work_count" : "work_count_sfw")
        return sql`
          SELECT id::text AS value, display_name, ${column} AS count FROM ${sql(table)}
          WHERE live AND ${column} > 0 ORDER BY ${column} DESC, id LIMIT ${FACET_TOP}`.pipe(Effect.flatMap(decodeTop))
      }
      const [tagsSfw, tagsAll, companiesSfw, companiesAll] = yield* Effect.all([
        top("tags", false),
        top("tags", true),
        top("companies", false),
        top("companies", true)
      ])
      const displayName = new Map(names.map((n) => [`${n.kind}:${n.code}`, n.display_name]))
      const gate = (nsfw: boolean, tags: ReadonlyArray<FacetValue>, companies: ReadonlyArray<FacetValue>) => {
        const tally = {
          olang: new Map<string, number>(),
          content_rating: new Map<string, number>(),
          platform: new Map<string, number>(),
          medium: new Map<string, number>()
        }
        let total = 0
        const add = (map: Map<string, number>, value: string, n: number) => map.set(value, (map.get(value) ?? 0) + n)
        for (const g of groups) {
          if (g.nsfw && !nsfw) continue
          if (g.kind === "olang") {
            total += g.n
            add(tally.content_rating, g.nsfw ? "nsfw" : "sfw", g.n)
          }
          if (g.value !== null) add(tally[g.kind], g.value, g.n)
        }
        const values = (kind: keyof typeof tally, name: (value: string) => string): Array<FacetValue> =>
          sortFacet([...tally[kind]].map(([value, count]) => ({ value, display_name: name(value), count })), false)
        const stats: GateStats = {
          total,
          facets: {
            tag_id: tags,
            company_id: companies,
            olang: values("olang", (v) => displayName.get(`olang:${v}`) ?? v),
            content_rating: values("content_rating", (v) => contentRatingNames[v as "sfw" | "nsfw"]),
            medium: values("medium", (v) => displayName.get(`medium:${v}`) ?? v),
            platform: values("platform", (v) => displayName.get(`platform:${v}`) ?? v)
          }
        }
        return stats
      }
      return { sfw: gate(false, tagsSfw, companiesSfw), nsfw: gate(true, tagsAll, companiesAll) }
    }).pipe(Effect.orDie, Effect.withSpan("PgSearchIndex.stats"))

    const stats = (nsfw: boolean) => Effect.map(statsCache.get("stats", computeStats), (s) => nsfw ? s.nsfw : s.sfw)

    // --- Facet counts of a query or filter ------------------------------------------------------

    type Facets = Record<string, Array<FacetValue>>

    const sorted = (out: Facets, wanted: ReadonlyArray<WorkFacet>): Facets => {
      for (const facet of wanted) sortFacet(out[facet]!, facet === "tag_id" || facet === "company_id")
      return out
    }

    /**
     * A query's counts from the in-memory copy (FacetIndex.ts): the database lists the matching works
     * (split by the content flag, which is the `content_rating` facet), the copy counts their values,
     * and one small statement names the values that made the cut.
     */
    const countInMemory = (request: SearchRequest, match: Match, wanted: ReadonlyArray<WorkFacet>) =>
      Effect.gen(function*() {
        const { from, id, where } = source(request, match, false)
        const [lists] = yield* sql`
          SELECT string_agg(${id}::text, ',') FILTER (WHERE NOT s.nsfw) AS sfw,
            string_agg(${id}::text, ',') FILTER (WHERE s.nsfw) AS nsfw
          FROM ${from} WHERE ${where}`.pipe(Effect.flatMap(decodeIdLists))
        const ids = [lists?.sfw ?? "", lists?.nsfw ?? ""]
        const counted = wanted.filter((f): f is CountedFacet => f !== "content_rating")
        const counts = yield* facetIndex.count(ids, counted)
        if (counts === undefined) return yield* countInSql(request, match, wanted)
        const top = (facet: "tag_id" | "company_id") =>
          [...counts[facet]].sort((a, b) => b[1] - a[1] || Number(a[0]) - Number(b[0])).slice(0, FACET_TOP)
        const tags = counted.includes("tag_id") ? top("tag_id") : []
        const companies = counted.includes("company_id") ? top("company_id") : []
        const vocabulary = (facet: "olang" | "medium" | "platform") => counted.includes(facet) ? counts[facet] : []
        const names = yield* sql`
          SELECT 'tag_id' AS facet, id::text AS value, display_name FROM tags
            WHERE live AND id = ANY(${tags.map(([v]) => v)}::bigint[])
          UNION ALL SELECT 'company_id', id::text, display_name FROM companies
            WHERE live AND id = ANY(${companies.map(([v]) => v)}::bigint[])
          UNION ALL SELECT 'olang', tag, display_name FROM catalog_languages
            WHERE tag = ANY(${vocabulary("olang").map(([v]) => v)}::text[])
          UNION ALL SELECT 'medium', code, display_name FROM catalog_media
            WHERE code = ANY(${vocabulary("medium").map(([v]) => v)}::text[])
          UNION ALL SELECT 'platform', code, display_name FROM catalog_platforms
            WHERE code = ANY(${vocabulary("platform").map(([v]) => v)}::text[])`.pipe(Effect.flatMap(decodeFacetNames))
        const name = new Map(names.map((n) => [`${n.facet}:${n.value}`, n.display_name]))
        const out: Facets = {}
        for (const facet of wanted) {
          if (facet === "content_rating") {
            const n = (list: string) => {
              let commas = 0
              for (let i = list.indexOf(","); i >= 0; i = list.indexOf(",", i + 1)) commas++
              return list === "" ? 0 : commas + 1
            }
            out[facet] = (["sfw", "nsfw"] as const)
              .map((value, i) => ({ value, display_name: contentRatingNames[value], count: n(ids[i]!) }))
              .filter((v) => v.count > 0)
          } else if (facet === "tag_id" || facet === "company_id") {
            // Like the SQL below: the most frequent values, then those still live.
            out[facet] = (facet === "tag_id" ? tags : companies).flatMap(([value, count]) => {
              const display_name = name.get(`${facet}:${value}`)
              return display_name === undefined ? [] : [{ value, display_name, count }]
            })
          } else {
            out[facet] = vocabulary(facet).map(([value, count]) => ({
              value,
              display_name: name.get(`${facet}:${value}`) ?? value,
              count
            }))
          }
        }
        return sorted(out, wanted)
      }).pipe(Effect.orDie, Effect.withSpan("PgSearchIndex.facetsInMemory"))

    /**
     * Counts in SQL: a filter without a query over `works` and its link tables; a query (while the
     * in-memory copy loads) over `work_facets` (migrations/0008), joined to `works` only when filters
     * need it.
     */
    const countInSql = (request: SearchRequest, match: Match | undefined, wanted: ReadonlyArray<WorkFacet>) => {
      const matched = match === undefined
        ? sql`SELECT w.id, w.olang, w.nsfw, w.media, w.platforms FROM works w
            WHERE ${gateSql(sql, request.nsfw)} AND ${filterSql(sql, request.filters)}`
        : hasFilters(request.filters)
        ? sql`SELECT f.work_id AS id, f.olang, s.nsfw, f.media, f.platforms, f.tag_ids, f.company_ids
            FROM work_search s JOIN works w ON w.id = s.work_id JOIN work_facets f ON f.work_id = s.work_id
            WHERE ${matches(match)} AND ${gateSql(sql, request.nsfw)} AND ${filterSql(sql, request.filters)}`
        : sql`SELECT f.work_id AS id, f.olang, s.nsfw, f.media, f.platforms, f.tag_ids, f.company_ids
            FROM work_search s JOIN work_facets f ON f.work_id = s.work_id
            WHERE ${matches(match)} AND ${searchGate(request.nsfw)}`
      return sql`${facetsSql(sql, wanted, matched, match === undefined ? "join" : "arrays")}`.pipe(
        Effect.flatMap(decodeFacetCounts),
        Effect.map((rows) => {
          const out: Facets = Object.fromEntries(wanted.map((f) => [f, []]))
          for (const row of rows) {
            out[row.facet]!.push({ value: row.value, display_name: row.display_name, count: row.count })
          }
          return sorted(out, wanted)
        }),
        Effect.orDie,
        Effect.withSpan("PgSearchIndex.facetCounts")
      )
    }

    // --- The interface ----------------------------------------------------------------------------

    const total = Effect.fn("PgSearchIndex.total")(function*(request: SearchRequest) {
      const match = matchOf(request)
      if (match === null) return { total: 0, relation: "eq" as const }
      const n = match === undefined
        ? yield* countUpTo(request, CAP)
        : (yield* resultSet(request, match)).hits.length
      return n < CAP ? { total: n, relation: "eq" as const } : { total: MAX_DEPTH, relation: "gte" as const }
    })

    const window = Effect.fn("PgSearchIndex.window")(
      function*(request: SearchRequest, offset: number, limit: number) {
        const match = matchOf(request)
        if (match === null || limit === 0) return []
        if (match === undefined) return yield* hitsQuery(request, undefined, { offset, limit })
        return (yield* resultSet(request, match)).hits.slice(offset, offset + limit)
      }
    )

    const after = Effect.fn("PgSearchIndex.after")(function*(
      request: SearchRequest,
      position: { readonly key: ReadonlyArray<string | number | null>; readonly id: string } | undefined,
      take: number
    ) {
      const match = matchOf(request)
      if (match === null) return []
      if (match === undefined) return yield* hitsQuery(request, undefined, { after: position, limit: take })
      // A first page needs `take` rows, not the result set: top-N instead of ordering every match.
      // Later pages (few clients go there) compute the set once and slice it.
      if (position === undefined && Option.isNone(yield* resultSets.peek(cacheKey("hits", request, request.sort)))) {
        return yield* hitsQuery(request, match, { limit: take })
      }
      const set = yield* resultSet(request, match)
      const start = position === undefined ? 0 : indexOf(set, position.id) + 1
      const samePosition = position === undefined ||
        (start > 0 && set.hits[start - 1]!.key.every((k, i) => k === String(position.key[i] ?? "")))
      if (samePosition && (set.complete || start + take <= set.hits.length)) {
        return set.hits.slice(start, start + take)
      }
      return yield* hitsQuery(request, match, { after: position, limit: take })
    })

    const count = Effect.fn("PgSearchIndex.count")(function*(request: SearchRequest) {
      const match = matchOf(request)
      if (match === null) return 0
      if (match === undefined) {
        if (!hasFilters(request.filters)) return (yield* stats(request.nsfw)).total
        return yield* exactCount(request, undefined)
      }
      const set = yield* resultSet(request, match)
      return set.complete ? set.hits.length : yield* exactCount(request, match)
    })

    const facets = Effect.fn("PgSearchIndex.facets")(
      function*(request: SearchRequest, names: ReadonlyArray<WorkFacet>) {
        const wanted = workFacets.filter((f) => names.includes(f))
        const match = matchOf(request)
        if (match === null) return Object.fromEntries(wanted.map((f) => [f, []]))
        if (match === undefined && !hasFilters(request.filters)) {
          const { facets } = yield* stats(request.nsfw)
          return Object.fromEntries(wanted.map((f) => [f, facets[f]]))
        }
        const computed = facetCache.get(
          cacheKey("facets", request, wanted),
          match !== undefined && facetIndex.ready()
            ? countInMemory(request, match, wanted)
            : countInSql(request, match, wanted)
        )
        return yield* computed
      }
    )

    return SearchIndex.of({ total, window, after, count, facets })
  })
)
