/**
 * The facet values of every work, in memory.
 *
 * Counting the six facets of a `q=` search in PostgreSQL cost about 190 ms for a word matching 14,000
 * titles: most of it probing `work_facets` once per match and unnesting its arrays into six hash
 * aggregates. Here the database only names the matching works (`string_agg` of their ids) and the
 * counting is a pass over typed arrays, under a millisecond for the same search.
 *
 * The copy:
 * - `FacetTable` holds each work's values as 32-bit codes, `value << 3 | kind`: tag and company ids
 *   as themselves, languages, media and platforms as indexes into per-kind dictionaries. Works are
 *   packed in id order (compressed rows: `start[id]` .. `start[id + 1]` of `codes`); a work written
 *   since is kept aside in `changed` until the next compaction. About 45 MB per million works.
 * - It is loaded in the background when the server starts, 10,000 rows per statement; until then,
 *   and if a tag or company id ever outgrows 28 bits, searches count in SQL as before.
 * - Before each count it catches up with one indexed read of the rows written since its last read
 *   (`work_facets.txid`, migrations/0009): a count sees every write committed before it began.
 */
import { Config, Duration, Effect, Schedule, Schema, Semaphore } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { onPrimary } from "../../platform/ReadReplica.js"

/** The facets counted here (`content_rating` is counted from the database's two id lists). */
export type CountedFacet = "tag_id" | "company_id" | "olang" | "medium" | "platform"

const KINDS: ReadonlyArray<CountedFacet> = ["tag_id", "company_id", "olang", "medium", "platform"]
const KIND: Readonly<Record<CountedFacet, number>> = { tag_id: 0, company_id: 1, olang: 2, medium: 3, platform: 4 }
const SHIFT = 3
const MASK = (1 << SHIFT) - 1
/** Values above this do not fit a positive 32-bit code. */
const MAX_VALUE = 2 ** (31 - SHIFT) - 1
/** Work ids above this would make `start` too large: such a catalog counts in SQL. */
const MAX_WORK_ID = 64_000_000

/** A `work_facets` row as the loader reads it: `[work_id, olang, media, platforms, tag_ids, company_ids]`. */
export const FacetRow = Schema.Tuple([
  Schema.Int,
  Schema.NullOr(Schema.String),
  Schema.Array(Schema.String),
  Schema.Array(Schema.String),
  Schema.Array(Schema.Int),
  Schema.Array(Schema.Int)
])
export type FacetRow = typeof FacetRow.Type

class Dictionary {
  readonly index = new Map<string, number>()
  readonly values: Array<string> = []
  code(value: string): number {
    let n = this.index.get(value)
    if (n === undefined) {
      n = this.values.length
      this.values.push(value)
      this.index.set(value, n)
    }
    return n
  }
}

/** Counts per facet: `[value, count]` pairs of the values that occur, in no order. */
export type FacetCounts = Readonly<Record<CountedFacet, ReadonlyArray<readonly [string, number]>>>

/** The in-memory table (no I/O; FacetIndex below loads and refreshes it). */
export class FacetTable {
  private start = new Int32Array(1024)
  private codes = new Int32Array(4096)
  /** Highest work id packed into `start`/`codes`. */
  private last = 0
  private used = 0
  /** Works written since they were packed (or added after the packed range). */
  private readonly changed = new Map<number, Int32Array>()
  private readonly dictionaries = { olang: new Dictionary(), medium: new Dictionary(), platform: new Dictionary() }
  /** Largest value per kind, to size the counters. */
  private readonly largest = new Int32Array(KINDS.length)
  /** False once a value did not fit: the table can no longer answer. */
  usable = true

  private encode(row: FacetRow): Int32Array | undefined {
    const [, olang, media, platforms, tags, companies] = row
    const out = new Int32Array(
      tags.length + companies.length + media.length + platforms.length + (olang !== null ? 1 : 0)
    )
    let i = 0
    const put = (kind: number, value: number) => {
      if (!(value >= 0 && value <= MAX_VALUE)) return false
      if (value > this.largest[kind]!) this.largest[kind] = value
      out[i++] = (value << SHIFT) | kind
      return true
    }
    for (const id of tags) if (!put(KIND.tag_id, Number(id))) return undefined
    for (const id of companies) if (!put(KIND.company_id, Number(id))) return undefined
    if (olang !== null) put(KIND.olang, this.dictionaries.olang.code(olang))
    for (const m of media) put(KIND.medium, this.dictionaries.medium.code(m))
    for (const p of platforms) put(KIND.platform, this.dictionaries.platform.code(p))
    return out
  }

