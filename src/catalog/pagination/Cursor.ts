/**
 * Cursors (docs/api-contract.md, "Cursors and pages"): opaque, versioned and authenticated. A cursor
 * carries the sort, the sort key and id of the last row, and a hash of the filters it was issued
 * for; it is HMAC-signed with a key derived from `SHIORI_SECRET` (one signed under a secret of
 * `SHIORI_SECRET_PREVIOUS` is still accepted: src/platform/KeyRing.ts). A malformed, forged,
 * truncated or foreign-filter cursor is 400 INVALID_CURSOR. Every sort ends with `id`, so a position
 * is always unique.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import * as Crypto from "node:crypto"
import { InvalidCursor } from "../../../schema/Problem.js"
import { AppSecret } from "../../platform/Config.js"
import { hmacKeys, matchesAny } from "../../platform/KeyRing.js"

const VERSION = 1

/** The sort key values of a row. */
export const SortKey = Schema.Array(Schema.NullOr(Schema.Union([Schema.String, Schema.Number])))

/** A position in a keyset-ordered list: the sort key values of the last row, then its id. */
export const Position = Schema.Struct({ sort: Schema.String, key: SortKey, id: Schema.String })
export type Position = typeof Position.Type

/** What a cursor carries: `[VERSION, sort, key, id, filters]`, as JSON. */
const Payload = Schema.Tuple([Schema.Literal(VERSION), Schema.String, SortKey, Schema.String, Schema.String])
const decodePayload = Schema.decodeUnknownOption(Payload)

const invalid = (detail: string) =>
  new InvalidCursor({
    detail,
    errors: [{
      reason: "INVALID_FORMAT",
      detail: "`cursor` is not a cursor issued for this request.",
      parameter: "cursor"
    }]
  })

/** A stable digest of the filters a list was asked for (order of keys and values does not matter). */
export const filterDigest = (filters: Record<string, unknown>): string => {
  const canonical = JSON.stringify(
    Object.keys(filters)
      .filter((k) => filters[k] !== undefined)
      .sort()
      .map((k) => [k, filters[k]])
  )
  return Crypto.createHash("sha256").update(canonical).digest("base64url").slice(0, 12)
}

export class Cursors extends Context.Service<Cursors>()("catalog/Cursors", {
  make: Effect.gen(function*() {
    const { ring } = yield* AppSecret
    // Signed with the current key; one signed with a previous key of the ring is accepted too.
    const keys = hmacKeys(ring, "shiori/cursor/v1")
    const signWith = (key: Buffer, payload: string) =>
      Crypto.createHmac("sha256", key).update(payload).digest().subarray(0, 16)
    const sign = (payload: string) => signWith(keys[0]!, payload)

    /** `cur_<payload>.<mac>`, both base64url. */
    const encode = (position: Position, filters: string): string => {
      const payload = Buffer.from(JSON.stringify([VERSION, position.sort, position.key, position.id, filters]))
        .toString("base64url")
      return `cur_${payload}.${sign(payload).toString("base64url")}`
    }

    const decode = (cursor: string, expected: { readonly sort: string; readonly filters: string }) =>
      Effect.suspend(() => {
        const match = /^cur_([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]{22})$/.exec(cursor)
        if (match === null) return Effect.fail(invalid("The cursor is malformed."))
        const [, payload, mac] = match
        const given = Buffer.from(mac!, "base64url")
        if (given.length !== 16 || !matchesAny(keys, (key) => Crypto.timingSafeEqual(given, signWith(key, payload!)))) {
          return Effect.fail(invalid("The cursor was not issued by this server or was altered."))
        }
        let parsed: unknown
        try {
          parsed = JSON.parse(Buffer.from(payload!, "base64url").toString("utf8"))
        } catch {
          return Effect.fail(invalid("The cursor is malformed."))
        }
        if (!Array.isArray(parsed) || parsed.length !== 5 || parsed[0] !== VERSION) {
          return Effect.fail(invalid("The cursor is from another version of the API; restart from the first page."))
        }
        // Signed by this server, but the MAC says who wrote it, not that it has this shape.
        const decoded = decodePayload(parsed)
        if (Option.isNone(decoded)) return Effect.fail(invalid("The cursor is malformed."))
        const [, sort, key, id, filters] = decoded.value
        if (sort !== expected.sort || filters !== expected.filters) {
          return Effect.fail(invalid("The cursor was issued for other filters or another sort."))
        }
        return Effect.succeed<Position>({ sort, key, id })
      })

    /**
     * A page of a list ordered by one numeric key (an id, a `seq`): the cursor holds the last row's
     * key and is bound to `filters`; `fetch` gets the key to continue from (none on the first page)
     * and `limit + 1` rows to ask for. Answers the list envelope around `item` of each row.
     */
    const keyedPage = <Row, Item, E>(options: {
      readonly sort: string
      readonly filters: Record<string, unknown>
      readonly params: { readonly limit?: number | undefined; readonly cursor?: string | undefined }
      readonly defaultLimit: number
      readonly key: (row: Row) => string
      readonly item: (row: Row) => Item
      readonly fetch: (after: string | undefined, rows: number) => Effect.Effect<ReadonlyArray<Row>, E>
    }) =>
      Effect.gen(function*() {
        const digest = filterDigest(options.filters)
        const limit = options.params.limit ?? options.defaultLimit
        const after = options.params.cursor === undefined
          ? undefined
          : (yield* decode(options.params.cursor, { sort: options.sort, filters: digest })).id
        if (after !== undefined && !/^[0-9]{1,20}$/.test(after)) {
          return yield* new InvalidCursor({ detail: "The cursor does not hold a position." })
        }
        const page = pageOf(
          yield* options.fetch(after, limit + 1),
          limit,
          (row) => ({ sort: options.sort, key: [], id: options.key(row) }),
          (position) => encode(position, digest)
        )
        return {
          object: "list" as const,
          items: page.items.map(options.item),
          ...(page.next_cursor === undefined ? {} : { next_cursor: page.next_cursor })
        }
      })

    return { encode, decode, keyedPage } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([AppSecret.layer]))
}

/**
 * Cuts a page fetched with `limit + 1` rows: the extra row only proves there is a next page
 * (rule 8: the client never infers the end from the item count).
 */
export const pageOf = <Row>(
  rows: ReadonlyArray<Row>,
  limit: number,
  positionOf: (row: Row) => Position,
  encode: (position: Position) => string
): { readonly items: ReadonlyArray<Row>; readonly next_cursor?: string } => {
  if (rows.length <= limit) return { items: rows }
  const items = rows.slice(0, limit)
  return { items, next_cursor: encode(positionOf(items[items.length - 1]!)) }
}
