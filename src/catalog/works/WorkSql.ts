/**
 * The SQL of a work list, shared by the listing lane (WorksRepo) and the PostgreSQL search index:
 * the content gate, the filters, the sort expressions of migrations/0002_catalog.ts (repeated
 * exactly, so each keyset index applies) and the item JSON.
 *
 * Items are built by PostgreSQL as JSON text (`json_build_object`) and spliced into the response
 * as they are: the hot list path neither parses nor re-encodes rows. That SQL is generated from the
 * records of schema/Catalog/*.ts (shared/JsonSql.ts): here is only which column fills each member.
 */
import { Struct } from "effect"
import type { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import type { WorkFacet, WorkSort } from "../../../schema/Api/WorksApi.js"
import { RosterCharacter } from "../../../schema/Catalog/Character.js"
import { Cover, EntityName, type FacetValue, Intro, Ref, WorkLink } from "../../../schema/Catalog/Common.js"
import { CompanyBasic } from "../../../schema/Catalog/Company.js"
import { CreditEntry, CreditGroup } from "../../../schema/Catalog/Credit.js"
import { EngineRef } from "../../../schema/Catalog/Engine.js"
import { WorkPlaytime } from "../../../schema/Catalog/Playtime.js"
import { TagBasic, WorkTag } from "../../../schema/Catalog/Tag.js"
import { Rating, WorkBasic, WorkCompany, WorkFull, WorkTitle } from "../../../schema/Catalog/Work.js"
import { type Columns, objectSql } from "../shared/JsonSql.js"
import { rfc3339Sql } from "../shared/Rfc3339.js"

type Sql = SqlClient.SqlClient

/** The filters of the cursor and search lanes, with ids in canonical `bigint` form. */
export interface WorkFilters {
  readonly tag_id?: string | undefined
  readonly company_id?: string | undefined
  readonly olang?: string | undefined
  readonly content_rating?: "sfw" | "nsfw" | undefined
  readonly medium?: string | undefined
  /** Listing lane only. */
  readonly platform?: string | undefined
  /** Listing lane only: works whose claim is live and held by this site. */
  readonly site?: string | undefined
  /** Listing lane only: works whose live claim was made by this user (identity user id). */
  readonly owner_uid?: string | undefined
}

/** `w.live`, and not nsfw for an `sfw` credential. */
export const gateSql = (sql: Sql, nsfw: boolean): Fragment => nsfw ? sql`w.live` : sql`w.live AND NOT w.nsfw`

export const filterSql = (sql: Sql, filters: WorkFilters): Fragment => {
  const clauses: Array<Fragment> = []
  if (filters.tag_id !== undefined) {
    clauses.push(
      sql`EXISTS (SELECT 1 FROM work_tags ft WHERE ft.work_id = w.id AND ft.tag_id = ${filters.tag_id}::bigint)`
    )
  }
  if (filters.company_id !== undefined) {
    clauses.push(sql`EXISTS (SELECT 1 FROM work_companies fc
      WHERE fc.work_id = w.id AND fc.company_id = ${filters.company_id}::bigint)`)
  }
  if (filters.olang !== undefined) clauses.push(sql`w.olang = ${filters.olang}`)
  if (filters.content_rating !== undefined) clauses.push(sql`w.nsfw = ${filters.content_rating === "nsfw"}`)
  if (filters.medium !== undefined) clauses.push(sql`w.media @> ARRAY[${filters.medium}]::text[]`)
  if (filters.platform !== undefined) clauses.push(sql`w.platforms @> ARRAY[${filters.platform}]::text[]`)
  if (filters.site !== undefined) {
    clauses.push(sql`EXISTS (SELECT 1 FROM claims fs WHERE fs.work_id = w.id AND fs.state = 'live'
      AND fs.site = ${filters.site})`)
  }
  if (filters.owner_uid !== undefined) {
    clauses.push(sql`EXISTS (SELECT 1 FROM claims fo WHERE fo.work_id = w.id AND fo.state = 'live'
      AND fo.owner_uid = ${filters.owner_uid})`)
  }
  return clauses.length === 0 ? sql`TRUE` : sql.and(clauses)
}

// ---------------------------------------------------------------------------------------------
// Sorts
// ---------------------------------------------------------------------------------------------

type KeyType = "integer" | "real" | "timestamptz"

/** A keyset order: key expressions, then `w.id`, all in one direction. */
export interface SortSpec {
  readonly keys: ReadonlyArray<{ readonly expr: string; readonly type: KeyType }>
  readonly direction: "asc" | "desc"
}

const rating = (source: string): SortSpec => ({
  keys: [{ expr: `coalesce(w.rating_${source}, -1)`, type: "real" }],
  direction: "desc"
})

/**
 * The index expressions of each sort (migrations/0002_catalog.ts header). `relevance` without a
 * query is the popularity order; with one, the search index orders by match quality first.
 */
export const sortSpecs: Record<WorkSort, SortSpec> = {
  id: { keys: [], direction: "asc" },
  updated: { keys: [{ expr: "w.updated_at", type: "timestamptz" }], direction: "desc" },
  relevance: { keys: [{ expr: "w.popularity", type: "real" }], direction: "desc" },
  released_desc: { keys: [{ expr: "coalesce(w.released_key, -1)", type: "integer" }], direction: "desc" },
  released_asc: { keys: [{ expr: "coalesce(w.released_key, 2147483647)", type: "integer" }], direction: "asc" },
  popularity: { keys: [{ expr: "w.popularity", type: "real" }], direction: "desc" },
  rating_vndb: rating("vndb"),
  rating_bangumi: rating("bangumi"),
  rating_egs: rating("egs"),
  rating_steam: rating("steam"),
  rating_dlsite: rating("dlsite")
}

/** `k0, k1, ...` as text: cursor keys round-trip exactly through their text form. */
export const keyColumnsSql = (sql: Sql, spec: SortSpec): Fragment =>
  spec.keys.length === 0
    ? sql`NULL::text AS k0`
    : sql.csv(spec.keys.map((key, i) => sql.literal(`(${key.expr})::text AS k${i}`)))

export const orderSql = (sql: Sql, spec: SortSpec): Fragment => {
  const dir = spec.direction === "asc" ? "ASC" : "DESC"
  return sql.literal([...spec.keys.map((k) => `${k.expr} ${dir}`), `w.id ${dir}`].join(", "))
}

/** Rows strictly after `after` in the order of `spec`: one row comparison, as the index is ordered. */
export const afterSql = (
  sql: Sql,
  spec: SortSpec,
  after: { readonly key: ReadonlyArray<string | number | null>; readonly id: string } | undefined
): Fragment => {
  if (after === undefined) return sql`TRUE`
  const op = sql.literal(spec.direction === "asc" ? ">" : "<")
  const left = sql.literal(`(${[...spec.keys.map((k) => k.expr), "w.id"].join(", ")})`)
  const values = spec.keys.map((k, i) => sql`${String(after.key[i] ?? "")}::${sql.literal(k.type)}`)
  return sql`${left} ${op} (${sql.csv([...values, sql`${after.id}::bigint`])})`
}

// ---------------------------------------------------------------------------------------------
// Item JSON (generated from the record schemas: shared/JsonSql.ts)
// ---------------------------------------------------------------------------------------------

const workBasicColumns = {
  id: "w.id::text",
  display_name: "w.display_name",
  latin: "w.latin",
  olang: "w.olang",
  localized: "w.localized",
  released: `CASE WHEN w.released_year IS NULL THEN NULL ELSE concat_ws('-', lpad(w.released_year::text, 4, '0'),
    lpad(w.released_month::text, 2, '0'), lpad(w.released_day::text, 2, '0')) END`,
  content_rating: "CASE WHEN w.nsfw THEN 'nsfw' ELSE 'sfw' END",
  length_minutes: "w.length_minutes",
  platforms: "w.platforms",
  media: "w.media",
  popularity: "w.popularity",
  updated_at: rfc3339Sql("w.updated_at")
} satisfies Columns<typeof WorkBasic>

/** The view=full item: its array members (aliases, links) come after it, with the includes. */
const WorkFullItem = WorkFull.mapFields(Struct.omit(["aliases", "links"]))

const itemJson = {
  basic: objectSql(WorkBasic, workBasicColumns),
  full: objectSql(WorkFullItem, {
    ...workBasicColumns,
    development_status: "w.development_status",
    engine: `(SELECT ${objectSql(EngineRef, { id: "e.id::text", display_name: "e.display_name" })}
    FROM engines e WHERE e.id = w.engine_id AND e.live)`,
    created_at: rfc3339Sql("w.created_at")
  })
}

/**
 * The work item as JSON text, from `works w`: view=basic, or view=full without its array members
 * (aliases and links come with the includes, one query for the page).
 */
export const itemJsonSql = (sql: Sql, view: "basic" | "full"): Fragment => sql.literal(`${itemJson[view]}::text`)

/** The parts that come after the item: the include tokens plus the view=full arrays. */
export type WorkPart =
  | "titles"
  | "refs"
  | "intros"
  | "covers"
  | "companies"
  | "ratings"
  | "tags"
  | "credits"
  | "playtime"
  | "aliases"
  | "links"

/** A cover, from `covers c JOIN images i`. */
export const coverJson = objectSql(Cover, {
  id: "c.id::text",
  vote_count: "c.vote_count",
  portrait_pinned: "c.portrait_pinned",
  cover_kind: "c.cover_kind",
  url: "i.url",
  hash: "i.hash",
  width: "i.width",
  height: "i.height",
  thumbhash: "i.thumbhash",
  sexual: "i.sexual",
  violence: "i.violence",
  source: "i.source"
})

/** Best first: the pinned portrait cover, then by net votes, newest first on ties. */
export const coverOrder = "c.portrait_pinned DESC, c.vote_count DESC, c.id DESC"

/** The element of each part, from the tables its query (`partWhereSql`) reads. */
const partJson = {
  titles: objectSql(WorkTitle, {
    lang: "t.lang",
    value: "t.value",
    latin: "t.latin",
    is_main: "t.is_main",
    is_official: "t.is_official"
  }),
  refs: objectSql(Ref, { source: "r.source", external_id: "r.external_id", url: "r.url" }),
  intros: objectSql(Intro, { lang: "n.lang", value: "n.value", is_machine: "n.is_machine", source: "n.source" }),
  aliases: objectSql(EntityName, {
    lang: "a.lang",
    value: "a.value",
    alias_kind: "a.alias_kind",
    is_machine: "a.is_machine"
  }),
  links: objectSql(WorkLink, { site: "l.site", url: "l.url", label: "l.label", lang: "l.lang" }),
  companies: (nsfw: boolean) =>
    objectSql(WorkCompany, {
      company: objectSql(CompanyBasic, {
        id: "c.id::text",
        display_name: "c.display_name",
        latin: "c.latin",
        lang: "c.lang",
        localized: "c.localized",
        company_kind: "c.company_kind",
        work_count: nsfw ? "c.work_count" : "c.work_count_sfw"
      }),
      roles: `array_remove(ARRAY[CASE WHEN wc.developer THEN 'developer' END,
              CASE WHEN wc.publisher THEN 'publisher' END], NULL)`
    }),
  ratings: objectSql(Rating, { source: "r.source", score: "r.score", votes: "r.votes" }),
  tags: objectSql(WorkTag, {
    tag: objectSql(TagBasic, {
      id: "t.id::text",
      display_name: "t.display_name",
      localized: "t.localized",
      category: "t.category"
    }),
    spoiler: "wt.spoiler",
    score: "wt.score"
  }),
  credits: objectSql(CreditGroup, { role_key: "g.role_key", role_name: "g.role_name", credits: "g.credits" }),
  playtime: objectSql(WorkPlaytime, { players: "coalesce(s.players, 0)", median_minutes: "s.median_minutes" })
}

/** The company part's element for each content limit (`work_count` counts what the caller may see). */
const companyJson = { sfw: partJson.companies(false), nsfw: partJson.companies(true) }

/**
 * The query of one part for a whole page: one aggregate over `= ANY(ids)` (never a query per row).
 * Rows are (part, work id, JSON array text). Parts are separate statements on purpose: their union
 * is costly enough for the planner to pick a parallel plan, whose worker start-up costs more than
 * the query itself under concurrent load.
 */
export const partSql = (sql: Sql, part: WorkPart, ids: ReadonlyArray<string>, nsfw: boolean): Fragment =>
  partWhereSql(sql, part, sql`= ANY(${ids}::bigint[])`, nsfw)

/**
 * One part for the works whose id satisfies `any` (`= ANY(...)` for a page, `= $1` for a single
 * work: a plain equality lets PostgreSQL keep one generic plan for a prepared statement).
 */
export const partWhereSql = (sql: Sql, part: WorkPart, any: Fragment, nsfw: boolean): Fragment => {
  switch (part) {
    case "titles":
      return sql`SELECT 'titles' AS part, t.work_id::text AS id, json_agg(${sql.literal(partJson.titles)}
            ORDER BY t.is_main DESC, t.lang)::text AS json
          FROM work_titles t WHERE t.work_id ${any} GROUP BY t.work_id`
    case "refs":
      return sql`SELECT 'refs' AS part, r.entity_id::text AS id, json_agg(${sql.literal(partJson.refs)}
            ORDER BY r.source, r.external_id)::text AS json
          FROM entity_refs r WHERE r.entity_id ${any} AND r.entity_type = 'work' GROUP BY r.entity_id`
    case "intros":
      return sql`SELECT 'intros' AS part, n.entity_id::text AS id, json_agg(${sql.literal(partJson.intros)}
            ORDER BY n.position)::text AS json
          FROM entity_intros n WHERE n.entity_id ${any} AND n.entity_type = 'work' GROUP BY n.entity_id`
    case "aliases":
      return sql`SELECT 'aliases' AS part, a.entity_id::text AS id, json_agg(${sql.literal(partJson.aliases)}
            ORDER BY a.position)::text AS json
          FROM entity_aliases a
          WHERE a.entity_id ${any} AND a.entity_type = 'work' AND a.alias_kind <> 'search_hint'
          GROUP BY a.entity_id`
    case "links":
      return sql`SELECT 'links' AS part, l.entity_id::text AS id, json_agg(${sql.literal(partJson.links)}
            ORDER BY l.position)::text AS json
          FROM entity_links l WHERE l.entity_id ${any} AND l.entity_type = 'work' GROUP BY l.entity_id`
    case "covers":
      return sql`SELECT 'covers' AS part, c.work_id::text AS id, json_agg(${sql.literal(coverJson)}
            ORDER BY ${sql.literal(coverOrder)})::text AS json
          FROM covers c JOIN images i ON i.hash = c.image_hash WHERE c.work_id ${any} GROUP BY c.work_id`
    case "companies":
      return sql`SELECT 'companies' AS part, wc.work_id::text AS id, json_agg(${
        sql.literal(companyJson[nsfw ? "nsfw" : "sfw"])
      }
            ORDER BY wc.developer DESC, c.id)::text AS json
          FROM work_companies wc JOIN companies c ON c.id = wc.company_id AND c.live
          WHERE wc.work_id ${any} GROUP BY wc.work_id`
    case "ratings":
      return sql`SELECT 'ratings' AS part, r.work_id::text AS id, json_agg(${sql.literal(partJson.ratings)}
            ORDER BY array_position(ARRAY['vndb', 'bangumi', 'egs', 'steam', 'dlsite'], r.source))::text AS json
          FROM ratings r WHERE r.work_id ${any} GROUP BY r.work_id`
    case "tags":
      return sql`SELECT 'tags' AS part, wt.work_id::text AS id, json_agg(${sql.literal(partJson.tags)}
            ORDER BY wt.score DESC, t.id)::text AS json
          FROM work_tags wt JOIN tags t ON t.id = wt.tag_id AND t.live
            ${nsfw ? sql`` : sql`AND t.category <> 'sexual'`}
          WHERE wt.work_id ${any} GROUP BY wt.work_id`
    case "credits":
      return sql`SELECT 'credits' AS part, g.work_id::text AS id, json_agg(${sql.literal(partJson.credits)}
            ORDER BY g.position)::text AS json
          FROM (${creditGroupsSql(sql, any)}) g GROUP BY g.work_id`
    case "playtime":
      // One object per work, kept by the playtime writer (migrations/0028): no players is a row too.
      return sql`SELECT 'playtime' AS part, w.id::text AS id, ${sql.literal(partJson.playtime)}::text AS json
          FROM works w LEFT JOIN work_playtimes s ON s.work_id = w.id WHERE w.id ${any}`
  }
}

/** A roster row as RosterCharacter JSON, from `work_characters wc JOIN characters c`. */
export const rosterJson = objectSql(RosterCharacter, {
  id: "c.id::text",
  display_name: "c.display_name",
  latin: "c.latin",
  lang: "c.lang",
  localized: "c.localized",
  roster_role: "wc.roster_role",
  spoiler: "wc.spoiler",
  identity: "wc.identity"
})

/** Several parts in one statement (fine for small pages, where no parallel plan is considered). */
export const partsSql = (sql: Sql, parts: ReadonlyArray<WorkPart>, ids: ReadonlyArray<string>, nsfw: boolean) =>
  sql.join(" UNION ALL ", false)(parts.map((part) => partSql(sql, part, ids, nsfw)))

/** Every part of `parts` for one work, in one statement. */
export const workPartsSql = (sql: Sql, parts: ReadonlyArray<WorkPart>, id: string, nsfw: boolean) =>
  sql.join(" UNION ALL ", false)(parts.map((part) => partWhereSql(sql, part, sql`= ${id}::bigint`, nsfw)))

/** A credit of a group, from `credits c JOIN credit_names cn LEFT JOIN characters ch`. */
const creditEntryJson = objectSql(CreditEntry, {
  id: "cn.id::text",
  display_name: "cn.display_name",
  latin: "cn.latin",
  localized: "cn.localized",
  character_id: "ch.id::text",
  note: "c.note",
  identity: "c.identity"
})

/**
 * A work's unsuppressed credits grouped by role: (work_id, role_key, role_name, position, credits JSON
 * array).
 */
export const creditGroupsSql = (sql: Sql, workCondition: Fragment): Fragment =>
  sql`SELECT c.work_id, r.role_key, r.role_name, r.position,
      json_agg(${sql.literal(creditEntryJson)} ORDER BY c.position, c.identity) AS credits
    FROM credits c
    JOIN credit_roles r ON r.role_key = c.role_key
    JOIN credit_names cn ON cn.id = c.credit_name_id AND cn.live
    LEFT JOIN characters ch ON ch.id = c.character_id AND ch.live
    WHERE c.work_id ${workCondition} AND NOT c.suppressed
    GROUP BY c.work_id, r.role_key, r.role_name, r.position`

// ---------------------------------------------------------------------------------------------
// Facets
// ---------------------------------------------------------------------------------------------

/** Facets with a long tail return their most frequent values only. */
export const FACET_TOP = 50

/** The display names of the `content_rating` facet's two values. */
export const contentRatingNames = { sfw: "Safe for work", nsfw: "Not safe for work" } as const

/**
 * The counts of `facets` over the matched works, in one statement: `matched` selects the works
 * (`id, olang, nsfw, media, platforms`, and with `links: "arrays"` also `tag_ids, company_ids`); it
 * is materialized once and every facet aggregates over it. `links: "join"` counts tags and companies
 * through `work_tags`/`work_companies` (for rows of `works`), `"arrays"` by unnesting the ids
 * `work_facets` keeps (migrations/0008). Arrays are unnested in the select list (one ProjectSet
 * node) rather than by a lateral function scan per row, which costs about 40% more on large sets.
 * Rows: (facet, value, display_name, count), in no particular order (`sortFacet` orders them).
 */
export const facetsSql = (
  sql: Sql,
  facets: ReadonlyArray<WorkFacet>,
  matched: Fragment,
  links: "join" | "arrays"
): Fragment => {
  const selects = facets.map((facet): Fragment => {
    switch (facet) {
      case "tag_id":
        return sql`(SELECT 'tag_id' AS facet, f.tag_id::text AS value, t.display_name, f.n AS count
          FROM (SELECT ft.tag_id, count(*) AS n FROM ${
          links === "arrays"
            ? sql`(SELECT unnest(m.tag_ids) AS tag_id FROM m) ft`
            : sql`m JOIN work_tags ft ON ft.work_id = m.id`
        }
            GROUP BY ft.tag_id ORDER BY n DESC, ft.tag_id LIMIT ${FACET_TOP}) f
          JOIN tags t ON t.id = f.tag_id AND t.live)`
      case "company_id":
        return sql`(SELECT 'company_id' AS facet, f.company_id::text AS value, c.display_name, f.n AS count
          FROM (SELECT fc.company_id, count(*) AS n FROM ${
          links === "arrays"
            ? sql`(SELECT unnest(m.company_ids) AS company_id FROM m) fc`
            : sql`m JOIN work_companies fc ON fc.work_id = m.id`
        }
            GROUP BY fc.company_id ORDER BY n DESC, fc.company_id LIMIT ${FACET_TOP}) f
          JOIN companies c ON c.id = f.company_id AND c.live)`
      case "olang":
        return sql`(SELECT 'olang' AS facet, f.olang AS value, coalesce(l.display_name, f.olang) AS display_name, f.n AS count
          FROM (SELECT m.olang, count(*) AS n FROM m WHERE m.olang IS NOT NULL GROUP BY m.olang) f
          LEFT JOIN catalog_languages l ON l.tag = f.olang)`
      case "content_rating":
        return sql`(SELECT 'content_rating' AS facet, CASE WHEN m.nsfw THEN 'nsfw' ELSE 'sfw' END AS value,
            CASE WHEN m.nsfw THEN ${contentRatingNames.nsfw} ELSE ${contentRatingNames.sfw} END AS display_name,
            count(*) AS count
          FROM m GROUP BY m.nsfw)`
      case "medium":
        return sql`(SELECT 'medium' AS facet, f.code AS value, coalesce(x.display_name, f.code) AS display_name, f.n AS count
          FROM (SELECT u.code, count(*) AS n FROM (SELECT unnest(m.media) AS code FROM m) u GROUP BY u.code) f
          LEFT JOIN catalog_media x ON x.code = f.code)`
      case "platform":
        return sql`(SELECT 'platform' AS facet, f.code AS value, coalesce(x.display_name, f.code) AS display_name, f.n AS count
          FROM (SELECT u.code, count(*) AS n FROM (SELECT unnest(m.platforms) AS code FROM m) u GROUP BY u.code) f
          LEFT JOIN catalog_platforms x ON x.code = f.code)`
    }
  })
  return sql`WITH m AS MATERIALIZED (${matched}) ${sql.join(" UNION ALL ", false)(selects)}`
}

/** Most frequent first; ties by value (numerically for ids). */
export const sortFacet = (values: Array<FacetValue>, numeric: boolean): Array<FacetValue> =>
  values.sort((a, b) =>
    b.count - a.count ||
    (numeric ? Number(a.value) - Number(b.value) : a.value < b.value ? -1 : a.value > b.value ? 1 : 0)
  )
