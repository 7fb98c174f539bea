/**
 * SQL of the engine reads; `work_count` from the column of the caller's content gate
 * (docs/api-contract.md, "Credentials, scopes and the content limit").
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Engine } from "../../../schema/Catalog/Engine.js"

export class EnginesRepo extends Context.Service<EnginesRepo>()("catalog/EnginesRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = (nsfw: boolean) =>
      sql`'engine' AS object, e.id::text AS id, e.display_name,
        ${nsfw ? sql`e.work_count` : sql`e.work_count_sfw`} AS work_count, e.description, e.aliases`

    const page = (afterId: string | null, take: number, nsfw: boolean) =>
      sql<Engine>`
        SELECT ${columns(nsfw)} FROM engines e
        WHERE e.live ${afterId === null ? sql`` : sql`AND e.id > ${afterId}`}
        ORDER BY e.id LIMIT ${take}
      `.pipe(Effect.orDie, Effect.withSpan("EnginesRepo.page"))

    const byIds = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      sql<Engine>`SELECT ${columns(nsfw)} FROM engines e WHERE e.live AND e.id = ANY(${ids}::bigint[])`.pipe(
        Effect.orDie,
        Effect.withSpan("EnginesRepo.byIds")
      )

    const count = sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM engines WHERE live`.pipe(
      Effect.orDie,
      Effect.map((rows) => rows[0]?.n ?? 0),
      Effect.withSpan("EnginesRepo.count")
    )

    return { page, byIds, count } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
