/**
 * SQL of works: the listing lane's keyset pages, items by id, the parts of a page (includes and
 * view=full arrays, one statement per page), upstream-reference lookups, counts, and a work's roster,
 * credit groups, covers and intros. SQL failures die here (docs/life-of-a-request.md, "Handlers,
 * services and SQL").
 */
import { Context, Effect, Layer, Option, Schema, Struct } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { WorkSort } from "../../../schema/Api/WorksApi.js"
import { Intro } from "../../../schema/Catalog/Common.js"
import { Position } from "../pagination/Cursor.js"
import {
  afterSql,
  coverJson,
  coverOrder,
  creditGroupsSql,
  filterSql,
  gateSql,
  itemJsonSql,
  keyColumnsSql,
  orderSql,
  partSql,
  partsSql,
  rosterJson,
  sortSpecs,
  type WorkFilters,
  type WorkPart,
  workPartsSql
} from "./WorkSql.js"

/*
 * The rows of the works list and detail (`ItemRow`, `PartRow`, `DetailRow`) are not decoded: they are
 * an id and the JSON text PostgreSQL built (WorkSql.ts), which the contract test checks against the
 * records (test/platform/Contract.test.ts), and decoding a 100-row page of them costs about 60 µs
 * (measured with a micro-benchmark of `Schema.Array` over such rows) on the hottest read the catalog
 * serves, for three string fields the driver already returns as text. Every other row here is decoded.
 */

/** A work as JSON text, with its sort key (as text) when it came from a keyset page. */
export interface ItemRow {
  readonly id: string
  readonly json: string
  readonly k0?: string | null
}

export interface PartRow {
  readonly part: WorkPart
  readonly id: string
  readonly json: string
}

/** A row of a work's detail statement: the item (`work`), one of its parts, or its embedded roster. */
export interface DetailRow {
  readonly part: WorkPart | "work" | "characters"
  readonly id: string
  readonly json: string | null
}

/** A roster row: its keyset position and the RosterCharacter as JSON text. */
export const RosterRow = Schema.Struct({ id: Schema.String, position: Schema.Int, json: Schema.String })
export type RosterRow = typeof RosterRow.Type

/** A credit group: its keyset position and its credits as JSON text. */
export const CreditGroupRow = Schema.Struct({
  role_key: Schema.String,
  role_name: Schema.String,
  position: Schema.Int,
  credits: Schema.String
})

/** A cover: its keyset position and the Cover as JSON text. */
export const CoverRow = Schema.Struct({
  id: Schema.String,
  pinned: Schema.Boolean,
  votes: Schema.Int,
  json: Schema.String
})

/** An intro of a work, with its keyset position. */
export const IntroRow = Schema.Struct({ position: Schema.Int, ...Struct.omit(Intro.fields, ["object"]) })

const RefHit = Schema.Struct({ source: Schema.String, external_id: Schema.String, id: Schema.String })
const TextCount = Schema.Struct({ n: Schema.NumberFromString })

/** A keyset position: the sort key's values and the row's id. */
export const Keyed = Schema.Struct(Struct.omit(Position.fields, ["sort"]))
export type Keyed = typeof Keyed.Type

/** A sub-collection page of a work: its id, where it starts, and how many rows. */
const WorkPage = Schema.Struct({
  workId: Schema.String,
  after: Schema.UndefinedOr(Keyed),
  take: Schema.Int
})

/** Up to this many (work, part) pairs, a page's parts are fetched in one statement. */
const SMALL_PAGE_PARTS = 40

const die = <A, E, R>(name: string) => (effect: Effect.Effect<A, E, R>) =>
  effect.pipe(Effect.orDie, Effect.withSpan(`WorksRepo.${name}`))