  /** What the table holds, for the start-up log. */
  footprint(): { readonly works: number; readonly values: number; readonly mb: number } {
    return {
      works: this.last + this.changed.size,
      values: this.used,
      mb: Math.round((this.start.byteLength + this.codes.byteLength) / 2 ** 20)
    }
  }

  /** Appends rows in ascending id order above everything packed so far (the initial load). */
  append(rows: ReadonlyArray<FacetRow>): void {
    for (const row of rows) {
      const id = Number(row[0])
      const codes = this.encode(row)
      if (codes === undefined || !(id > this.last) || id > MAX_WORK_ID) {
        if (codes === undefined || id > MAX_WORK_ID) this.usable = false
        else this.changed.set(id, codes)
        continue
      }
      this.pack(id, codes)
    }
  }

  private pack(id: number, codes: Int32Array) {
    if (id + 2 > this.start.length) {
      const grown = new Int32Array(Math.max(id + 2, this.start.length * 2))
      grown.set(this.start.subarray(0, this.last + 2))
      this.start = grown
    }
    if (this.used + codes.length > this.codes.length) {
      const grown = new Int32Array(Math.max(this.used + codes.length, Math.ceil(this.codes.length * 1.5)))
      grown.set(this.codes.subarray(0, this.used))
      this.codes = grown
    }
    // Ids skipped since the last packed one have no values.
    for (let skipped = this.last + 1; skipped <= id; skipped++) this.start[skipped] = this.used
    this.codes.set(codes, this.used)
    this.used += codes.length
    this.start[id + 1] = this.used
    this.last = id
  }

  /** Gives back the growth room of the initial load. */
  trim(): void {
    if (this.codes.length > this.used) this.codes = this.codes.slice(0, this.used)
    if (this.start.length > this.last + 2) this.start = this.start.slice(0, this.last + 2)
  }

  /** Replaces the values of written works (the catch-up); packs everything again when many changed. */
  update(rows: ReadonlyArray<FacetRow>): void {
    for (const row of rows) {
      const id = Number(row[0])
      const codes = this.encode(row)
      if (codes === undefined || id > MAX_WORK_ID) {
        this.usable = false
        continue
      }
      this.changed.set(id, codes)
    }
    if (this.changed.size > Math.max(10_000, this.last / 20)) this.compact()
  }

  /** Packs every work into fresh arrays (sized to fit), folding in the changed ones. */
  compact(): void {
    const { changed, last } = this
    let top = last
    for (const id of changed.keys()) if (id > top) top = id
    const lengthOf = (id: number) => {
      const c = changed.get(id)
      return c !== undefined ? c.length : id <= last ? this.start[id + 1]! - this.start[id]! : 0
    }
    let total = 0
    for (let id = 1; id <= top; id++) total += lengthOf(id)
    const start = new Int32Array(top + 2)
    const codes = new Int32Array(Math.max(total, 1))
    let used = 0
    for (let id = 1; id <= top; id++) {
      start[id] = used
      const c = changed.get(id)
      if (c !== undefined) {
        codes.set(c, used)
        used += c.length
      } else if (id <= last) {
        for (let i = this.start[id]!, end = this.start[id + 1]!; i < end; i++) codes[used++] = this.codes[i]!
      }
    }
    start[top + 1] = used
    this.start = start
    this.codes = codes
    this.last = top
    this.used = used
    changed.clear()
  }

  /**
   * Counts the values of the works listed in `ids` (decimal ids separated by commas, as
   * `string_agg` writes them), for the facets `wanted`.
   */
  count(ids: ReadonlyArray<string>, wanted: ReadonlyArray<CountedFacet>): FacetCounts {
    const counters = KINDS.map((facet, kind) =>
      wanted.includes(facet) ? new Uint32Array(this.largest[kind]! + 1) : undefined
    )
    const tally = (from: number, to: number, codes: Int32Array) => {
      for (let i = from; i < to; i++) {
        const code = codes[i]!
        const counter = counters[code & MASK]
        if (counter !== undefined) counter[code >>> SHIFT]!++
      }
    }
    for (const list of ids) {
      let id = 0
      for (let i = 0; i <= list.length; i++) {
        const c = i < list.length ? list.charCodeAt(i) : 44
        if (c !== 44) {
          id = id * 10 + (c - 48)
          continue
        }
        if (id === 0) continue
        const changed = this.changed.size === 0 ? undefined : this.changed.get(id)
        if (changed !== undefined) tally(0, changed.length, changed)
        else if (id <= this.last) tally(this.start[id]!, this.start[id + 1]!, this.codes)
        id = 0
      }
    }
    const out = {} as Record<CountedFacet, Array<readonly [string, number]>>
    KINDS.forEach((facet, kind) => {
      const counter = counters[kind]
      if (counter === undefined) return
      const values: Array<readonly [string, number]> = []
      const names = facet === "tag_id" || facet === "company_id" ? undefined : this.dictionaries[facet].values
      for (let v = 0; v < counter.length; v++) {
        if (counter[v]! > 0) values.push([names === undefined ? String(v) : names[v]!, counter[v]!])
      }
      out[facet] = values
    })
    return out
  }
}

