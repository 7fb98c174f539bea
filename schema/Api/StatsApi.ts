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
          "companies, credit names and persons. Counted once per content limit and server process, then " +
          "cached until the next catalog write: a read that begins after the write's commit notification has " +
          "reached the process sees the write (in practice within milliseconds of the commit); if a " +
          "notification is lost, nothing is kept longer than `CATALOG_CACHE_SECONDS` (default 60). Sends a " +
          "strong `ETag`; `If-None-Match` with it gives 304."
      )
  )
  .middleware(Authorization)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "Statistics")
  .annotate(OpenApi.Description, "Counts over the catalog.")
{}
