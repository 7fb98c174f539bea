/**
 * Works and search: the works collection with its three lanes (cursor, page, `ids=`/`refs=`
 * batch), the search collection, the single-work read and a work's roster, credits, covers and intros.
 */
import { Schema, SchemaTransformation } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { CachedBy, cachedBy, NotModified, problemCodeOnFailure, RequiredScope } from "../Annotations.js"
import { ListRosterCharacter } from "../Catalog/Character.js"
import { ContentRating, Id, LangTag, ListCover, ListIntro, Medium, Platform, WorkId } from "../Catalog/Common.js"
import { ListCreditGroup } from "../Catalog/Credit.js"
import { BooleanParam, choice, CursorParam, IdList, Limit, MAX_DEPTH, Page, tokenList } from "../Catalog/Query.js"
import { ListWork, Work } from "../Catalog/Work.js"
import {
  EntityMerged,
  InvalidCursor,
  LimitTooLarge,
  NotFound,
  problem,
  TooManyIds,
  UnknownFacet,
  UnknownInclude,
  UnknownSort
} from "../Problem.js"
import { isStorable } from "../Text.js"
import { Authorization } from "./Security.js"

// ---------------------------------------------------------------------------------------------
// Vocabularies (closed): include tokens, facets, sorts
// ---------------------------------------------------------------------------------------------

/** Include tokens on works (closed: any other is `UNKNOWN_INCLUDE`). */
export const workIncludes = [
  "titles",
  "refs",
  "intros",
  "covers",
  "companies",
  "ratings",
  "tags",
  "credits",
  "playtime"
] as const
export type WorkInclude = (typeof workIncludes)[number]

/** Facets (closed: any other is `UNKNOWN_FACET`); a facet's `value` is passed back as the filter of the same name. */
export const workFacets = ["tag_id", "company_id", "olang", "content_rating", "medium", "platform"] as const
export type WorkFacet = (typeof workFacets)[number]

/** The closed sort set (any other is `UNKNOWN_SORT`), with one `rating_<source>` per RatingSource. */
export const workSorts = [
  "id",
  "updated",
  "relevance",
  "released_desc",
  "released_asc",
  "popularity",
  "rating_vndb",
  "rating_bangumi",
  "rating_egs",
  "rating_steam",
  "rating_dlsite"
] as const
export type WorkSort = (typeof workSorts)[number]

/** Sorts that switch to the search lane even without `q=` (docs/decisions.md, "Search and facets"). */
export const searchLaneSorts: ReadonlySet<WorkSort> = new Set([
  "relevance",
  "rating_vndb",
  "rating_bangumi",
  "rating_egs",
  "rating_steam",
  "rating_dlsite"
])

/** Sorts that are meaningful together with `q=`. */
export const querySorts: ReadonlySet<WorkSort> = new Set(workSorts.filter((s) => s !== "id" && s !== "updated"))

export const WorkView = Schema.Literals(["basic", "full"]).annotate({
  description: "`basic` (default on lists) or `full` (default on the single-work read): full adds aliases, " +
    "development_status, engine, links and created_at, and on the single-work read the character roster."
})
export type WorkView = typeof WorkView.Type

// ---------------------------------------------------------------------------------------------
// Query parameters
// ---------------------------------------------------------------------------------------------

/** Every failing parameter is reported, not only the first (parse options of the path and the query). */
const strict = { errors: "all" } as const

const Sort = choice(
  workSorts,
  "UNKNOWN_SORT",
  "Order of the items (closed set). `id` (default without `q`; ascending), `updated` (most recently changed " +
    "first), `relevance` (default with `q`: a title equal to the query first, then titles starting with it, then " +
    "other matches, each by popularity; without `q` it is the popularity order), `released_desc` / " +
    "`released_asc` (first release date; undated works last either way, year-only dates before dated ones of " +
    "that year), `popularity` (most popular first), `rating_vndb`, `rating_bangumi`, `rating_egs`, " +
    "`rating_steam`, `rating_dlsite` (highest rated by that source first; works it does not rate come last). " +
    "Every sort ends with the work id as tie-breaker. `relevance` and the `rating_*` sorts use the search lane; " +
    "with `q`, `id` and `updated` are not allowed. Unknown value: `UNKNOWN_SORT` with `params.allowed`."
)

const Include = tokenList(
  workIncludes,
  "UNKNOWN_INCLUDE",
  "Extra members per work: `titles` (every title, WorkTitle[]), `refs` (upstream anchors, Ref[]), `intros` " +
    "(descriptions, Intro[]), `covers` (Cover[], best first), `companies` (developers and publishers, " +
    "WorkCompany[]), `ratings` (one Rating per source that rates the work), `tags` (WorkTag[], highest score " +
    "first), `credits` (CreditGroup[] by role), `playtime` (WorkPlaytime: how many users reported a playtime and " +
    "the median of their minutes). An unknown token is `UNKNOWN_INCLUDE` with `params.allowed`."
)

