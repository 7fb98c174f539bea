/**
 * The per-work playtime aggregate (migrations/0028): `work_playtimes.players` and the exact
 * `median_minutes`, set from the work's histogram. Shared by the playtime writer (Playtimes.ts), which
 * moves the histogram by deltas, and the work merge (src/catalog/merge/MergeRepo.ts), which moves
 * players' reports to the survivor and counts its histogram again.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"

/**
 * Sets `players` and `median_minutes` of `workIds` (aggregate rows already locked by the caller) from
 * their histograms, and records a change-feed row for each work whose aggregate moved.
 */
export const refreshPlaytimeAggregates = (sql: SqlClient.SqlClient, workIds: ReadonlyArray<string>) =>
  sql`
    WITH n AS (
      SELECT b.work_id, sum(b.players)::int AS players FROM work_playtime_buckets b
      WHERE b.work_id = ANY(${workIds}::bigint[]) GROUP BY b.work_id
    ), next AS (
      SELECT n.work_id, n.players, CASE WHEN n.players = 0 THEN NULL ELSE
        (playtime_kth(n.work_id, (n.players + 1) / 2) + playtime_kth(n.work_id, n.players / 2 + 1)) / 2.0
        END::double precision AS median_minutes
      FROM n
    ), upd AS (
      UPDATE work_playtimes s SET players = next.players, median_minutes = next.median_minutes
      FROM next WHERE s.work_id = next.work_id
        AND (s.players, s.median_minutes) IS DISTINCT FROM (next.players, next.median_minutes)
      RETURNING s.work_id
    )
    SELECT catalog_touch('work', upd.work_id) FROM upd`

/**
 * Moves the playtime reports of work `fromId` (merged away) to `intoId`: a player who reported both
 * keeps the larger cumulative minutes on the survivor. The survivor's histogram is counted again from
 * its reports and the loser's is emptied, then both aggregates are set. Locks both aggregate rows in
 * work id order first, as the writer does, so a merge and a batch take turns. Answers the reports moved.
 */
export const movePlaytimes = (sql: SqlClient.SqlClient, fromId: string, intoId: string) =>
  Effect.gen(function*() {
    const [{ reports }] = yield* sql<{ readonly reports: number }>`
      SELECT count(*)::int AS reports FROM playtimes WHERE work_id = ${fromId}`
    if (reports === 0) return 0
    const pair = [fromId, intoId].sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : 1))
    yield* sql`
      INSERT INTO work_playtimes (work_id) SELECT x FROM unnest(${pair}::bigint[]) AS x
      ON CONFLICT (work_id) DO UPDATE SET players = work_playtimes.players`
    yield* sql`
      UPDATE playtimes s SET minutes = l.minutes, updated_at = now()
      FROM playtimes l
      WHERE s.work_id = ${intoId} AND l.work_id = ${fromId} AND l.user_id = s.user_id AND l.minutes > s.minutes`
    yield* sql`
      DELETE FROM playtimes l USING playtimes s
      WHERE l.work_id = ${fromId} AND s.work_id = ${intoId} AND s.user_id = l.user_id`
    yield* sql`UPDATE playtimes SET work_id = ${intoId} WHERE work_id = ${fromId}`
    for (const histogram of ["work_playtime_minutes", "work_playtime_buckets"]) {
      yield* sql`DELETE FROM ${sql(histogram)} WHERE work_id = ANY(${pair}::bigint[])`
    }
    yield* sql`
      INSERT INTO work_playtime_minutes (work_id, minutes, players)
      SELECT work_id, minutes, count(*)::int FROM playtimes WHERE work_id = ${intoId}
      GROUP BY work_id, minutes ORDER BY minutes`
    yield* sql`
      INSERT INTO work_playtime_buckets (work_id, bucket, players)
      SELECT work_id, minutes / 250, count(*)::int FROM playtimes WHERE work_id = ${intoId}
      GROUP BY work_id, minutes / 250 ORDER BY 2`
    yield* sql`UPDATE work_playtimes SET players = 0, median_minutes = NULL WHERE work_id = ${fromId}`
    yield* refreshPlaytimeAggregates(sql, [intoId])
    return reports
  })
