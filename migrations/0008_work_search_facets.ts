/**
 * Facets of a title search without leaving `work_search` (issue 3, search + facets p99): counting
 * the six facets of a `q=` search probed `works` once per match and `work_tags` once per match, and
 * scanned all of `work_companies` (half a second for a word matching 50,000 titles on a million
 * works). `work_search` now also carries the facet columns of its work, kept by triggers:
 *
 * - `olang`, `media`, `platforms`: copied from the work on insert and when they change;
 * - `tag_ids`, `company_ids`: the work's tags and companies, ascending, refreshed by statement
 *   triggers on `work_tags` and `work_companies` (one refresh per statement, so a tag or company
 *   merge that moves thousands of rows refreshes each affected work once).
 *
 * The table is rebuilt rather than updated in place (see 0006).
 */
import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE work_search_faceted (
      work_id bigint PRIMARY KEY REFERENCES works (id) ON DELETE CASCADE,
      norm text NOT NULL,
      key text NOT NULL,
      popularity real NOT NULL DEFAULT 0,
      live boolean NOT NULL DEFAULT true,
      nsfw boolean NOT NULL DEFAULT false,
      olang text,
      media text[] NOT NULL DEFAULT '{}',
      platforms text[] NOT NULL DEFAULT '{}',
      tag_ids bigint[] NOT NULL DEFAULT '{}',
      company_ids bigint[] NOT NULL DEFAULT '{}'
    )`
  yield* sql`
    INSERT INTO work_search_faceted
      (work_id, norm, key, popularity, live, nsfw, olang, media, platforms, tag_ids, company_ids)
    SELECT s.work_id, s.norm, s.key, s.popularity, s.live, s.nsfw, w.olang, w.media, w.platforms,
           coalesce(t.ids, '{}'), coalesce(c.ids, '{}')
    FROM work_search s
    JOIN works w ON w.id = s.work_id
    LEFT JOIN (SELECT work_id, array_agg(tag_id ORDER BY tag_id) AS ids FROM work_tags GROUP BY work_id) t
      ON t.work_id = s.work_id
    LEFT JOIN (SELECT work_id, array_agg(company_id ORDER BY company_id) AS ids FROM work_companies GROUP BY work_id) c
      ON c.work_id = s.work_id`
  // The triggers of 0006 belong to the old table and go with it.
  yield* sql`DROP TABLE work_search`
  yield* sql`ALTER TABLE work_search_faceted RENAME TO work_search`
  yield* sql`ALTER INDEX work_search_faceted_pkey RENAME TO work_search_pkey`
  yield* sql`ALTER TABLE work_search RENAME CONSTRAINT work_search_faceted_work_id_fkey TO work_search_work_id_fkey`
  yield* sql`CREATE INDEX work_search_key ON work_search USING gin (key gin_trgm_ops)`

  yield* sql`
    CREATE OR REPLACE FUNCTION work_search_from_work() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      SELECT w.popularity, w.live, w.nsfw, w.olang, w.media, w.platforms
        INTO NEW.popularity, NEW.live, NEW.nsfw, NEW.olang, NEW.media, NEW.platforms
        FROM works w WHERE w.id = NEW.work_id;
      NEW.tag_ids := ARRAY(SELECT t.tag_id FROM work_tags t WHERE t.work_id = NEW.work_id ORDER BY t.tag_id);
      NEW.company_ids := ARRAY(SELECT c.company_id FROM work_companies c WHERE c.work_id = NEW.work_id
                               ORDER BY c.company_id);
      RETURN NEW;
    END
    $$`
  yield* sql`
    CREATE TRIGGER work_search_from_work BEFORE INSERT OR UPDATE OF work_id ON work_search
      FOR EACH ROW EXECUTE FUNCTION work_search_from_work()`

  yield* sql`
    CREATE OR REPLACE FUNCTION work_search_follow_work() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE work_search
      SET popularity = NEW.popularity, live = NEW.live, nsfw = NEW.nsfw, olang = NEW.olang, media = NEW.media,
          platforms = NEW.platforms
      WHERE work_id = NEW.id;
      RETURN NULL;
    END
    $$`
  yield* sql`DROP TRIGGER work_search_follow_work ON works`
  yield* sql`
    CREATE TRIGGER work_search_follow_work
      AFTER UPDATE OF popularity, nsfw, merged_into, withdrawn, olang, media, platforms ON works
      FOR EACH ROW
      WHEN (OLD.popularity IS DISTINCT FROM NEW.popularity OR OLD.live IS DISTINCT FROM NEW.live
        OR OLD.nsfw IS DISTINCT FROM NEW.nsfw OR OLD.olang IS DISTINCT FROM NEW.olang
        OR OLD.media IS DISTINCT FROM NEW.media OR OLD.platforms IS DISTINCT FROM NEW.platforms)
      EXECUTE FUNCTION work_search_follow_work()`

  // One function per link table; a trigger with transition tables has one event, hence three each.
  for (
    const [table, column, target] of [["work_tags", "tag_id", "tag_ids"], [
      "work_companies",
      "company_id",
      "company_ids"
    ]] as const
  ) {
    const fn = `work_search_follow_${table}`
    const refresh = (source: string) => `
      UPDATE work_search s
      SET ${target} = ARRAY(SELECT l.${column} FROM ${table} l WHERE l.work_id = s.work_id ORDER BY l.${column})
      WHERE s.work_id IN (${source})`
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
