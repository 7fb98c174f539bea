/**
 * The title search ranks without leaving `work_search` (search p99, bench/README.md): a `q=` search orders
 * matches by relevance tier, then popularity and id, under the content gate. Reading popularity,
 * `live` and `nsfw` from `works` cost one index probe per match (134,000 for "the " on a million
 * works, two thirds of the query), so `work_search` now carries copies of them, kept by triggers:
 *
 * - a row inserted into `work_search` (the seed, any writer) takes them from its work;
 * - a write to a work's popularity, nsfw flag, merge or withdrawal copies them to its row.
 *
 * The table is rebuilt rather than updated in place: an in-place update of every row would also
 * rewrite every entry of the trigram index.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE work_search_ranked (
      work_id bigint PRIMARY KEY REFERENCES works (id) ON DELETE CASCADE,
      norm text NOT NULL,
      key text NOT NULL,
      popularity real NOT NULL DEFAULT 0,
      live boolean NOT NULL DEFAULT true,
      nsfw boolean NOT NULL DEFAULT false
    )`
  yield* sql`
    INSERT INTO work_search_ranked (work_id, norm, key, popularity, live, nsfw)
    SELECT s.work_id, s.norm, s.key, w.popularity, w.live, w.nsfw
    FROM work_search s JOIN works w ON w.id = s.work_id`
  yield* sql`DROP TABLE work_search`
  yield* sql`ALTER TABLE work_search_ranked RENAME TO work_search`
  yield* sql`ALTER INDEX work_search_ranked_pkey RENAME TO work_search_pkey`
  yield* sql`ALTER TABLE work_search RENAME CONSTRAINT work_search_ranked_work_id_fkey TO work_search_work_id_fkey`
  yield* sql`CREATE INDEX work_search_key ON work_search USING gin (key gin_trgm_ops)`

  yield* sql`
    CREATE FUNCTION work_search_from_work() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      SELECT w.popularity, w.live, w.nsfw INTO NEW.popularity, NEW.live, NEW.nsfw FROM works w WHERE w.id = NEW.work_id;
      RETURN NEW;
    END
    $$`
  yield* sql`
    CREATE TRIGGER work_search_from_work BEFORE INSERT OR UPDATE OF work_id ON work_search
      FOR EACH ROW EXECUTE FUNCTION work_search_from_work()`
  yield* sql`
    CREATE FUNCTION work_search_follow_work() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      UPDATE work_search SET popularity = NEW.popularity, live = NEW.live, nsfw = NEW.nsfw WHERE work_id = NEW.id;
      RETURN NULL;
    END
    $$`
  yield* sql`
    CREATE TRIGGER work_search_follow_work AFTER UPDATE OF popularity, nsfw, merged_into, withdrawn ON works
      FOR EACH ROW
      WHEN (OLD.popularity IS DISTINCT FROM NEW.popularity OR OLD.live IS DISTINCT FROM NEW.live
        OR OLD.nsfw IS DISTINCT FROM NEW.nsfw)
      EXECUTE FUNCTION work_search_follow_work()`
})