const ROWS_PER_READ = 10_000

/** `[work_id, olang, media, platforms, tag_ids, company_ids]` as JSON, one array per row. */
const rowJson = "json_build_array(work_id, olang, media, platforms, tag_ids, company_ids)"

export interface FacetIndex {
  /** Whether counts can be taken here (loaded, and every value fits). */
  readonly ready: () => boolean
  /** Catches up with committed writes, then counts; undefined when not ready. */
  readonly count: (
    ids: ReadonlyArray<string>,
    wanted: ReadonlyArray<CountedFacet>
  ) => Effect.Effect<FacetCounts | undefined>
}

/**
 * Starts loading the table in the background (for the lifetime of the scope), unless
 * `CATALOG_FACET_INDEX=false`: then it is never ready and searches count in SQL.
 */
export const makeFacetIndex = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const enabled = yield* Config.Boolean("CATALOG_FACET_INDEX").pipe(Config.withDefault(true), Effect.orDie)
  let table = new FacetTable()
  let loaded = false
  /** The horizon of the last read: every row written by a transaction below it has been read. */
  let horizon = "0"

  const Horizon = { h: Schema.String }
  const Rows = { rows: Schema.Array(FacetRow) }
  const readHorizon = SqlSchema.findOne({
    Request: Schema.Void,
    Result: Schema.Struct(Horizon),
    execute: () => sql`SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS h`
  })
  const readChunk = SqlSchema.findOne({
    Request: Schema.Int,
    Result: Schema.Struct(Rows),
    execute: (after) =>
      sql`
        SELECT coalesce(json_agg(${sql.literal(rowJson)} ORDER BY work_id), '[]') AS rows
        FROM (SELECT * FROM work_facets WHERE work_id > ${after} ORDER BY work_id LIMIT ${ROWS_PER_READ}) f`
  })
  /** The rows written at or after `horizon`, and the horizon of this read. */
  const readSince = SqlSchema.findOne({
    Request: Schema.String,
    Result: Schema.Struct({ ...Horizon, ...Rows }),
    execute: (horizon) =>
      sql`
        SELECT pg_snapshot_xmin(pg_current_snapshot())::text AS h,
          (SELECT coalesce(json_agg(${sql.literal(rowJson)}), '[]') FROM work_facets WHERE txid >= ${horizon}::xid8)
          AS rows`
  })

  const load = Effect.gen(function*() {
    const started = Date.now()
    // A retried load starts over.
    table = new FacetTable()
    const { h } = yield* readHorizon(undefined)
    let after = 0
    for (;;) {
      const { rows } = yield* readChunk(after)
      table.append(rows)
      if (rows.length < ROWS_PER_READ) break
      after = Number(rows[rows.length - 1]![0])
    }
    table.trim()
    horizon = h
    loaded = true
    yield* Effect.logInfo("facet index loaded").pipe(
      Effect.annotateLogs({ ...table.footprint(), duration_ms: Date.now() - started })
    )
  }).pipe(Effect.withSpan("FacetIndex.load"))

  const lock = yield* Semaphore.make(1)
  // On the primary even inside a read routed to the replica (src/platform/ReadReplica.ts): the
  // horizon is a transaction id of the primary's.
  const catchUp = lock.withPermits(1)(
    Effect.gen(function*() {
      const read = yield* readSince(horizon)
      table.update(read.rows)
      horizon = read.h
    })
  ).pipe(onPrimary)

  if (enabled) {
    yield* load.pipe(
      Effect.tapCause((cause) =>
        Effect.logWarning("facet index: load failed; retrying (searches count in SQL)", cause)
      ),
      Effect.retry(Schedule.spaced(Duration.seconds(5))),
      Effect.forkScoped
    )
  }

  const ready = () => loaded && table.usable
  const count: FacetIndex["count"] = (ids, wanted) =>
    Effect.suspend(() => {
      if (!ready()) return Effect.succeed(undefined)
      return catchUp.pipe(
        Effect.map(() => (table.usable ? table.count(ids, wanted) : undefined)),
        Effect.orDie
      )
    }).pipe(Effect.withSpan("FacetIndex.count"))

  return { ready, count } satisfies FacetIndex
})
