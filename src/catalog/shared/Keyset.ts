/**
 * Keyset pages of the nested lists (a character's appearances, a name's credits) on the one
 * pagination engine (`Cursors`, `pageOf`). The id-ordered collections use `idListLanes`
 * (shared/Lanes.ts).
 */
import { Effect } from "effect"
import { DEFAULT_LIMIT } from "../../../schema/Catalog/Query.js"
import { type Cursors, filterDigest, pageOf, type Position } from "../pagination/Cursor.js"

/**
 * Decodes `cursor` (bound to `collection`, `sort` and `filters`, so a cursor of another list or
 * another parent is INVALID_CURSOR), fetches `limit + 1` rows after its position, and cuts the page.
 */
export const keysetPage = <Row>(cursors: Cursors["Service"], options: {
  /** The list (`works/covers`): a cursor of one list is INVALID_CURSOR on every other. */
  readonly collection: string
  readonly sort: string
  readonly filters: Record<string, unknown>
  readonly cursor: string | undefined
  readonly limit: number | undefined
  readonly fetch: (after: Position | undefined, take: number) => Effect.Effect<ReadonlyArray<Row>>
  readonly positionOf: (row: Row) => Position
}) =>
  Effect.gen(function*() {
    const limit = options.limit ?? DEFAULT_LIMIT
    const filters = filterDigest({ ...options.filters, "": options.collection })
    const after = options.cursor === undefined
      ? undefined
      : yield* cursors.decode(options.cursor, { sort: options.sort, filters })
    const rows = yield* options.fetch(after, limit + 1)
    return pageOf(rows, limit, options.positionOf, (position) => cursors.encode(position, filters))
  })
