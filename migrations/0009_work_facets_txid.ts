/**
 * `work_facets` rows carry the id of the transaction that last wrote them (the search + facets p99 target
 * in bench/README.md), so each API process can keep a copy of the table in memory
 * (src/catalog/search/FacetIndex.ts) and catch up with one indexed read: the rows with `txid >= h`, where
 * `h` was the snapshot horizon (`pg_snapshot_xmin(pg_current_snapshot())`) of its previous read. Every
 * transaction below a horizon has finished, so a row written by one was visible to that read; a row
 * written by a later one has a `txid` at or above it and is read the next time. The same rule orders the
 * change feed (0002).
 *
 * The functions of 0008 are replaced to stamp the rows they update; an inserted row gets the
 * column's default. The seed writes the rows with COPY, which fills the default too.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`ALTER TABLE work_facets ADD COLUMN txid xid8 NOT NULL DEFAULT pg_current_xact_id()`
  yield* sql`CREATE INDEX work_facets_txid ON work_facets (txid)`

  yield* sql`
    CREATE OR REPLACE FUNCTION work_facets_follow_work() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO work_facets (work_id, olang, media, platforms, tag_ids, company_ids)
      VALUES (NEW.id, NEW.olang, NEW.media, NEW.platforms,
              ARRAY(SELECT t.tag_id FROM work_tags t WHERE t.work_id = NEW.id ORDER BY t.tag_id),
              ARRAY(SELECT c.company_id FROM work_companies c WHERE c.work_id = NEW.id ORDER BY c.company_id))
      ON CONFLICT (work_id) DO UPDATE
      SET olang = EXCLUDED.olang, media = EXCLUDED.media, platforms = EXCLUDED.platforms,
          txid = pg_current_xact_id();
      RETURN NULL;
    END
    $$`

  for (
    const [table, column, target] of [
      ["work_tags", "tag_id", "tag_ids"],
      ["work_companies", "company_id", "company_ids"]
    ] as const
  ) {
    const refresh = (source: string) => `
      UPDATE work_facets f
      SET ${target} = ARRAY(SELECT l.${column} FROM ${table} l WHERE l.work_id = f.work_id ORDER BY l.${column}),
          txid = pg_current_xact_id()
      WHERE f.work_id IN (${source})`
    yield* sql.unsafe(`
      CREATE OR REPLACE FUNCTION work_facets_follow_${table}() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        IF TG_OP = 'INSERT' THEN
          ${refresh("SELECT work_id FROM new_rows")};
        ELSIF TG_OP = 'DELETE' THEN
          ${refresh("SELECT work_id FROM old_rows")};
        ELSE
          ${refresh("SELECT work_id FROM new_rows UNION SELECT work_id FROM old_rows")};
        END IF;
        RETURN NULL;
      END
      $$`)
  }
})
