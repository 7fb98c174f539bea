/**
 * Releases: the editions of works (record in schema/Catalog/Release.ts).
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { Schema } from "effect"
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
}).annotate({ parseOptions: { errors: "all" } })
export type ListReleasesParams = typeof ListReleasesParams.Type

export class ReleasesApi extends HttpApiGroup.make("releases")
  .add(
    HttpApiEndpoint.get("listReleases", "/v2/catalog/releases")
      .setUrlParams(ListReleasesParams)
      .addSuccess(ListRelease)
      .addError(problem(UnknownInclude))
      .addError(problem(LimitTooLarge))
      .addError(problem(TooManyIds))
      .addError(problem(InvalidCursor))
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
    HttpApiEndpoint.get("getRelease", "/v2/catalog/releases/:id")
      .setPath(Schema.Struct({ id: ReleaseId }).annotate({ parseOptions: { errors: "all" } }))
      .setUrlParams(
        Schema.Struct({ include: Schema.optional(releaseInclude) }).annotate({
          parseOptions: { errors: "all" }
        })
      )
      .addSuccess(Release)
      .addSuccess(NotModified, { status: 304 })
      .addError(problem(UnknownInclude))
      .addError(problem(NotFound))
      .addError(problem(EntityMerged))
      .annotate(OpenApi.Summary, "Read a release")
      .annotate(
        OpenApi.Description,
        "One release with its companies and engine, plus the includes asked for (`refs`, `links`). Invisible " +
          "under the content limit is 404 `NOT_FOUND`; a merged-away id is 404 `ENTITY_MERGED` naming " +
          "`current_id`. Sends a strong `ETag`; `If-None-Match` with it gives 304."
      )
  )
  .middleware(Authorization)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "Releases")
  .annotate(OpenApi.Description, "Editions of works: dated products on given platforms and in given languages.")
{}
