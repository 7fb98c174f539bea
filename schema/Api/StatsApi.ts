/**
 * Catalog statistics (CatalogStats, schema/Catalog/Stats.ts).
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { NotModified, RequiredScope } from "../Annotations.js"
import { CatalogStats } from "../Catalog/Stats.js"
import { Authorization } from "./Security.js"

export class StatsApi extends HttpApiGroup.make("stats")
  .add(
    HttpApiEndpoint.get("getStats", "/v2/catalog/stats", {
      success: [
        CatalogStats,
        NotModified.pipe(HttpApiSchema.status(304))
      ]
    })
      .annotate(OpenApi.Summary, "Catalog statistics")
      .annotate(
        OpenApi.Description,
        "Exact counts of live rows: works and characters as visible under the credential's content limit, " +
          "companies, credit names and persons. Counted at most once per content limit every 10 seconds per " +
          "server process, so a count may lag a write by that much. Sends a strong `ETag`; `If-None-Match` " +
          "with it gives 304."
      )
  )
  .middleware(Authorization)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "Statistics")
  .annotate(OpenApi.Description, "Counts over the catalog.")
{}
