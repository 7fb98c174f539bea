/**
 * Playtimes (docs/writing.md, "Playtimes"): each user's cumulative minutes on a work, and the
 * per-work aggregate `include=playtime` serves, kept by the writer in the same transaction.
 *
 * - `playtimes`: one row per (user, work); `user_id` is the identity user id.
 * - `work_playtime_minutes`: how many players report exactly `minutes` on a work (an exact histogram).
 *   Its counts carry no `>= 0` check: PostgreSQL checks the proposed row of an upsert, and the writer
 *   upserts negative deltas (a count only goes below what it was by players that were counted in it).
 * - `work_playtime_buckets`: the same counts summed per bucket of 250 minutes (`minutes / 250`, at most
 *   241 buckets for 0..60000), so the k-th smallest value is found by walking at most 241 bucket rows
 *   and then at most 250 minute rows of one bucket, whatever the number of players.
 * - `work_playtimes`: per work, `players` and the exact `median_minutes` (the mean of the two middle
 *   values for an even count, as `percentile_cont(0.5)`), set after every change from the histogram.
 *   Its row is locked first by every writer of the work, so the writers of one work take turns.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE playtimes (
      user_id bigint NOT NULL,
      work_id bigint NOT NULL REFERENCES works (id),
      minutes integer NOT NULL CHECK (minutes BETWEEN 0 AND 60000),
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (user_id, work_id)
    )`
  // The bearer's list, newest-updated first.
  yield* sql`CREATE INDEX playtimes_user_updated ON playtimes (user_id, updated_at DESC, work_id DESC)`

  yield* sql`
    CREATE TABLE work_playtimes (
      work_id bigint PRIMARY KEY REFERENCES works (id),
      players integer NOT NULL DEFAULT 0 CHECK (players >= 0),
      median_minutes double precision
    )`
  yield* sql`
    CREATE TABLE work_playtime_buckets (
      work_id bigint NOT NULL,
      bucket integer NOT NULL CHECK (bucket BETWEEN 0 AND 240),
      players integer NOT NULL,
      PRIMARY KEY (work_id, bucket)
    )`
  yield* sql`
    CREATE TABLE work_playtime_minutes (
      work_id bigint NOT NULL,
      minutes integer NOT NULL CHECK (minutes BETWEEN 0 AND 60000),
      players integer NOT NULL,
      PRIMARY KEY (work_id, minutes)
    )`

  // The k-th smallest minutes (from 1) reported on a work: the bucket holding it, then the value within.
  yield* sql`
    CREATE FUNCTION playtime_kth(p_work bigint, p_k integer) RETURNS integer LANGUAGE sql STABLE AS $$
      WITH b AS (
        SELECT bucket, sum(players) OVER (ORDER BY bucket) AS upto, players
        FROM work_playtime_buckets WHERE work_id = p_work AND players > 0
      ), hit AS (
        SELECT bucket, upto - players AS before FROM b WHERE upto >= p_k ORDER BY bucket LIMIT 1
      ), m AS (
        SELECT x.minutes, hit.before + sum(x.players) OVER (ORDER BY x.minutes) AS upto
        FROM hit JOIN work_playtime_minutes x ON x.work_id = p_work
          AND x.minutes >= hit.bucket * 250 AND x.minutes < (hit.bucket + 1) * 250 AND x.players > 0
      )
      SELECT minutes FROM m WHERE upto >= p_k ORDER BY minutes LIMIT 1
    $$`
})
