/**
 * Engine reads: list and batch lanes, detail; `work_count` under the content gate.
 */
import { Context, Effect, Layer } from "effect"
import type { ListEnginesParams } from "../../../schema/Api/EnginesApi.js"
import type { ContentLimit } from "../../../schema/Api/Security.js"
import { DEFAULT_LIMIT } from "../../../schema/Catalog/Query.js"
import { Cursors } from "../pagination/Cursor.js"
import { Gone } from "../shared/Gone.js"
import { bigintId, idListLanes } from "../shared/Lanes.js"
import { EnginesRepo } from "./EnginesRepo.js"

export class Engines extends Context.Service<Engines>()("catalog/Engines", {
  make: Effect.gen(function*() {
    const repo = yield* EnginesRepo
    const gone = yield* Gone
    const cursors = yield* Cursors

    const list = Effect.fn("Engines.list")(function*(params: ListEnginesParams, limit: ContentLimit) {
      const nsfw = limit === "nsfw"
      const result = yield* idListLanes({
        collection: "engines",
        limit: params.limit ?? DEFAULT_LIMIT,
        cursor: params.cursor,
        ids: params.ids,
        filters: {}
      }, {
        page: (afterId, take) => repo.page(afterId, take, nsfw),
        batch: (ids) => repo.byIds(ids, nsfw)
      }).pipe(Effect.provideService(Cursors, cursors))
      const total = params.include_total === true && result.lane === "cursor" ? yield* repo.count : undefined
      return {
        object: "list" as const,
        items: result.items,
        ...(result.next_cursor !== undefined ? { next_cursor: result.next_cursor } : {}),
        ...(result.missing !== undefined ? { missing: result.missing } : {}),
        ...(total !== undefined ? { total } : {})
      }
    })

    const get = Effect.fn("Engines.get")(function*(id: string, limit: ContentLimit) {
      const key = bigintId(id)
      const rows = key === undefined ? [] : yield* repo.byIds([key], limit === "nsfw")
      return rows[0] ?? (yield* gone.missing("engine", id))
    })

    return { list, get } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(
    Layer.provide([EnginesRepo.layer, Gone.layer, Cursors.layer])
  )
}
