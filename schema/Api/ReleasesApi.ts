/**
 * Releases: the editions of works (record in schema/Catalog/Release.ts).
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { NotModified, RequiredScope } from "../Annotations.js"
import { Id, ReleaseId } from "../Catalog/Common.js"
import { CursorParam, IdList, Limit, tokenList } from "../Catalog/Query.js"
import { ListRelease, Release } from "../Catalog/Release.js"
import {
  EntityMerged,
  InvalidCursor,
  LimitTooLarge,
  NotFound,
  problem,
  TooManyIds,
  UnknownInclude
} from "../Problem.js"
import { Authorization } from "./Security.js"

export const ReleaseIncludes = ["refs", "links"] as const
export type ReleaseInclude = (typeof ReleaseIncludes)[number]

const releaseInclude = tokenList(
  ReleaseIncludes,
  "UNKNOWN_INCLUDE",
  "Optional fields: `refs` (upstream anchors), `links` (store and official pages)."
)

export const ListReleasesParams = Schema.Struct({
  limit: Schema.optional(Limit),
  cursor: Schema.optional(CursorParam),
  ids: Schema.optional(IdList),
  work_id: Schema.optional(Id.annotate({ description: "Only the releases of this work." })),
  include: Schema.optional(releaseInclude)
})
export type ListReleasesParams = typeof ListReleasesParams.Type

/** Every failing parameter is reported, not only the first (parse options of the path and the query). */
const strict = { errors: "all" } as const

export class ReleasesApi extends HttpApiGroup.make("releases")
  .add(
    HttpApiEndpoint.get("listReleases", "/v2/catalog/releases", {
      query: ListReleasesParams,
      success: ListRelease,
      error: [
        problem(UnknownInclude),
        problem(LimitTooLarge),
        problem(TooManyIds),
        problem(InvalidCursor)
      ]
    })
      .annotate(OpenApi.Summary, "List releases")
      .annotate(
        OpenApi.Description,
        "Live releases in id order, keyset-paginated (`cursor` = the previous `next_cursor`); `work_id=` narrows " +
          "to one work's releases. Batch lane: `ids=` (up to 100), in request order, invisible, merged or " +
          "unknown ids in `missing[]`; it cannot be combined with `cursor` or `work_id`. An `sfw` credential " +
          "sees neither nsfw releases nor any release of an nsfw work. Include tokens: `refs`, `links`."
      )
  )
  .add(
    HttpApiEndpoint.get("getRelease", "/v2/catalog/releases/:id", {
      params: Schema.Struct({ id: ReleaseId }),
      query: Schema.Struct({ include: Schema.optional(releaseInclude) }),
      success: [
        Release,
        NotModified.pipe(HttpApiSchema.status(304))
      ],
      error: [
        problem(UnknownInclude),
        problem(NotFound),
        problem(EntityMerged)
      ]
    })
      .annotate(OpenApi.Summary, "Read a release")
      .annotate(
        OpenApi.Description,
        "One release with its companies and engine, plus the includes asked for (`refs`, `links`). Invisible " +
          "under the content limit is 404 `NOT_FOUND`; a merged-away id is 404 `ENTITY_MERGED` naming " +
          "`current_id`. Sends a strong `ETag`; `If-None-Match` with it gives 304."
      )
  )
  .middleware(Authorization)
  .annotate(HttpApi.ParamsParseOptions, strict)
  .annotate(HttpApi.QueryParseOptions, strict)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "Releases")
  .annotate(OpenApi.Description, "Editions of works: dated products on given platforms and in given languages.")
{}
