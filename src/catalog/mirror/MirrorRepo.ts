/**
 * SQL of the change feed and the merge map (docs/change-feed.md).
 *
 * Both tables carry a feed `position`, handed out in commit order when the writing transaction
 * commits (migrations/0010). A page is simply the rows after the cursor's position: a transaction
 * that commits later always gets a higher position, so a position handed out as a cursor is never
 * overtaken by a later commit, and nothing but the catalog's own commits decides what is served.
 * The walk uses the partial unique index on `position`: a page costs the same at any depth.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { TargetObject } from "../../../schema/Catalog/Change.js"

/** A feed position (decimal): where a row was published, in commit order. */
export interface FeedPosition {
  readonly position: string
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
  /** An sfw credential: nsfw works, releases and characters are hidden (docs/change-feed.md). */
  readonly sfw: boolean
}

export class MirrorRepo extends Context.Service<MirrorRepo>()("catalog/MirrorRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const rfc3339 = (column: string) =>
      sql.literal(`to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`)

    const after = (alias: "c" | "r", after: FeedPosition | undefined) =>
      after === undefined
        ? sql`${sql.literal(alias)}.position IS NOT NULL`
        : sql`${sql.literal(alias)}.position > ${after.position}::bigint`

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
        SELECT c.target_object, c.id::text AS id, ${rfc3339("c.updated_at")} AS updated_at, ${gone} AS gone,
          c.position::text AS position
        FROM catalog_changes c
        WHERE ${after("c", query.after)}
        ORDER BY c.position
        LIMIT ${query.rows}
      `.pipe(Effect.orDie)
    })

    const redirects = Effect.fn("MirrorRepo.redirects")(function*(query: FeedQuery) {
      const visible = query.sfw
        ? sql`NOT ${nsfw("r.target_object", "r.from_id")} AND NOT ${nsfw("r.target_object", "r.current_id")}`
        : sql.literal("true")
      return yield* sql<RedirectRow>`
        SELECT r.target_object, r.from_id::text AS from_id, r.current_id::text AS current_id,
          ${rfc3339("r.merged_at")} AS merged_at, r.position::text AS position
        FROM catalog_redirects r
        WHERE ${after("r", query.after)} AND ${visible}
        ORDER BY r.position
        LIMIT ${query.rows}
      `.pipe(Effect.orDie)
    })

    return { changes, redirects } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