const Facets = tokenList(
  workFacets,
  "UNKNOWN_FACET",
  "Facet counts to return in `facets` (search lane), each computed under the same filters as the items: " +
    "`tag_id` and `company_id` (the 50 most frequent), `olang`, `content_rating`, `medium`, `platform` (all " +
    "values). Each FacetValue's `value` is passed back as the filter parameter of the same name. Counts are as " +
    "fresh as the items (cached until the next catalog write). Unknown name: `UNKNOWN_FACET` with `params.allowed`."
)

/**
 * `source:external_id` (the `refs=` batch lane). The pattern has no `u` flag, so `{1,256}` counts UTF-16
 * code units as it always has (the token is not in the OpenAPI document, which shows `refs` as a string).
 */
export const RefToken = Schema.String.check(
  Schema.isMaxLength(330),
  Schema.isPattern(/^[a-z][a-z0-9_]{0,63}:[^\u0000-\u001f,]{1,256}$/),
  isStorable
).annotate({ description: "`source:external_id`, e.g. `vndb:v17`." })

export const RefList = Schema.String.annotate({
  description: "Batch lane by upstream reference: up to 100 comma-separated `source:external_id` pairs, e.g. " +
    "`refs=vndb:v17,egs:100001,dlsite:RJ123456`. The source is the Ref's `source` (lower case); everything after " +
    "the first `:` is its `external_id`, matched exactly (so an external id may contain `:` but not `,`). " +
    "Items come in the order asked; a pair that matches no visible work is listed, as sent, in `missing[]`. " +
    "More than 100: `TOO_MANY_IDS`."
}).pipe(
  // The description sits on the string side: that is what the OpenAPI document shows of a query parameter.
  Schema.decodeTo(
    Schema.Array(RefToken).check(
      Schema.isMinLength(1),
      Schema.isMaxLength(100, problemCodeOnFailure("TOO_MANY_IDS"))
    ),
    SchemaTransformation.transform({
      decode: (s: string): ReadonlyArray<string> => s.split(","),
      encode: (refs: ReadonlyArray<string>) => refs.join(",")
    })
  )
)

const Query = Schema.String.check(
  Schema.isMinLength(1),
  Schema.isMaxLength(256),
  isStorable
).annotate({
  description: "Title search (search lane) over every title, romanization and alias, case-, width- and " +
    "accent-insensitive; Japanese, Chinese and Korean titles are found by any substring. 1..256 characters."
})

const filterNote = "Filter (also the token of the facet of the same name)."

export const ListWorksParams = Schema.Struct({
  limit: Schema.optional(Limit),
  cursor: Schema.optional(CursorParam),
  page: Schema.optional(Page.annotate({
    description: `Page mode (search lane): 1-based page; the response has \`total\` and \`total_relation\` and ` +
      `no \`next_cursor\`. \`page * limit\` may not exceed ${MAX_DEPTH} (400 \`INVALID_PARAMETER\`, reason ` +
      "`OUT_OF_RANGE` with the largest reachable page as `params.maximum`). Not with `cursor`, `ids`, `refs`."
  })),
  ids: Schema.optional(IdList.pipe(Schema.annotateEncoded({
    description: "Batch lane: up to 100 comma-separated work ids. Items come in the order asked, without " +
      "`next_cursor`; ids that are unknown, merged away or not visible to the credential are listed in " +
      "`missing[]`. More than 100: `TOO_MANY_IDS`. Takes only `include` and `view` besides."
  }))),
  refs: Schema.optional(RefList),
  q: Schema.optional(Query),
  facets: Schema.optional(Facets),
  sort: Schema.optional(Sort),
  include: Schema.optional(Include),
  include_total: Schema.optional(BooleanParam.pipe(Schema.annotateEncoded({
    description: "`true` adds `total`, the number of matching works under the same content gate as the items " +
      "(exact, and as fresh as the items: cached until the next catalog write). Always present in page mode."
  }))),
  view: Schema.optional(WorkView),
  tag_id: Schema.optional(Id.annotate({ description: `Works carrying this tag. ${filterNote}` })),
  company_id: Schema.optional(
    Id.annotate({ description: `Works this company developed or published. ${filterNote}` })
  ),
  olang: Schema.optional(LangTag.annotate({ description: `Original language. ${filterNote}` })),
  content_rating: Schema.optional(
    ContentRating.annotate({ description: `\`sfw\` or \`nsfw\`. ${filterNote}` })
  ),
  medium: Schema.optional(Medium.annotate({ description: `Works released on this medium. ${filterNote}` })),
  platform: Schema.optional(Platform.annotate({
    description: "Works released on this platform (`works.platforms`). Listing lane only: not with `q`, " +
      "`page`, `facets` or a search sort. Also the token of the `platform` facet."
  })),
  owner_uid: Schema.optional(
    Schema.String.check(Schema.isPattern(/^[0-9]{1,20}$/u)).annotate({
      description: "Listing lane only: works whose claim is live and was made by this user (the identity " +
        "provider's user id, the `uid` a site stores). A site sees its claims in other states at `GET /v2/claims`."
    })
  ),
  site: Schema.optional(
    Schema.String.check(Schema.isPattern(/^[a-z][a-z0-9_]*$/u), Schema.isMaxLength(64)).annotate({
      description: "Listing lane only: works whose claim is live and held by this site. The answer is the " +
        "same for every caller; a site sees its claims in other states at `GET /v2/claims`."
    })
  )
})
export type ListWorksParams = typeof ListWorksParams.Type

