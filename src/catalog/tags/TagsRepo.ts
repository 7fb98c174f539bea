/**
 * SQL of the tag reads; `work_count` from the column of the caller's content gate
 * (docs/api-contract.md, "Credentials, scopes and the content limit").
 */
import { Context, Effect, Layer, Schema, Struct } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { Tag, TagCategory } from "../../../schema/Catalog/Tag.js"
import { CountRow, IdsRequest, PageRequest } from "../shared/SqlRequests.js"

const CategoryRequest = Schema.UndefinedOr(TagCategory)

export class TagsRepo extends Context.Service<TagsRepo>()("catalog/TagsRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = (nsfw: boolean) =>
      sql`'tag' AS object, t.id::text AS id, t.display_name, t.localized, t.category, t.parent_id::text AS parent_id,
        t.default_spoiler, t.description, t.aliases, ${nsfw ? sql`t.work_count` : sql`t.work_count_sfw`} AS work_count`
    const categoryFilter = (category: TagCategory | undefined) =>
      category === undefined ? sql`` : sql`AND t.category = ${category}`

    const findPage = SqlSchema.findAll({
      Request: PageRequest.mapFields(Struct.assign({ category: CategoryRequest })),
      Result: Tag,
      execute: (options) =>
        sql`
          SELECT ${columns(options.nsfw)} FROM tags t
          WHERE t.live ${categoryFilter(options.category)}
            ${options.afterId === null ? sql`` : sql`AND t.id > ${options.afterId}`}
          ORDER BY t.id LIMIT ${options.take}
        `
    })
    const page = (options: typeof PageRequest.Type & { readonly category: TagCategory | undefined }) =>
      findPage(options).pipe(Effect.orDie, Effect.withSpan("TagsRepo.page"))

    const findByIds = SqlSchema.findAll({
      Request: IdsRequest,
      Result: Tag,
      execute: ({ ids, nsfw }) => sql`SELECT ${columns(nsfw)} FROM tags t WHERE t.live AND t.id = ANY(${ids}::bigint[])`
    })
    const byIds = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      findByIds({ ids, nsfw }).pipe(Effect.orDie, Effect.withSpan("TagsRepo.byIds"))

    const findCount = SqlSchema.findOne({
      Request: CategoryRequest,
      Result: CountRow,
      execute: (category) => sql`SELECT count(*)::int AS n FROM tags t WHERE t.live ${categoryFilter(category)}`
    })
    const count = (category: TagCategory | undefined) =>
      findCount(category).pipe(Effect.orDie, Effect.map((row) => row.n), Effect.withSpan("TagsRepo.count"))

    return { page, byIds, count } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
