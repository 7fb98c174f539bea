/**
 * SQL of the change feed and the merge map (docs/change-feed.md).
 *
 * Both tables carry a feed `position`, handed out in commit order when the writing transaction
 * commits (migrations/0010). A page is simply the rows after the cursor's position: a transaction
 * that commits later always gets a higher position, so a position handed out as a cursor is never
 * overtaken by a later commit, and nothing but the catalog's own commits decides what is served.
 * The walk uses the partial unique index on `position`: a page costs the same at any depth.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { TargetObject } from "../../../schema/Catalog/Change.js"
import { rfc3339Sql } from "../shared/Rfc3339.js"

/** A feed position (decimal): where a row was published, in commit order. */
export const FeedPosition = Schema.Struct({ position: Schema.String })
export type FeedPosition = typeof FeedPosition.Type

/** Timestamps are written by PostgreSQL (rfc3339Sql). */
export const ChangeRow = Schema.Struct({
  target_object: TargetObject,
  id: Schema.String,
  updated_at: Schema.String,
  gone: Schema.Boolean,
  ...FeedPosition.fields
})
export type ChangeRow = typeof ChangeRow.Type

export const RedirectRow = Schema.Struct({
  target_object: TargetObject,
  from_id: Schema.String,
  current_id: Schema.String,
  merged_at: Schema.String,
  ...FeedPosition.fields
})
export type RedirectRow = typeof RedirectRow.Type

export const FeedQuery = Schema.Struct({
  after: Schema.UndefinedOr(FeedPosition),
  /** The page size. */
  rows: Schema.Int,
  /** An sfw credential: nsfw works, releases and characters are hidden (docs/change-feed.md). */
  sfw: Schema.Boolean
})
export type FeedQuery = typeof FeedQuery.Type

export class MirrorRepo extends Context.Service<MirrorRepo>()("catalog/MirrorRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const rfc3339 = (column: string) => sql.literal(rfc3339Sql(column))

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

    const findChanges = SqlSchema.findAll({
      Request: FeedQuery,
      Result: ChangeRow,
      execute: (query) => {
        // For an sfw credential an nsfw row is "no longer served": it is listed as gone.
        const gone = query.sfw ? sql`(c.gone OR ${nsfw("c.target_object", "c.id")})` : sql`c.gone`
        return sql`
        SELECT c.target_object, c.id::text AS id, ${rfc3339("c.updated_at")} AS updated_at, ${gone} AS gone,
          c.position::text AS position
        FROM catalog_changes c
        WHERE ${after("c", query.after)}
        ORDER BY c.position
        LIMIT ${query.rows}
      `
      }
    })
    const changes = (query: FeedQuery) => findChanges(query).pipe(Effect.orDie, Effect.withSpan("MirrorRepo.changes"))

    const findRedirects = SqlSchema.findAll({
      Request: FeedQuery,
      Result: RedirectRow,
      execute: (query) => {
        const visible = query.sfw
          ? sql`NOT ${nsfw("r.target_object", "r.from_id")} AND NOT ${nsfw("r.target_object", "r.current_id")}`
          : sql.literal("true")
        return sql`
        SELECT r.target_object, r.from_id::text AS from_id, r.current_id::text AS current_id,
          ${rfc3339("r.merged_at")} AS merged_at, r.position::text AS position
        FROM catalog_redirects r
        WHERE ${after("r", query.after)} AND ${visible}
        ORDER BY r.position
        LIMIT ${query.rows}
      `
      }
    })
    const redirects = (query: FeedQuery) =>
      findRedirects(query).pipe(Effect.orDie, Effect.withSpan("MirrorRepo.redirects"))

    return { changes, redirects } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