export class WorksRepo extends Context.Service<WorksRepo>()("catalog/WorksRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** A keyset page of the listing lane: `take` works after `after` in `sort` order, items built. */
    const keyset = (options: {
      readonly filters: WorkFilters
      readonly sort: WorkSort
      readonly after: Keyed | undefined
      readonly take: number
      readonly nsfw: boolean
      readonly view: "basic" | "full"
    }) => {
      const spec = sortSpecs[options.sort]
      return sql<ItemRow>`
        SELECT w.id::text AS id, ${keyColumnsSql(sql, spec)}, ${itemJsonSql(sql, options.view)} AS json
        FROM works w
        WHERE ${gateSql(sql, options.nsfw)} AND ${filterSql(sql, options.filters)}
          AND ${afterSql(sql, spec, options.after)}
        ORDER BY ${orderSql(sql, spec)}
        LIMIT ${options.take}`.pipe(die("keyset"))
    }

    /** The visible works among `ids` (canonical bigint strings), items built, in no particular order. */
    const byIds = (ids: ReadonlyArray<string>, view: "basic" | "full", nsfw: boolean) =>
      ids.length === 0
        ? Effect.succeed<ReadonlyArray<ItemRow>>([])
        : sql<ItemRow>`
            SELECT w.id::text AS id, ${itemJsonSql(sql, view)} AS json
            FROM works w WHERE w.id = ANY(${ids}::bigint[]) AND ${gateSql(sql, nsfw)}`.pipe(die("byIds"))

    /**
     * Every part asked for, for every work of a page: one statement for a small page (a single work),
     * else one statement per part, run side by side (see `partSql`).
     */
    const parts = (ids: ReadonlyArray<string>, wanted: ReadonlyArray<WorkPart>, nsfw: boolean) =>
      ids.length === 0 || wanted.length === 0
        ? Effect.succeed<ReadonlyArray<PartRow>>([])
        : ids.length * wanted.length <= SMALL_PAGE_PARTS
        ? sql<PartRow>`${partsSql(sql, wanted, ids, nsfw)}`.pipe(die("parts"))
        : Effect.forEach(wanted, (part) => sql<PartRow>`${partSql(sql, part, ids, nsfw)}`, {
          concurrency: "unbounded"
        }).pipe(Effect.map((rows) => rows.flat()), die("parts"))

    /** The work ids anchored by (source, external_id) pairs (the `refs=` lane), whatever their state. */
    const findByRefs = SqlSchema.findAll({
      Request: Schema.Array(Schema.Struct({ source: Schema.String, externalId: Schema.String })),
      Result: RefHit,
      execute: (pairs) =>
        sql`
          SELECT r.source, r.external_id, r.entity_id::text AS id
          FROM unnest(${pairs.map((p) => p.externalId)}::text[], ${pairs.map((p) => p.source)}::text[])
            AS q(external_id, source)
          JOIN entity_refs r ON r.external_id = q.external_id AND r.source = q.source AND r.entity_type = 'work'`
    })
    const byRefs = (pairs: ReadonlyArray<{ readonly source: string; readonly externalId: string }>) =>
      pairs.length === 0 ? Effect.succeed([]) : findByRefs(pairs).pipe(die("byRefs"))

    /** Exact number of matching works. */
    const count = (filters: WorkFilters, nsfw: boolean) =>
      SqlSchema.findOne({
        Request: Schema.Void,
        Result: TextCount,
        execute: () =>
          sql`SELECT count(*)::text AS n FROM works w WHERE ${gateSql(sql, nsfw)} AND ${filterSql(sql, filters)}`
      })(undefined).pipe(Effect.map((row) => row.n), die("count"))

    /** Number of matching works, counted up to `cap` (the page-mode total). */
    const countUpTo = (filters: WorkFilters, nsfw: boolean, cap: number) =>
      SqlSchema.findOne({
        Request: Schema.Int,
        Result: TextCount,
        execute: (cap) =>
          sql`
            SELECT count(*)::text AS n FROM (
              SELECT 1 FROM works w WHERE ${gateSql(sql, nsfw)} AND ${filterSql(sql, filters)} LIMIT ${cap}) x`
      })(cap).pipe(Effect.map((row) => row.n), die("countUpTo"))

    /** Whether `id` (canonical) is a visible work. */
    const findVisible = SqlSchema.findOneOption({
      Request: Schema.Struct({ id: Schema.String, nsfw: Schema.Boolean }),
      Result: Schema.Struct({ id: Schema.String }),
      execute: ({ id, nsfw }) =>
        sql`SELECT w.id::text AS id FROM works w WHERE w.id = ${id}::bigint AND ${gateSql(sql, nsfw)}`
    })
    const visible = (id: string, nsfw: boolean) =>
      findVisible({ id, nsfw }).pipe(Effect.map(Option.isSome), die("visible"))

    /**
     * The first `take` roster rows of a work after `after`, in roster order (position, then character
     * id), unsuppressed rows of live characters only: (id, position, character_id, json), `json` the
     * RosterCharacter.
     */
    const rosterRows = (workId: string, after: Keyed | undefined, take: number) =>
      sql`SELECT c.id::text AS id, wc.position, wc.character_id, ${sql.literal(rosterJson)} AS json
        FROM work_characters wc JOIN characters c ON c.id = wc.character_id AND c.live
        WHERE wc.work_id = ${workId}::bigint AND NOT wc.suppressed
          ${
        after === undefined
          ? sql``
          : sql`AND (wc.position, wc.character_id) > (${Number(after.key[0])}, ${after.id}::bigint)`
      }
        ORDER BY wc.position, wc.character_id
        LIMIT ${take}`

    /** A page of a work's roster (`/works/{id}/characters`). */
    const findRoster = SqlSchema.findAll({
      Request: WorkPage,
      Result: RosterRow,
      execute: ({ after, take, workId }) =>
        sql`
          SELECT r.id, r.position, r.json::text AS json FROM (${rosterRows(workId, after, take)}) r
          ORDER BY r.position, r.character_id`
    })
    const roster = (workId: string, after: Keyed | undefined, take: number) =>
      findRoster({ workId, after, take }).pipe(die("roster"))

    /**
     * A work's detail in one statement: the item (when visible), each of `wanted`, and the first
     * `roster` characters of its roster (none when 0). A part or roster with no rows is absent.
     */
    const detail = (
      id: string,
      view: "basic" | "full",
      wanted: ReadonlyArray<WorkPart>,
      nsfw: boolean,
      roster: number
    ) =>
      sql<DetailRow>`
        SELECT 'work' AS part, w.id::text AS id, ${itemJsonSql(sql, view)} AS json
        FROM works w WHERE w.id = ${id}::bigint AND ${gateSql(sql, nsfw)}
        ${wanted.length === 0 ? sql`` : sql`UNION ALL ${workPartsSql(sql, wanted, id, nsfw)}`}
        ${
        roster === 0 ? sql`` : sql`UNION ALL
          SELECT 'characters' AS part, ${id} AS id, json_agg(r.json ORDER BY r.position, r.character_id)::text AS json
          FROM (${rosterRows(id, undefined, roster)}) r`
      }`.pipe(die("detail"))

    /** A work's credit groups in role order (`credits` is JSON text). */
    const findCreditGroups = SqlSchema.findAll({
      Request: WorkPage,
      Result: CreditGroupRow,
      execute: ({ after, take, workId }) =>
        sql`
          SELECT g.role_key, g.role_name, g.position, g.credits::text AS credits
          FROM (${creditGroupsSql(sql, sql`= ${workId}::bigint`)}) g
          ${after === undefined ? sql`` : sql`WHERE (g.position, g.role_key) > (${Number(after.key[0])}, ${after.id})`}
          ORDER BY g.position, g.role_key
          LIMIT ${take}`
    })
    const creditGroups = (workId: string, after: Keyed | undefined, take: number) =>
      findCreditGroups({ workId, after, take }).pipe(die("creditGroups"))

    /** A work's covers, best first (`json` is the Cover as JSON text). */
    const findCovers = SqlSchema.findAll({
      Request: WorkPage,
      Result: CoverRow,
      execute: ({ after, take, workId }) =>
        sql`
        SELECT c.id::text AS id, c.portrait_pinned AS pinned, c.vote_count AS votes,
          ${sql.literal(coverJson)}::text AS json
        FROM covers c JOIN images i ON i.hash = c.image_hash
        WHERE c.work_id = ${workId}::bigint
          ${
          after === undefined
            ? sql``
            : sql`AND (c.portrait_pinned, c.vote_count, c.id) < (${after.key[0] === 1}, ${
              Number(after.key[1])
            }, ${after.id}::bigint)`
        }
        ORDER BY ${sql.literal(coverOrder)}
        LIMIT ${take}`
    })
    const covers = (workId: string, after: Keyed | undefined, take: number) =>
      findCovers({ workId, after, take }).pipe(die("covers"))

    /** A work's intros in stored order. */
    const findIntros = SqlSchema.findAll({
      Request: WorkPage,
      Result: IntroRow,
      execute: ({ after, take, workId }) =>
        sql`
        SELECT n.position, n.lang, n.value, n.is_machine, n.source
        FROM entity_intros n
        WHERE n.entity_id = ${workId}::bigint AND n.entity_type = 'work'
          ${after === undefined ? sql`` : sql`AND n.position > ${Number(after.id)}`}
        ORDER BY n.position
        LIMIT ${take}`
    })
    const intros = (workId: string, after: Keyed | undefined, take: number) =>
      findIntros({ workId, after, take }).pipe(die("intros"))

    return {
      keyset,
      byIds,
      parts,
      detail,
      byRefs,
      count,
      countUpTo,
      visible,
      roster,
      creditGroups,
      covers,
      intros
    } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
