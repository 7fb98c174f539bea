/**
 * Playtimes (docs/writing.md, "Playtimes"): a batch sets the bearer's cumulative minutes per work,
 * and in the same transaction (the write runner's, src/catalog/writes/Writes.ts) the per-work
 * aggregate `include=playtime` serves (migrations/0028): the exact histogram of minutes, then each
 * touched work's `players` and `median_minutes` from it, and the work's change-feed row.
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import type { ListPlaytimesParams } from "../../../schema/Api/PlaytimesApi.js"
import type { PrincipalShape } from "../../../schema/Api/Security.js"
import { type BatchPlaytimesInputBody, ListPlaytime, type Playtime } from "../../../schema/Catalog/Playtime.js"
import { DEFAULT_LIMIT } from "../../../schema/Catalog/Query.js"
import { InvalidCursor, UserIdentityRequired, ValidationFailed } from "../../../schema/Problem.js"
import { Cursors, filterDigest, pageOf } from "../pagination/Cursor.js"
import { bigintId } from "../shared/Lanes.js"
import { rfc3339Sql } from "../shared/Rfc3339.js"
import { gateSql } from "../works/WorkSql.js"
import { jsonAnswer } from "../writes/Writes.js"
import { refreshPlaytimeAggregates } from "./PlaytimeAggregates.js"

const userOf = (principal: PrincipalShape) =>
  Option.match(principal.user, {
    onNone: () => Effect.fail(new UserIdentityRequired({ detail: "This operation acts for a person." })),
    onSome: (user) => Effect.succeed(user)
  })

interface PlaytimeRow {
  readonly work_id: string
  readonly minutes: number
  readonly updated_at: string
}

const toPlaytime = (row: PlaytimeRow): Playtime => ({
  object: "playtime",
  work_id: row.work_id,
  minutes: row.minutes,
  updated_at: row.updated_at
})

const updatedAt = rfc3339Sql("p.updated_at")

export class Playtimes extends Context.Service<Playtimes>()("catalog/Playtimes", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cursors = yield* Cursors

    /**
     * The batch: refused whole (422) when an item repeats a work or names one the credential may not
     * see; else every (user, work) upserted in one statement, the touched works' aggregates updated
     * and their change-feed rows written. Answers the stored playtimes in the batch's order.
     */
    const batch = (principal: PrincipalShape, body: BatchPlaytimesInputBody) =>
      Effect.gen(function*() {
        const user = yield* userOf(principal)
        // Canonical ids (`007` is `7`); an id beyond bigint names no work.
        const ids = body.items.map((item) => bigintId(item.work_id))
        const seen = new Set<string>()
        const duplicates: Array<number> = []
        ids.forEach((id, n) => {
          if (id === undefined) return
          if (seen.has(id)) duplicates.push(n)
          seen.add(id)
        })
        if (duplicates.length > 0) {
          return yield* new ValidationFailed({
            detail: "A batch names each work at most once.",
            errors: duplicates.map((n) => ({
              reason: "DUPLICATE_ITEM" as const,
              detail: `\`/items/${n}/work_id\` repeats an earlier item's work.`,
              pointer: `/items/${n}/work_id`
            }))
          })
        }
        const known = [...seen]
        const visible = known.length === 0 ? [] : yield* sql<{ id: string }>`
          SELECT w.id::text AS id FROM works w
          WHERE w.id = ANY(${known}::bigint[]) AND ${gateSql(sql, principal.contentLimit === "nsfw")}`
        const served = new Set(visible.map((row) => row.id))
        const unknown = ids.flatMap((id, n) => id === undefined || !served.has(id) ? [n] : [])
        if (unknown.length > 0) {
          return yield* new ValidationFailed({
            detail: "The batch names works that do not exist or are not served.",
            errors: unknown.map((n) => ({
              reason: "UNKNOWN_REFERENCE" as const,
              detail: `\`/items/${n}/work_id\` names no work in the catalog.`,
              pointer: `/items/${n}/work_id`
            }))
          })
        }
        if (body.items.length === 0) return yield* jsonAnswer(ListPlaytime, { object: "list", items: [] })

        const works = ids as Array<string>
        const minutes = body.items.map((item) => item.minutes)
        const uid = String(user.id)
        // Every writer of a work first locks its aggregate row, in work id order: the writers of one
        // work take turns, so each reads the histogram and the players' old minutes as committed.
        yield* sql`
          INSERT INTO work_playtimes (work_id)
          SELECT x FROM unnest(${[...works].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1))}::bigint[]) AS x
          ON CONFLICT (work_id) DO UPDATE SET players = work_playtimes.players`
        // The upsert, one statement: the old minutes (none for a first report) come from its snapshot.
        const stored = yield* sql<PlaytimeRow & { readonly old_minutes: number | null }>`
          WITH input AS (
            SELECT * FROM unnest(${works}::bigint[], ${minutes}::int[]) AS i (work_id, minutes)
          ), old AS (
            SELECT p.work_id, p.minutes FROM playtimes p JOIN input USING (work_id) WHERE p.user_id = ${uid}::bigint
          ), up AS (
            INSERT INTO playtimes AS p (user_id, work_id, minutes)
            SELECT ${uid}::bigint, work_id, minutes FROM input
            ON CONFLICT (user_id, work_id) DO UPDATE SET minutes = EXCLUDED.minutes, updated_at = now()
            RETURNING p.work_id, p.minutes, p.updated_at
          )
          SELECT p.work_id::text AS work_id, p.minutes, ${sql.literal(updatedAt)} AS updated_at,
                 old.minutes AS old_minutes
          FROM up p LEFT JOIN old USING (work_id)`
        const changed = stored.filter((row) => row.old_minutes !== row.minutes)
        if (changed.length > 0) {
          const changedWorks = changed.map((row) => row.work_id)
          // The histogram: +1 at the new minutes, -1 at the old (-1 for a first report: none), per minute
          // and per 250-minute bucket.
          yield* sql`
            WITH c AS (
              SELECT * FROM unnest(${changedWorks}::bigint[], ${changed.map((row) => row.old_minutes ?? -1)}::int[],
                ${changed.map((row) => row.minutes)}::int[]) AS c (work_id, old, new)
            ), d AS (
              SELECT work_id, minutes, sum(delta)::int AS delta FROM (
                SELECT work_id, new AS minutes, 1 AS delta FROM c
                UNION ALL SELECT work_id, old, -1 FROM c WHERE old >= 0
              ) x GROUP BY work_id, minutes
            ), m AS (
              INSERT INTO work_playtime_minutes AS t (work_id, minutes, players)
              SELECT work_id, minutes, delta FROM d ORDER BY work_id, minutes
              ON CONFLICT (work_id, minutes) DO UPDATE SET players = t.players + EXCLUDED.players
            )
            INSERT INTO work_playtime_buckets AS t (work_id, bucket, players)
            SELECT work_id, minutes / 250, sum(delta)::int FROM d GROUP BY work_id, minutes / 250
            ORDER BY 1, 2
            ON CONFLICT (work_id, bucket) DO UPDATE SET players = t.players + EXCLUDED.players`
          // The aggregates from the histogram, and a change-feed row for each work whose aggregate moved.
          yield* refreshPlaytimeAggregates(sql, changedWorks)
        }
        return yield* jsonAnswer(ListPlaytime, { object: "list", items: stored.map(toPlaytime) })
      }).pipe(Effect.catchTag("SqlError", Effect.die))

    /** The bearer's playtimes on works the credential may see, most recently updated first. */
    const list = (principal: PrincipalShape, params: ListPlaytimesParams) =>
      Effect.gen(function*() {
        const user = yield* userOf(principal)
        const uid = String(user.id)
        const filters = { "": "playtimes", user: uid, nsfw: principal.contentLimit === "nsfw" }
        const digest = filterDigest(filters)
        const limit = params.limit ?? DEFAULT_LIMIT
        let after: { readonly updatedAt: string; readonly id: string } | undefined
        if (params.cursor !== undefined) {
          const position = yield* cursors.decode(params.cursor, { sort: "updated", filters: digest })
          const key = position.key[0]
          if (typeof key !== "string" || !/^[0-9]{1,19}$/u.test(position.id)) {
            return yield* new InvalidCursor({ detail: "The cursor does not hold a position." })
          }
          after = { updatedAt: key, id: position.id }
        }
        const rows = yield* sql<PlaytimeRow>`
          SELECT p.work_id::text AS work_id, p.minutes, ${sql.literal(updatedAt)} AS updated_at
          FROM playtimes p JOIN works w ON w.id = p.work_id AND ${gateSql(sql, principal.contentLimit === "nsfw")}
          WHERE p.user_id = ${uid}::bigint ${
          after === undefined
            ? sql``
            : sql`AND (p.updated_at, p.work_id) < (${after.updatedAt}::timestamptz, ${after.id}::bigint)`
        }
          ORDER BY p.updated_at DESC, p.work_id DESC LIMIT ${limit + 1}`.pipe(Effect.orDie)
        const page = pageOf(
          rows,
          limit,
          (row) => ({ sort: "updated", key: [row.updated_at], id: row.work_id }),
          (position) => cursors.encode(position, digest)
        )
        return {
          object: "list" as const,
          items: page.items.map(toPlaytime),
          ...(page.next_cursor === undefined ? {} : { next_cursor: page.next_cursor })
        }
      })

    return { batch, list } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([Cursors.layer]))
}
