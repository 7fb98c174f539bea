/**
 * Feed positions in commit order, assigned by the catalog's own writers (docs/change-feed.md).
 *
 * Until now the change feed and the merge map were ordered by the writing transaction's id and
 * served below `pg_snapshot_xmin(pg_current_snapshot())`. That horizon is cluster-wide: any open
 * transaction in any database of the same server (a seed elsewhere, `pg_dump`, a session left idle
 * in a transaction) froze every mirror for as long as it lasted. And the served `updated_at` was the
 * writer's transaction start, which goes backwards along an id-ordered feed.
 *
 * Now a row of `catalog_changes` or `catalog_redirects` gets its `position` when its transaction
 * commits:
 * - a BEFORE trigger clears `position` on every insert and on every update that does not set it, so
 *   a written row is pending (NULL) inside its transaction;
 * - a deferred constraint trigger runs at COMMIT for each pending row: it takes one transaction-scoped
 *   advisory lock (the feed lock), numbers the row from `catalog_change_seq`, and for a change sets
 *   `updated_at` to the commit moment, never earlier than the newest published change.
 *
 * The feed lock is held from the first numbered row until the transaction's commit is visible, so
 * positions are handed out in commit order: a reader that sees position p sees every position below
 * it, and a transaction that commits later always gets a higher position. The feed serves
 * `position > cursor ORDER BY position`, with no horizon: nothing outside these two tables (or this
 * database) can hold it back, and a long writer delays nobody until it commits. Only the commits of
 * catalog writers are serialized, for the length of a commit.
 *
 * Existing rows are numbered in `updated_at` order (for the merge map, `merged_at`), so the history
 * keeps non-decreasing times. Feed cursors issued before this migration no longer decode
 * (400 INVALID_CURSOR): a mirror pages once more from the start.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  for (const table of ["catalog_changes", "catalog_redirects"]) {
    yield* sql`DROP TRIGGER ${sql(`${table}_position`)} ON ${sql(table)}`
    yield* sql`ALTER TABLE ${sql(table)} ADD COLUMN position bigint`
  }
  yield* sql`DROP FUNCTION catalog_stamp_position()`

  yield* sql`
    UPDATE catalog_changes c SET position = o.n
    FROM (
      SELECT target_object, id, row_number() OVER (ORDER BY updated_at, txid, seq) AS n FROM catalog_changes
    ) o
    WHERE c.target_object = o.target_object AND c.id = o.id`
  yield* sql`
    UPDATE catalog_redirects r SET position = o.n
    FROM (
      SELECT target_object, from_id, row_number() OVER (ORDER BY merged_at, txid, seq) AS n FROM catalog_redirects
    ) o
    WHERE r.target_object = o.target_object AND r.from_id = o.from_id`
  yield* sql`
    SELECT setval('catalog_change_seq', greatest(
      (SELECT max(position) FROM catalog_changes), (SELECT max(position) FROM catalog_redirects), 1))`

  for (const table of ["catalog_changes", "catalog_redirects"]) {
    yield* sql`ALTER TABLE ${sql(table)} DROP COLUMN txid, DROP COLUMN seq`
    yield* sql`CREATE UNIQUE INDEX ${sql(`${table}_feed`)} ON ${sql(table)} (position) WHERE position IS NOT NULL`
  }

  yield* sql`
    CREATE FUNCTION catalog_feed_pending() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      IF TG_OP = 'INSERT' OR NEW.position IS NOT DISTINCT FROM OLD.position THEN
        NEW.position := NULL;
      END IF;
      RETURN NEW;
    END
    $$`

  // Runs at COMMIT (deferred), once per pending row. Each statement reads with a fresh snapshot taken
  // after the lock, so it sees every position published before.
  yield* sql`
    CREATE FUNCTION catalog_feed_publish() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      newest timestamptz;
    BEGIN
      PERFORM pg_advisory_xact_lock(hashtext('shiori.catalog.feed'));
      IF TG_TABLE_NAME = 'catalog_changes' THEN
        SELECT c.updated_at INTO newest FROM catalog_changes c
        WHERE c.position IS NOT NULL ORDER BY c.position DESC LIMIT 1;
        UPDATE catalog_changes
        SET position = nextval('catalog_change_seq'), updated_at = greatest(clock_timestamp(), newest)
        WHERE target_object = NEW.target_object AND id = NEW.id AND position IS NULL;
      ELSE
        UPDATE catalog_redirects SET position = nextval('catalog_change_seq')
        WHERE target_object = NEW.target_object AND from_id = NEW.from_id AND position IS NULL;
      END IF;
      RETURN NULL;
    END
    $$`

  for (const table of ["catalog_changes", "catalog_redirects"]) {
    yield* sql`
      CREATE TRIGGER ${sql(`${table}_pending`)} BEFORE INSERT OR UPDATE ON ${sql(table)}
        FOR EACH ROW EXECUTE FUNCTION catalog_feed_pending()`
    yield* sql`
      CREATE CONSTRAINT TRIGGER ${sql(`${table}_publish`)} AFTER INSERT OR UPDATE ON ${sql(table)}
        DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW WHEN (NEW.position IS NULL) EXECUTE FUNCTION catalog_feed_publish()`
  }
})
