/**
 * SQL of the catalog statistics: exact counts of live rows. Works and characters are counted under
 * the content gate (docs/api-contract.md, "Credentials, scopes and the content limit");
 * `characters.nsfw` marks characters that appear only in nsfw works.
 */
import { Context, Effect, Layer, Schema, Struct } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { CatalogStats } from "../../../schema/Catalog/Stats.js"

const CountsRow = Schema.Struct(Struct.omit(CatalogStats.fields, ["object"]))

export class StatsRepo extends Context.Service<StatsRepo>()("catalog/StatsRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findCounts = SqlSchema.findOne({
      Request: Schema.Boolean,
      Result: CountsRow,
      execute: (nsfw) =>
        sql`
        SELECT
          (SELECT count(*) FROM works WHERE live ${nsfw ? sql`` : sql`AND NOT nsfw`})::int AS works,
          (SELECT count(*) FROM companies WHERE live)::int AS companies,
          (SELECT count(*) FROM characters WHERE live ${nsfw ? sql`` : sql`AND NOT nsfw`})::int AS characters,
          (SELECT count(*) FROM credit_names WHERE live)::int AS credit_names,
          (SELECT count(*) FROM persons WHERE live)::int AS persons
      `
    })
    const counts = (nsfw: boolean) =>
      findCounts(nsfw).pipe(
        Effect.orDie,
        Effect.map((row): CatalogStats => ({ object: "catalog_stats", ...row })),
        Effect.withSpan("StatsRepo.counts")
      )

    return { counts } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
