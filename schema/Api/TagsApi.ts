/**
 * Tags (record in schema/Catalog/Tag.ts).
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { NotModified, RequiredScope } from "../Annotations.js"
import { TagId } from "../Catalog/Common.js"
import { BooleanParam, CursorParam, IdList, Limit } from "../Catalog/Query.js"
import { ListTag, Tag, TagCategory } from "../Catalog/Tag.js"
import { EntityMerged, InvalidCursor, LimitTooLarge, NotFound, problem, TooManyIds } from "../Problem.js"
import { Authorization } from "./Security.js"

export const ListTagsParams = Schema.Struct({
  limit: Schema.optional(Limit),
  cursor: Schema.optional(CursorParam),
  ids: Schema.optional(IdList),
  category: Schema.optional(TagCategory.annotate({ description: "Only tags of this category." })),
  include_total: Schema.optional(
    BooleanParam.pipe(
      Schema.annotateEncoded({ description: "`true`: add `total`, the number of tags matching the filters." })
    )
  )
})
export type ListTagsParams = typeof ListTagsParams.Type

/** Every failing parameter is reported, not only the first (parse options of the path and the query). */
const strict = { errors: "all" } as const

export class TagsApi extends HttpApiGroup.make("tags")
  .add(
    HttpApiEndpoint.get("listTags", "/v2/catalog/tags", {
      query: ListTagsParams,
      success: ListTag,
      error: [
        problem(LimitTooLarge),
        problem(TooManyIds),
        problem(InvalidCursor)
      ]
    })
      .annotate(OpenApi.Summary, "List tags")
      .annotate(
        OpenApi.Description,
        "Every live tag in id order, keyset-paginated (`cursor` = the previous `next_cursor`), optionally of one " +
          "`category`. Batch lane: `ids=` (up to 100), in request order, unknown or merged ids in `missing[]`; it " +
          "cannot be combined with `cursor` or filters. `work_count` counts the works visible under the " +
          "credential's content limit. No include tokens: the record is complete."
      )
  )
  .add(
    HttpApiEndpoint.get("getTag", "/v2/catalog/tags/:id", {
      params: Schema.Struct({ id: TagId }),
      success: [
        Tag,
        NotModified.pipe(HttpApiSchema.status(304))
      ],
      error: [
        problem(NotFound),
        problem(EntityMerged)
      ]
    })
      .annotate(OpenApi.Summary, "Read a tag")
      .annotate(
        OpenApi.Description,
        "One tag with its parent, default spoiler level, description, aliases and gated `work_count`. A " +
          "merged-away id is 404 `ENTITY_MERGED` naming `current_id`. Sends a strong `ETag`; `If-None-Match` " +
          "with it gives 304."
      )
  )
  .middleware(Authorization)
  .annotate(HttpApi.ParamsParseOptions, strict)
  .annotate(HttpApi.QueryParseOptions, strict)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "Tags")
  .annotate(OpenApi.Description, "Descriptive tags that works carry.")
{}
