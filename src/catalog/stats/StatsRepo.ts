/**
 * SQL of the catalog statistics: exact counts of live rows. Works and characters are counted under
 * the content gate (docs/api-contract.md, "Credentials, scopes and the content limit");
 * `characters.nsfw` marks characters that appear only in nsfw works.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { CatalogStats } from "../../../schema/Catalog/Stats.js"

export class StatsRepo extends Context.Service<StatsRepo>()("catalog/StatsRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const counts = (nsfw: boolean) =>
      sql<Omit<CatalogStats, "object">>`
        SELECT
          (SELECT count(*) FROM works WHERE live ${nsfw ? sql`` : sql`AND NOT nsfw`})::int AS works,
          (SELECT count(*) FROM companies WHERE live)::int AS companies,
          (SELECT count(*) FROM characters WHERE live ${nsfw ? sql`` : sql`AND NOT nsfw`})::int AS characters,
          (SELECT count(*) FROM credit_names WHERE live)::int AS credit_names,
          (SELECT count(*) FROM persons WHERE live)::int AS persons
      `.pipe(
        Effect.orDie,
        Effect.map((rows): CatalogStats => ({ object: "catalog_stats", ...rows[0]! })),
        Effect.withSpan("StatsRepo.counts")
      )

    return { counts } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
