/**
 * News (docs/writing.md, "News").
 *
 * - `news_sources`: a source name bound to one site by an operator (`news-source create`); only that
 *   site's credentials post under it, and only while it is `active` (`news-source disable` clears it).
 * - `news_items`: one row per posted item. `source_url` is unique: the same article twice is one
 *   item (a second post is 409, also when two race). `banner_hash` is `''` when none was given.
 * - `news_item_works`: the works an item links, in the order given (`position`), each with the
 *   link's confidence (`manual`: named by the poster).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE news_sources (
      source text PRIMARY KEY CHECK (source ~ '^[a-z][a-z0-9_]*$' AND length(source) <= 64),
      site text NOT NULL CHECK (site ~ '^[a-z][a-z0-9_]*$' AND length(site) <= 64),
      active boolean NOT NULL DEFAULT true,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )`

  yield* sql`
    CREATE TABLE news_items (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      source text NOT NULL REFERENCES news_sources (source),
      site text NOT NULL CHECK (length(site) BETWEEN 1 AND 64),
      title text NOT NULL CHECK (length(title) BETWEEN 1 AND 512),
      summary text NOT NULL CHECK (length(summary) BETWEEN 1 AND 200),
      source_url text NOT NULL UNIQUE CHECK (length(source_url) BETWEEN 1 AND 1024),
      lane text NOT NULL CHECK (lane IN ('news', 'column')),
      published_at timestamptz NOT NULL,
      banner_hash text NOT NULL DEFAULT '' CHECK (banner_hash ~ '^([0-9a-f]{64})?$'),
      created_at timestamptz NOT NULL DEFAULT now()
    )`
  // The list (newest published first), by lane and by source.
  yield* sql`CREATE INDEX news_items_published ON news_items (published_at DESC, id DESC)`
  yield* sql`CREATE INDEX news_items_lane ON news_items (lane, published_at DESC, id DESC)`
  yield* sql`CREATE INDEX news_items_source ON news_items (source, published_at DESC, id DESC)`

  yield* sql`
    CREATE TABLE news_item_works (
      news_id bigint NOT NULL REFERENCES news_items (id),
      work_id bigint NOT NULL REFERENCES works (id),
      position integer NOT NULL CHECK (position >= 0),
      confidence text NOT NULL DEFAULT 'manual' CHECK (confidence IN ('manual')),
      PRIMARY KEY (news_id, work_id)
    )`
  // A work's news.
  yield* sql`CREATE INDEX news_item_works_work ON news_item_works (work_id, news_id)`
})
