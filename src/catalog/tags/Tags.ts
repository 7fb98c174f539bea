/**
 * Tag reads: list and batch lanes, detail; `work_count` under the content gate.
 */
import { Context, Effect, Layer } from "effect"
import type { ContentLimit } from "../../../schema/Api/Security.js"
import type { ListTagsParams } from "../../../schema/Api/TagsApi.js"
import { DEFAULT_LIMIT } from "../../../schema/Catalog/Query.js"
import { Cursors } from "../pagination/Cursor.js"
import { Gone } from "../shared/Gone.js"
import { bigintId, idListLanes } from "../shared/Lanes.js"
import { TagsRepo } from "./TagsRepo.js"

export class Tags extends Context.Service<Tags>()("catalog/Tags", {
  make: Effect.gen(function*() {
    const repo = yield* TagsRepo
    const gone = yield* Gone
    const cursors = yield* Cursors

    const list = Effect.fn("Tags.list")(function*(params: ListTagsParams, limit: ContentLimit) {
      const nsfw = limit === "nsfw"
      const result = yield* idListLanes({
        collection: "tags",
        limit: params.limit ?? DEFAULT_LIMIT,
        cursor: params.cursor,
        ids: params.ids,
        filters: { category: params.category }
      }, {
        page: (afterId, take) => repo.page({ afterId, take, category: params.category, nsfw }),
        batch: (ids) => repo.byIds(ids, nsfw)
      }).pipe(Effect.provideService(Cursors, cursors))
      const total = params.include_total === true && result.lane === "cursor"
        ? yield* repo.count(params.category)
        : undefined
      return {
        object: "list" as const,
        items: result.items,
        ...(result.next_cursor !== undefined ? { next_cursor: result.next_cursor } : {}),
        ...(result.missing !== undefined ? { missing: result.missing } : {}),
        ...(total !== undefined ? { total } : {})
      }
    })

    const get = Effect.fn("Tags.get")(function*(id: string, limit: ContentLimit) {
      const key = bigintId(id)
      const rows = key === undefined ? [] : yield* repo.byIds([key], limit === "nsfw")
      return rows[0] ?? (yield* gone.missing("tag", id))
    })

    return { list, get } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([TagsRepo.layer, Gone.layer, Cursors.layer]))
}
