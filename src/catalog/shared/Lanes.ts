/**
 * The two lanes of an id-ordered collection (docs/api-contract.md, "Records and lists" and
 * "Cursors and pages") for the registries served here (companies, engines, tags, releases,
 * characters, credit names, persons): the cursor lane pages by id through the one pagination engine
 * (`Cursors`), the `ids=` batch lane answers in request order with `missing[]`.
 */
import { Effect } from "effect"
import { InvalidParameter } from "../../../schema/Problem.js"
import type { InvalidCursor } from "../../../schema/Problem.js"
import { Cursors, filterDigest, pageOf } from "../pagination/Cursor.js"

const MAX_BIGINT = 9223372036854775807n

/**
 * The canonical form of a wire id as a PostgreSQL `bigint`, or undefined when no row can have it
 * (a 20-digit id above 2^63-1 would otherwise make the query fail instead of finding nothing).
 */
export const bigintId = (id: string): string | undefined => {
  const value = BigInt(id)
  return value <= MAX_BIGINT ? value.toString() : undefined
}

/** 400 INVALID_PARAMETER: `parameter` cannot be given together with `other`. */
export const inconsistent = (parameters: ReadonlyArray<string>, other: string) =>
  new InvalidParameter({
    detail: `${parameters.map((p) => `\`${p}\``).join(", ")} cannot be combined with \`${other}\`.`,
    errors: parameters.map((parameter) => ({
      reason: "INCONSISTENT_WITH" as const,
      detail: `\`${parameter}\` cannot be combined with \`${other}\`.`,
      parameter
    }))
  })

export interface IdListPage<Row> {
  readonly items: ReadonlyArray<Row>
  readonly next_cursor?: string
  readonly missing?: ReadonlyArray<string>
  /** Which lane answered: includes that only the batch lane serves depend on it. */
  readonly lane: "cursor" | "batch"
}

export interface IdListRequest {
  /**
   * The collection (`companies`): binds the cursor to it, so a cursor of one collection is
   * INVALID_CURSOR on every other, even one with the same sort and the same (empty) filters.
   */
  readonly collection: string
  readonly limit: number
  readonly cursor: string | undefined
  readonly ids: ReadonlyArray<string> | undefined
  /** The cursor lane's filters by parameter name (undefined = not given); the cursor is bound to them. */
  readonly filters: Readonly<Record<string, unknown>>
}

/**
 * Runs whichever lane the request asks for. `page(afterId, take)` returns up to `take` visible rows
 * with id > afterId in id order; `batch(ids)` the visible rows among `ids` (canonical bigint strings).
 */
export const idListLanes = <Row extends { readonly id: string }, R1, R2>(
  request: IdListRequest,
  queries: {
    readonly page: (afterId: string | null, take: number) => Effect.Effect<ReadonlyArray<Row>, never, R1>
    readonly batch: (ids: ReadonlyArray<string>) => Effect.Effect<ReadonlyArray<Row>, never, R2>
  }
): Effect.Effect<IdListPage<Row>, InvalidParameter | InvalidCursor, Cursors | R1 | R2> =>
  Effect.gen(function*() {
    if (request.ids !== undefined) {
      const conflicting = [
        ...(request.cursor !== undefined ? ["cursor"] : []),
        ...Object.keys(request.filters).filter((k) => request.filters[k] !== undefined)
      ]
      if (conflicting.length > 0) return yield* inconsistent(conflicting, "ids")
      const wanted = [...new Set(request.ids)]
      const canonical = new Map(wanted.map((id) => [id, bigintId(id)]))
      const lookup = [...new Set([...canonical.values()].filter((id) => id !== undefined))]
      const rows = lookup.length === 0 ? [] : yield* queries.batch(lookup)
      const byId = new Map(rows.map((row) => [row.id, row]))
      const items: Array<Row> = []
      const missing: Array<string> = []
      const served = new Set<string>()
      for (const id of wanted) {
        const key = canonical.get(id)
        const row = key === undefined ? undefined : byId.get(key)
        if (row === undefined) missing.push(id)
        else if (!served.has(row.id)) {
          served.add(row.id)
          items.push(row)
        }
      }
      return { items, missing, lane: "batch" as const }
    }
    const cursors = yield* Cursors
    const filters = filterDigest({ ...request.filters, "": request.collection })
    const after = request.cursor === undefined
      ? null
      : (yield* cursors.decode(request.cursor, { sort: "id", filters })).id
    const rows = yield* queries.page(after, request.limit + 1)
    const page = pageOf(
      rows,
      request.limit,
      (row) => ({ sort: "id", key: [], id: row.id }),
      (position) => cursors.encode(position, filters)
    )
    return { ...page, lane: "cursor" as const }
  })