export const GetWorkParams = Schema.Struct({
  view: Schema.optional(WorkView),
  include: Schema.optional(Include)
})
export type GetWorkParams = typeof GetWorkParams.Type

export const WorkListParams = Schema.Struct({
  limit: Schema.optional(Limit),
  cursor: Schema.optional(CursorParam)
})
export type WorkListParams = typeof WorkListParams.Type

export const WorkPath = Schema.Struct({ id: WorkId })

// ---------------------------------------------------------------------------------------------
// Endpoints
// ---------------------------------------------------------------------------------------------

const gateNote = "An `sfw` credential never sees an nsfw work: not in items, `missing[]` reasons, facets, " +
  "counts or totals."

/** The freshness bound of the cached works reads (docs/api-contract.md, "Caching, ETags and freshness"). */
const freshnessNote = "Answers, with their totals, facet counts and search matches, are cached per server process " +
  "and emptied by every catalog write: a read that begins after the write's commit notification has reached " +
  "the process sees the write (in practice within milliseconds of the commit); if a notification is lost, " +
  "nothing is kept longer than `CATALOG_CACHE_SECONDS` (default 60)."

const lanes = "Three lanes. **Cursor lane** (default): `limit` works per page (1..100, default 20; above 100 is " +
  "`LIMIT_TOO_LARGE`, never clamped), continued with `cursor` = the previous `next_cursor` until a page has " +
  "none (never infer the end from the item count). **Search lane**: `q`, `page`, `facets`, `sort=relevance` or " +
  "a `rating_*` sort select it; it serves page mode (`page` + `total` + `total_relation`, at most " +
  `${MAX_DEPTH} rows deep) as well as cursors, and cannot be combined with \`owner_uid\`, \`site\` or ` +
  "`platform`. **Batch lane**: `ids=` or `refs=` (at most 100) return the visible works in the order asked, " +
  "with `missing[]` and no cursor. Mixing lanes (`page` with `cursor`; `ids`/`refs` with paging, search or " +
  "filters; search with `owner_uid`/`site`/`platform`) is 400 `INVALID_PARAMETER` with one `INCONSISTENT_WITH` " +
  "entry per offending parameter. Filters `tag_id`, `company_id`, `olang`, `content_rating`, `medium` apply in " +
  "the cursor and search lanes."

const merged = "A merged-away id is 404 `ENTITY_MERGED` with `current_id` and a `Link: rel=\"canonical\"` header " +
  "(never a redirect); an unknown id, or an nsfw work for an `sfw` credential, is 404 `NOT_FOUND`."

const subList = (what: string) =>
  `${what} Cursor-paged like every list (\`limit\` 1..100, default 20; \`cursor\` = the previous ` +
  `\`next_cursor\`). ${merged}`

/** What the works list and the search collection refuse: the one engine behind both. */
const listWorksProblems = [
  problem(LimitTooLarge),
  problem(InvalidCursor),
  problem(TooManyIds),
  problem(UnknownInclude),
  problem(UnknownSort),
  problem(UnknownFacet)
]

/**
 * What the stored answers of the works reads depend on (`CachedBy`): the content limit and the URL;
 * nothing else of the credential (not its site: `site=` is a query parameter, part of the URL).
 */
export const WorksCaching = {
  list: cachedBy(["content_limit", "url"]),
  search: cachedBy(["content_limit", "url"]),
  get: cachedBy(["content_limit", "url"])
} as const

