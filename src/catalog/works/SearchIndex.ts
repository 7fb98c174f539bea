/**
 * The search lane of the works collection (docs/decisions.md, "Search and facets") behind one
 * interface, so an external engine can replace PostgreSQL later: it answers which works match (`q`,
 * filters, content gate), in which order, how many, and the facet counts. It returns ids and sort
 * keys only; the works service renders the items, the same way as for the batch lane.
 *
 * The interface belongs to the works collection, which needs nothing else of search; the PostgreSQL
 * implementation (src/catalog/search/PgSearchIndex.ts) builds on the works SQL (WorkSql.ts) and is
 * plugged in by the server (src/catalog/CatalogServer.ts).
 */
import type { Effect } from "effect"
import { Context } from "effect"
import type { WorkFacet, WorkSort } from "../../../schema/Api/WorksApi.js"
import type { FacetValue } from "../../../schema/Catalog/Common.js"
import type { WorkFilters } from "./WorkSql.js"

export interface SearchRequest {
  /** The title query as given (`q=`); undefined: every work under the filters. */
  readonly q: string | undefined
  /** Facet filters (never `platform`, which is a listing-lane filter). */
  readonly filters: WorkFilters
  readonly sort: WorkSort
  /** The credential's content limit: false hides nsfw works from everything. */
  readonly nsfw: boolean
}

/** A matching work and its position in the request's order (sort key values as text, then id). */
export interface SearchHit {
  readonly id: string
  readonly key: ReadonlyArray<string | null>
}

export interface SearchTotal {
  readonly total: number
  /** `gte` when the count stopped at the page-mode depth (docs/api-contract.md, "Cursors and pages"). */
  readonly relation: "eq" | "gte"
}

export interface SearchIndexShape {
  /** Page mode: the number of hits, exact up to the depth limit, a lower bound beyond. */
  readonly total: (request: SearchRequest) => Effect.Effect<SearchTotal>
  /** Page mode: hits `offset` .. `offset + limit` (offset + limit <= the depth limit). */
  readonly window: (request: SearchRequest, offset: number, limit: number) => Effect.Effect<ReadonlyArray<SearchHit>>
  /** Cursor mode: up to `take` hits strictly after `after` (from the start when undefined). */
  readonly after: (
    request: SearchRequest,
    after: { readonly key: ReadonlyArray<string | number | null>; readonly id: string } | undefined,
    take: number
  ) => Effect.Effect<ReadonlyArray<SearchHit>>
  /** The exact number of hits (`include_total=true` in cursor mode). */
  readonly count: (request: SearchRequest) => Effect.Effect<number>
  /** Counts per facet under the same query, filters and gate as the hits. */
  readonly facets: (
    request: SearchRequest,
    facets: ReadonlyArray<WorkFacet>
  ) => Effect.Effect<Readonly<Record<string, ReadonlyArray<FacetValue>>>>
}

export class SearchIndex extends Context.Service<SearchIndex, SearchIndexShape>()("catalog/SearchIndex") {}
