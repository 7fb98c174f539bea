/**
 * The change feed and the merge map (docs/change-feed.md): pages in commit order with cursors from
 * the one pagination engine (Cursor.ts).
 *
 * Unlike other lists, a non-empty page always hands out a `next_cursor`: the feed has no end, only a
 * current end, and a mirror must be able to resume from its last item. The page past the current end
 * is empty and carries no cursor (so "page until `next_cursor` is absent" still terminates); the
 * client keeps the cursor that fetched it and polls with it.
 */
import { Context, Effect, Layer } from "effect"
import type { ContentLimit } from "../../../schema/Api/Security.js"
import { type Change, ListChange, ListRedirect, type Redirect } from "../../../schema/Catalog/Change.js"
import { DEFAULT_LIMIT } from "../../../schema/Catalog/Query.js"
import { InvalidCursor } from "../../../schema/Problem.js"
import { Cursors, filterDigest, type Position } from "../pagination/Cursor.js"
import { listJson } from "../shared/JsonSql.js"
import { ReadCache } from "../shared/ReadCache.js"
import { type FeedPosition, MirrorRepo } from "./MirrorRepo.js"

export interface FeedRequest {
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
  readonly contentLimit: ContentLimit
}

/**
 * The pages as JSON text: the envelope written from the list schema, each item with `JSON.stringify`
 * (see Http.ts for why not through the item encoder).
 */
const changesJson = listJson(ListChange)
const redirectsJson = listJson(ListRedirect)

/** Cursors are bound to their feed (a changes cursor is no redirects cursor); both feeds take no filters. */
const noFilters = filterDigest({})

const badPosition = new InvalidCursor({
  detail: "The cursor does not hold a feed position.",
  errors: [{
    reason: "INVALID_FORMAT",
    detail: "`cursor` is not a cursor issued for this request.",
    parameter: "cursor"
  }]
})

export class Mirror extends Context.Service<Mirror>()("catalog/Mirror", {
  make: Effect.gen(function*() {
    const repo = yield* MirrorRepo
    const cursors = yield* Cursors
    const cache = yield* ReadCache

    const positionOf = (feed: string) => (row: FeedPosition & { readonly id?: string; readonly from_id?: string }) =>
      ({ sort: feed, key: [row.position], id: row.id ?? row.from_id ?? "" }) satisfies Position

    const decode = (feed: string, cursor: string | undefined) =>
      cursor === undefined
        ? Effect.succeed(undefined)
        : Effect.flatMap(cursors.decode(cursor, { sort: feed, filters: noFilters }), (position) => {
          const [at, ...rest] = position.key
          return typeof at === "string" && /^[0-9]{1,18}$/.test(at) && rest.length === 0
            ? Effect.succeed<FeedPosition>({ position: at })
            : Effect.fail(badPosition)
        })

    const page = <Row extends FeedPosition & { readonly id?: string; readonly from_id?: string }, Item>(
      feed: string,
      request: FeedRequest,
      fetch: (
        query: { readonly after: FeedPosition | undefined; readonly rows: number; readonly sfw: boolean }
      ) => Effect.Effect<ReadonlyArray<Row>>,
      toItem: (row: Row) => Item,
      envelope: (items: ReadonlyArray<string>, members: { readonly next_cursor?: string | undefined }) => string
    ) =>
      Effect.gen(function*() {
        const limit = request.limit ?? DEFAULT_LIMIT
        const after = yield* decode(feed, request.cursor)
        const rows = yield* fetch({ after, rows: limit, sfw: request.contentLimit === "sfw" })
        const last = rows[rows.length - 1]
        // The records these changes name must not be answered from before them (ReadCache.ts).
        if (last !== undefined) cache.observeFeed(last.position)
        return envelope(rows.map((row) => JSON.stringify(toItem(row))), {
          next_cursor: last === undefined ? undefined : cursors.encode(positionOf(feed)(last), noFilters)
        })
      })

    const changes = Effect.fn("Mirror.changes")((request: FeedRequest) =>
      page("changes", request, repo.changes, (row): Change => ({
        object: "change",
        target_object: row.target_object,
        id: row.id,
        updated_at: row.updated_at,
        // `gone` is present only when true, never sent as false (docs/change-feed.md).
        ...(row.gone ? { gone: true as const } : {})
      }), changesJson)
    )

    const redirects = Effect.fn("Mirror.redirects")((request: FeedRequest) =>
      page("redirects", request, repo.redirects, (row): Redirect => ({
        object: "redirect",
        target_object: row.target_object,
        from_id: row.from_id,
        current_id: row.current_id,
        merged_at: row.merged_at
      }), redirectsJson)
    )

    return { changes, redirects } as const
  })
}) {
  // ReadCache comes from the server (CatalogServer.ts), shared with the works reads.
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([MirrorRepo.layer, Cursors.layer]))
}
