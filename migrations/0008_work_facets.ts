/**
 * Facets of a title search without probing `works`, `work_tags` and `work_companies` per match (the
 * search + facets p99 target in bench/README.md): counting the six facets of a `q=` search that matches
 * 50,000 titles probed `works` and `work_tags` 50,000 times each and scanned all of `work_companies`.
 *
 * `work_facets` holds, per work, what the facets count: `olang`, `media`, `platforms`, and the
 * work's tag and company ids (ascending). It is a table of its own rather than more columns of
 * `work_search`: a search reads most pages of `work_search` for a common word, and wider rows made
 * every search slower. Kept by triggers:
 *
 * - a work inserted gets its row; a write to its `olang`, `media` or `platforms` is copied;
 * - statement triggers on `work_tags` and `work_companies` refresh the ids of the works a statement
 *   touched, once per statement (a tag or company merge moving thousands of links refreshes each
 *   affected work once).
 *
 * The seed writes the rows itself with these triggers off.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE work_facets (
      work_id bigint PRIMARY KEY REFERENCES works (id) ON DELETE CASCADE,
      olang text,
      media text[] NOT NULL DEFAULT '{}',
      platforms text[] NOT NULL DEFAULT '{}',
      tag_ids bigint[] NOT NULL DEFAULT '{}',
      company_ids bigint[] NOT NULL DEFAULT '{}'
    )`
  yield* sql`
    INSERT INTO work_facets (work_id, olang, media, platforms, tag_ids, company_ids)
    SELECT w.id, w.olang, w.media, w.platforms, coalesce(t.ids, '{}'), coalesce(c.ids, '{}')
    FROM works w
    LEFT JOIN (SELECT work_id, array_agg(tag_id ORDER BY tag_id) AS ids FROM work_tags GROUP BY work_id) t
      ON t.work_id = w.id
    LEFT JOIN (SELECT work_id, array_agg(company_id ORDER BY company_id) AS ids FROM work_companies GROUP BY work_id) c
      ON c.work_id = w.id`

  yield* sql`
    CREATE FUNCTION work_facets_follow_work() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      INSERT INTO work_facets (work_id, olang, media, platforms, tag_ids, company_ids)
      VALUES (NEW.id, NEW.olang, NEW.media, NEW.platforms,
              ARRAY(SELECT t.tag_id FROM work_tags t WHERE t.work_id = NEW.id ORDER BY t.tag_id),
              ARRAY(SELECT c.company_id FROM work_companies c WHERE c.work_id = NEW.id ORDER BY c.company_id))
      ON CONFLICT (work_id) DO UPDATE
      SET olang = EXCLUDED.olang, media = EXCLUDED.media, platforms = EXCLUDED.platforms;
      RETURN NULL;
    END
    $$`
  yield* sql`
    CREATE TRIGGER work_facets_follow_work AFTER INSERT OR UPDATE OF olang, media, platforms ON works
      FOR EACH ROW EXECUTE FUNCTION work_facets_follow_work()`

  // One function per link table; a trigger with transition tables has one event, hence three each.
  for (
    const [table, column, target] of [
      ["work_tags", "tag_id", "tag_ids"],
      ["work_companies", "company_id", "company_ids"]
    ] as const
  ) {
    const fn = `work_facets_follow_${table}`
    const refresh = (source: string) => `
      UPDATE work_facets f
      SET ${target} = ARRAY(SELECT l.${column} FROM ${table} l WHERE l.work_id = f.work_id ORDER BY l.${column})
      WHERE f.work_id IN (${source})`
    yield* sql.unsafe(`
      CREATE FUNCTION ${fn}() RETURNS trigger LANGUAGE plpgsql AS $$
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
    yield* sql.unsafe(`
      CREATE TRIGGER ${fn}_insert AFTER INSERT ON ${table} REFERENCING NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`)
    yield* sql.unsafe(`
      CREATE TRIGGER ${fn}_update AFTER UPDATE ON ${table} REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
        FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`)
    yield* sql.unsafe(`
      CREATE TRIGGER ${fn}_delete AFTER DELETE ON ${table} REFERENCING OLD TABLE AS old_rows
        FOR EACH STATEMENT EXECUTE FUNCTION ${fn}()`)
  }
})
