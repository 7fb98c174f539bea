/**
 * SQL of the engine reads; `work_count` from the column of the caller's content gate
 * (docs/api-contract.md, "Credentials, scopes and the content limit").
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { Engine } from "../../../schema/Catalog/Engine.js"
import { CountRow, IdsRequest, PageRequest } from "../shared/SqlRequests.js"

export class EnginesRepo extends Context.Service<EnginesRepo>()("catalog/EnginesRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = (nsfw: boolean) =>
      sql`'engine' AS object, e.id::text AS id, e.display_name,
        ${nsfw ? sql`e.work_count` : sql`e.work_count_sfw`} AS work_count, e.description, e.aliases`

    const findPage = SqlSchema.findAll({
      Request: PageRequest,
      Result: Engine,
      execute: ({ afterId, nsfw, take }) =>
        sql`
          SELECT ${columns(nsfw)} FROM engines e
          WHERE e.live ${afterId === null ? sql`` : sql`AND e.id > ${afterId}`}
          ORDER BY e.id LIMIT ${take}
        `
    })
    const page = (afterId: string | null, take: number, nsfw: boolean) =>
      findPage({ afterId, take, nsfw }).pipe(Effect.orDie, Effect.withSpan("EnginesRepo.page"))

    const findByIds = SqlSchema.findAll({
      Request: IdsRequest,
      Result: Engine,
      execute: ({ ids, nsfw }) =>
        sql`SELECT ${columns(nsfw)} FROM engines e WHERE e.live AND e.id = ANY(${ids}::bigint[])`
    })
    const byIds = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      findByIds({ ids, nsfw }).pipe(Effect.orDie, Effect.withSpan("EnginesRepo.byIds"))

    const count = SqlSchema.findOne({
      Request: Schema.Void,
      Result: CountRow,
      execute: () => sql`SELECT count(*)::int AS n FROM engines WHERE live`
    })(undefined).pipe(Effect.orDie, Effect.map((row) => row.n), Effect.withSpan("EnginesRepo.count"))

    return { page, byIds, count } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
