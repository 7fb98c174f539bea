/**
 * SQL of the change feed and the merge map (migrations/0002_catalog.ts header; DECISIONS 8).
 *
 * Both tables carry a feed position (txid, seq) stamped by a trigger in the writing transaction.
 * A page lists rows after the cursor's position and below the watermark
 * `pg_snapshot_xmin(pg_current_snapshot())`: every transaction with a smaller id has finished, and a
 * transaction still running (or not yet started) can only ever stamp positions at or above it. So a
 * position handed out as a cursor is never overtaken by a later commit.
 *
 * The watermark is computed once per statement (a materialized CTE) so the planner sees a constant
 * and walks the (txid, seq) index from the cursor: a page costs the same at any depth.
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { TargetObject } from "../../../schema/Catalog/Change.js"

/** A feed position: the writing transaction's id (xid8, decimal) and the stamp sequence. */
export interface FeedPosition {
  readonly txid: string
  readonly seq: string
}

export interface ChangeRow extends FeedPosition {
  readonly target_object: TargetObject
  readonly id: string
  readonly updated_at: string
  readonly gone: boolean
}

export interface RedirectRow extends FeedPosition {
  readonly target_object: TargetObject
  readonly from_id: string
  readonly current_id: string
  readonly merged_at: string
}

export interface FeedQuery {
  readonly after: FeedPosition | undefined
  /** The page size. */
  readonly rows: number
  /** An sfw credential: nsfw works, releases and characters are hidden (DECISIONS 4). */
  readonly sfw: boolean
}

export class MirrorRepo extends Effect.Service<MirrorRepo>()("catalog/MirrorRepo", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const rfc3339 = (column: string) =>
      sql.literal(`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`)

    const after = (alias: "c" | "r", position: FeedPosition | undefined) =>
      position === undefined
        ? sql.literal("true")
        : sql`(${sql.literal(alias)}.txid, ${
          sql.literal(alias)
        }.seq) > (${position.txid}::xid8, ${position.seq}::bigint)`

    /** Whether the row's entity is nsfw; only works, releases and characters carry the flag. */
    const nsfw = (object: string, id: string) =>
      sql.literal(`CASE ${object}
        WHEN 'work' THEN EXISTS (SELECT 1 FROM works x WHERE x.id = ${id} AND x.nsfw)
        WHEN 'release' THEN EXISTS (SELECT 1 FROM releases x WHERE x.id = ${id} AND x.nsfw)
        WHEN 'character' THEN EXISTS (SELECT 1 FROM characters x WHERE x.id = ${id} AND x.nsfw)
        ELSE false END`)

    const changes = Effect.fn("MirrorRepo.changes")(function*(query: FeedQuery) {
      // For an sfw credential an nsfw row is "no longer served": it is listed as gone.
      const gone = query.sfw ? sql`(c.gone OR ${nsfw("c.target_object", "c.id")})` : sql`c.gone`
      return yield* sql<ChangeRow>`
        WITH horizon AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
        SELECT c.target_object, c.id::text AS id, ${rfc3339("c.updated_at")} AS updated_at, ${gone} AS gone,
          c.txid::text AS txid, c.seq::text AS seq
        FROM catalog_changes c
        WHERE c.txid < (SELECT xmin FROM horizon) AND ${after("c", query.after)}
        ORDER BY c.txid, c.seq
        LIMIT ${query.rows}
      `.pipe(Effect.orDie)
    })

    const redirects = Effect.fn("MirrorRepo.redirects")(function*(query: FeedQuery) {
      const visible = query.sfw
        ? sql`NOT ${nsfw("r.target_object", "r.from_id")} AND NOT ${nsfw("r.target_object", "r.current_id")}`
        : sql.literal("true")
      return yield* sql<RedirectRow>`
        WITH horizon AS MATERIALIZED (SELECT pg_snapshot_xmin(pg_current_snapshot()) AS xmin)
        SELECT r.target_object, r.from_id::text AS from_id, r.current_id::text AS current_id,
          ${rfc3339("r.merged_at")} AS merged_at, r.txid::text AS txid, r.seq::text AS seq
        FROM catalog_redirects r
        WHERE r.txid < (SELECT xmin FROM horizon) AND ${after("r", query.after)} AND ${visible}
        ORDER BY r.txid, r.seq
        LIMIT ${query.rows}
      `.pipe(Effect.orDie)
    })

    return { changes, redirects } as const
  })
}) {}
