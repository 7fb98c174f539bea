/**
 * SQL of the tag reads; `work_count` from the column of the caller's content gate
 * (docs/api-contract.md, "Credentials, scopes and the content limit").
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Tag, TagCategory } from "../../../schema/Catalog/Tag.js"

export class TagsRepo extends Context.Service<TagsRepo>()("catalog/TagsRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = (nsfw: boolean) =>
      sql`'tag' AS object, t.id::text AS id, t.display_name, t.localized, t.category, t.parent_id::text AS parent_id,
        t.default_spoiler, t.description, t.aliases, ${nsfw ? sql`t.work_count` : sql`t.work_count_sfw`} AS work_count`
    const categoryFilter = (category: TagCategory | undefined) =>
      category === undefined ? sql`` : sql`AND t.category = ${category}`

    const page = (options: {
      readonly afterId: string | null
      readonly take: number
      readonly category: TagCategory | undefined
      readonly nsfw: boolean
    }) =>
      sql<Tag>`
        SELECT ${columns(options.nsfw)} FROM tags t
        WHERE t.live ${categoryFilter(options.category)}
          ${options.afterId === null ? sql`` : sql`AND t.id > ${options.afterId}`}
        ORDER BY t.id LIMIT ${options.take}
      `.pipe(Effect.orDie, Effect.withSpan("TagsRepo.page"))

    const byIds = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      sql<Tag>`SELECT ${columns(nsfw)} FROM tags t WHERE t.live AND t.id = ANY(${ids}::bigint[])`.pipe(
        Effect.orDie,
        Effect.withSpan("TagsRepo.byIds")
      )

    const count = (category: TagCategory | undefined) =>
      sql<{ readonly n: number }>`SELECT count(*)::int AS n FROM tags t WHERE t.live ${categoryFilter(category)}`
        .pipe(Effect.orDie, Effect.map((rows) => rows[0]?.n ?? 0), Effect.withSpan("TagsRepo.count"))

    return { page, byIds, count } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