export class WorksApi extends HttpApiGroup.make("works")
  .add(
    HttpApiEndpoint.get("listWorks", "/v2/catalog/works", {
      query: ListWorksParams,
      success: ListWork,
      error: listWorksProblems
    })
      .annotate(CachedBy, WorksCaching.list)
      .annotate(OpenApi.Summary, "List works")
      .annotate(
        OpenApi.Description,
        `The work collection. ${lanes} \`include=\` adds titles, refs, intros, covers, companies, ` +
          "ratings, tags, credits, playtime; `view=full` adds aliases, development_status, engine, links, created_at. " +
          `${gateNote} ${freshnessNote}`
      )
  )
  .add(
    HttpApiEndpoint.get("searchWorks", "/v2/catalog/search", {
      query: ListWorksParams,
      success: ListWork,
      error: listWorksProblems
    })
      .annotate(CachedBy, WorksCaching.search)
      .annotate(OpenApi.Summary, "Search works")
      .annotate(
        OpenApi.Description,
        "The works collection in its search lane: `q` (optional), filters, `facets`, any sort, " +
          "page mode (`page`) or cursors, exactly as on `/v2/catalog/works`. `ids`, `refs`, `owner_uid`, `site` and " +
          "`platform` are not taken here (400 `INVALID_PARAMETER`, `INCONSISTENT_WITH`). Without `sort`, results " +
          `are by relevance when \`q\` is given, else by id. ${gateNote} ${freshnessNote}`
      )
  )
  .add(
    HttpApiEndpoint.get("getWork", "/v2/catalog/works/:id", {
      params: WorkPath,
      query: GetWorkParams,
      success: [
        Work,
        NotModified.pipe(HttpApiSchema.status(304))
      ],
      error: [
        problem(UnknownInclude),
        problem(NotFound),
        problem(EntityMerged)
      ]
    })
      .annotate(CachedBy, WorksCaching.get)
      .annotate(OpenApi.Summary, "Get a work")
      .annotate(
        OpenApi.Description,
        "One work, at `view=full` by default (aliases, development_status, engine, links, created_at and the " +
          "character roster `characters[]`, each row with its opaque `identity`); `view=basic` gives the list " +
          "face. `include=` tokens as on the list: `titles`, `refs`, `intros`, `covers`, `companies`, `ratings`, " +
          `\`tags\`, \`credits\`, \`playtime\`. Sends a strong \`ETag\`; \`If-None-Match\` answers 304. ${merged} ${gateNote} ` +
          freshnessNote
      )
  )
  .add(
    HttpApiEndpoint.get("listWorkCharacters", "/v2/catalog/works/:id/characters", {
      params: WorkPath,
      query: WorkListParams,
      success: ListRosterCharacter,
      error: [
        problem(LimitTooLarge),
        problem(InvalidCursor),
        problem(NotFound),
        problem(EntityMerged)
      ]
    })
      .annotate(OpenApi.Summary, "List a work's characters")
      .annotate(
        OpenApi.Description,
        subList(
          "The work's character roster in roster order: each character at view=basic with its `roster_role`, " +
            "`spoiler` and the row's opaque `identity` (echo it verbatim in a roster-suppression proposal)."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("listWorkCredits", "/v2/catalog/works/:id/credits", {
      params: WorkPath,
      query: WorkListParams,
      success: ListCreditGroup,
      error: [
        problem(LimitTooLarge),
        problem(InvalidCursor),
        problem(NotFound),
        problem(EntityMerged)
      ]
    })
      .annotate(OpenApi.Summary, "List a work's credits")
      .annotate(
        OpenApi.Description,
        subList(
          "The work's credits as one CreditGroup per role (director, scenario, art, music, voice...), in the " +
            "registry's role order; `limit` counts groups. Each entry carries its opaque row `identity`; voice " +
            "credits name the character voiced."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("listWorkCovers", "/v2/catalog/works/:id/covers", {
      params: WorkPath,
      query: WorkListParams,
      success: ListCover,
      error: [
        problem(LimitTooLarge),
        problem(InvalidCursor),
        problem(NotFound),
        problem(EntityMerged)
      ]
    })
      .annotate(OpenApi.Summary, "List a work's covers")
      .annotate(
        OpenApi.Description,
        subList(
          "The work's covers, best first: the pinned portrait cover, then by net votes, newest first on ties."
        )
      )
  )
  .add(
    HttpApiEndpoint.get("listWorkIntros", "/v2/catalog/works/:id/intros", {
      params: WorkPath,
      query: WorkListParams,
      success: ListIntro,
      error: [
        problem(LimitTooLarge),
        problem(InvalidCursor),
        problem(NotFound),
        problem(EntityMerged)
      ]
    })
      .annotate(OpenApi.Summary, "List a work's intros")
      .annotate(
        OpenApi.Description,
        subList("The work's descriptions, one per language and source, in the order the catalog keeps them.")
      )
  )
  .middleware(Authorization)
  .annotate(HttpApi.ParamsParseOptions, strict)
  .annotate(HttpApi.QueryParseOptions, strict)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "Works")
  .annotate(
    OpenApi.Description,
    "Visual novels: the collection with cursor, page and batch lanes, title search with facets, single works " +
      "and their rosters, credits, covers and intros."
  )
{}
