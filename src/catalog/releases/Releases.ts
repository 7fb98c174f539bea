/**
 * Release reads: list (optionally one work's) and batch lanes, detail; content gate per
 * ReleasesRepo. Companies are part of every release; refs and links are includes.
 */
import { Context, Effect, Layer } from "effect"
import type { ListReleasesParams, ReleaseInclude } from "../../../schema/Api/ReleasesApi.js"
import type { ContentLimit } from "../../../schema/Api/Security.js"
import { DEFAULT_LIMIT } from "../../../schema/Catalog/Query.js"
import type { Release } from "../../../schema/Catalog/Release.js"
import { Cursors } from "../pagination/Cursor.js"
import { EntityParts } from "../shared/EntityParts.js"
import { Gone } from "../shared/Gone.js"
import { bigintId, idListLanes } from "../shared/Lanes.js"
import type { ReleaseBase } from "./ReleasesRepo.js"
import { ReleasesRepo } from "./ReleasesRepo.js"

/** A work id no row can have: the filter then matches nothing. */
const NO_ROW = "0"

export class Releases extends Context.Service<Releases>()("catalog/Releases", {
  make: Effect.gen(function*() {
    const repo = yield* ReleasesRepo
    const parts = yield* EntityParts
    const gone = yield* Gone
    const cursors = yield* Cursors

    /** Companies for the page plus the includes asked for: one query each. */
    const complete = (
      rows: ReadonlyArray<ReleaseBase>,
      include: ReadonlySet<ReleaseInclude>,
      nsfw: boolean
    ): Effect.Effect<ReadonlyArray<Release>> =>
      Effect.gen(function*() {
        if (rows.length === 0) return []
        const ids = rows.map((row) => row.id)
        const [companies, refs, links] = yield* Effect.all([
          repo.companies(ids, nsfw),
          include.has("refs") ? parts.refs("release", ids) : Effect.succeed(undefined),
          include.has("links") ? parts.links("release", ids) : Effect.succeed(undefined)
        ], { concurrency: "unbounded" })
        return rows.map((row): Release => ({
          ...row,
          companies: companies.get(row.id) ?? [],
          ...(refs ? { refs: refs.get(row.id) ?? [] } : {}),
          ...(links ? { links: links.get(row.id) ?? [] } : {})
        }))
      })

    const list = Effect.fn("Releases.list")(function*(params: ListReleasesParams, limit: ContentLimit) {
      const nsfw = limit === "nsfw"
      const workId = params.work_id === undefined ? undefined : (bigintId(params.work_id) ?? NO_ROW)
      const result = yield* idListLanes({
        collection: "releases",
        limit: params.limit ?? DEFAULT_LIMIT,
        cursor: params.cursor,
        ids: params.ids,
        filters: { work_id: workId }
      }, {
        page: (afterId, take) => repo.page({ afterId, take, workId, nsfw }),
        batch: (ids) => repo.byIds(ids, nsfw)
      }).pipe(Effect.provideService(Cursors, cursors))
      const items = yield* complete(result.items, new Set(params.include ?? []), nsfw)
      return {
        object: "list" as const,
        items,
        ...(result.next_cursor !== undefined ? { next_cursor: result.next_cursor } : {}),
        ...(result.missing !== undefined ? { missing: result.missing } : {})
      }
    })

    const get = Effect.fn("Releases.get")(
      function*(id: string, include: ReadonlyArray<ReleaseInclude>, limit: ContentLimit) {
        const nsfw = limit === "nsfw"
        const key = bigintId(id)
        const rows = key === undefined ? [] : yield* repo.byIds([key], nsfw)
        if (rows.length === 0) return yield* gone.missing("release", id)
        const [release] = yield* complete(rows, new Set(include), nsfw)
        return release!
      }
    )

    return { list, get } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(
    Layer.provide([ReleasesRepo.layer, EntityParts.layer, Gone.layer, Cursors.layer])
  )
}
