/**
 * Game engines (record in schema/Catalog/Engine.ts).
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { NotModified, RequiredScope } from "../Annotations.js"
import { EngineId } from "../Catalog/Common.js"
import { Engine, ListEngine } from "../Catalog/Engine.js"
import { BooleanParam, CursorParam, IdList, Limit } from "../Catalog/Query.js"
import { EntityMerged, InvalidCursor, LimitTooLarge, NotFound, problem, TooManyIds } from "../Problem.js"
import { Authorization } from "./Security.js"

export const ListEnginesParams = Schema.Struct({
  limit: Schema.optional(Limit),
  cursor: Schema.optional(CursorParam),
  ids: Schema.optional(IdList),
  include_total: Schema.optional(
    BooleanParam.pipe(Schema.annotateEncoded({ description: "`true`: add `total`, the number of live engines." }))
  )
})
export type ListEnginesParams = typeof ListEnginesParams.Type

/** Every failing parameter is reported, not only the first (parse options of the path and the query). */
const strict = { errors: "all" } as const

export class EnginesApi extends HttpApiGroup.make("engines")
  .add(
    HttpApiEndpoint.get("listEngines", "/v2/catalog/engines", {
      query: ListEnginesParams,
      success: ListEngine,
      error: [
        problem(LimitTooLarge),
        problem(TooManyIds),
        problem(InvalidCursor)
      ]
    })
      .annotate(OpenApi.Summary, "List engines")
      .annotate(
        OpenApi.Description,
        "Every live game engine in id order, keyset-paginated (`cursor` = the previous `next_cursor`). Batch " +
          "lane: `ids=` (up to 100), in request order, unknown or merged ids in `missing[]`. `work_count` counts " +
          "the works visible under the credential's content limit. No include tokens: the record is complete."
      )
  )
  .add(
    HttpApiEndpoint.get("getEngine", "/v2/catalog/engines/:id", {
      params: Schema.Struct({ id: EngineId }),
      success: [
        Engine,
        NotModified.pipe(HttpApiSchema.status(304))
      ],
      error: [
        problem(NotFound),
        problem(EntityMerged)
      ]
    })
      .annotate(OpenApi.Summary, "Read an engine")
      .annotate(
        OpenApi.Description,
        "One engine with its description, aliases and gated `work_count`. A merged-away id is 404 `ENTITY_MERGED` " +
          "naming `current_id`. Sends a strong `ETag`; `If-None-Match` with it gives 304."
      )
  )
  .middleware(Authorization)
  .annotate(HttpApi.ParamsParseOptions, strict)
  .annotate(HttpApi.QueryParseOptions, strict)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "Engines")
  .annotate(OpenApi.Description, "The game engines works are built with.")
{}
