/**
 * Catalog change notifications (docs/life-of-a-request.md, "Caches and invalidation"): every catalog
 * write upserts `catalog_changes` (or `catalog_redirects` for a merge) in its own transaction (0002's
 * header), so one statement-level trigger on those two tables tells every API process, at commit, that
 * the catalog changed: `NOTIFY catalog_changed` (the payload names the table; listeners ignore empty
 * payloads). Each process empties its read cache when it hears it (src/catalog/shared/ReadCache.ts).
 * PostgreSQL folds identical notifications of one transaction into one and delivers them only after
 * commit, so a reader never hears of a write it cannot yet see. TRUNCATE notifies too (operators and
 * tests reset tables that way).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE FUNCTION catalog_notify_change() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('catalog_changed', TG_TABLE_NAME);
      RETURN NULL;
    END
    $$`
  for (const table of ["catalog_changes", "catalog_redirects"]) {
    yield* sql`
      CREATE TRIGGER ${sql(`${table}_notify`)} AFTER INSERT OR UPDATE OR DELETE ON ${sql(table)}
        FOR EACH STATEMENT EXECUTE FUNCTION catalog_notify_change()`
    yield* sql`
      CREATE TRIGGER ${sql(`${table}_notify_truncate`)} AFTER TRUNCATE ON ${sql(table)}
        FOR EACH STATEMENT EXECUTE FUNCTION catalog_notify_change()`
  }
})
