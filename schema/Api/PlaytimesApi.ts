/**
 * Playtimes (docs/writing.md, "Playtimes"): a user's cumulative minutes per work, reported in batches.
 * Every route acts for a person and declares its rule (schema/Api/Writes.ts).
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BatchPlaytimesInputBody, ListPlaytime } from "../Catalog/Playtime.js"
import { InvalidCursor, LimitTooLarge, problem } from "../Problem.js"
import { WriteAuthorization } from "./Security.js"
import { declare, lenientQuery, paging, type RouteRule, strictBody } from "./Writes.js"

export const ListPlaytimesParams = Schema.Struct(paging)
export type ListPlaytimesParams = typeof ListPlaytimesParams.Type

/** The rules of the playtime routes, by endpoint name. */
export const playtimeRules = {
  batchPlaytimes: { user: true, tenant: false, idempotent: true, quota: "playtimes" },
  listPlaytimes: { user: true, tenant: false, idempotent: false }
} as const satisfies Record<string, RouteRule>

export class PlaytimesApi extends HttpApiGroup.make("playtimes")
  .add(
    declare(
      "playtimes:write",
      playtimeRules.batchPlaytimes,
      ({ headers, problems }) =>
        HttpApiEndpoint.post("batchPlaytimes", "/v2/playtimes", {
          headers,
          payload: BatchPlaytimesInputBody,
          success: ListPlaytime,
          error: problems
        })
          .annotate(OpenApi.Summary, "Report playtimes")
          .annotate(
            OpenApi.Description,
            "Sets the bearer's cumulative minutes on up to 100 works (each the absolute total, not an increment), " +
              "all or nothing. A work that does not exist, is not served, or that the credential's content limit " +
              "hides is 422 `UNKNOWN_REFERENCE` at `/items/<n>/work_id`; a `work_id` repeated within the batch is " +
              "422 `DUPLICATE_ITEM` at the repeat's `/items/<n>/work_id`. Answers 200 with the bearer's stored " +
              "playtimes on those works, in the batch's order. Each batch counts once against the site's daily " +
              "`playtimes` quota."
          )
    )
  )
  .add(
    declare(
      "playtimes:write",
      playtimeRules.listPlaytimes,
      ({ headers, problems }) =>
        HttpApiEndpoint.get("listPlaytimes", "/v2/playtimes", {
          query: ListPlaytimesParams,
          headers,
          success: ListPlaytime,
          error: [problem(LimitTooLarge), problem(InvalidCursor), ...problems]
        })
          .annotate(OpenApi.Summary, "The bearer's playtimes")
          .annotate(
            OpenApi.Description,
            "Every playtime the bearer reported, most recently updated first (ties by work id, descending), on " +
              "works the credential may see."
          )
    )
  )
  .middleware(WriteAuthorization)
  .annotate(HttpApi.QueryParseOptions, lenientQuery)
  .annotate(HttpApi.PayloadParseOptions, strictBody)
  .annotate(OpenApi.Title, "Playtimes")
  .annotate(
    OpenApi.Description,
    "A user's cumulative minutes per work. Every route acts for a user: an identity access token, or an API key " +
      "created for a user."
  )
{}
