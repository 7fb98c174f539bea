/**
 * Cover votes (docs/writing.md, "Cover votes"): one `up` vote per user and cover. `covers.vote_count`
 * (0002) is kept by the vote writer in the vote's own transaction, one up or down per row it inserts
 * or deletes, so it also keeps the votes the catalog was seeded or imported with. A cover that goes
 * takes its votes with it.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE cover_votes (
      cover_id bigint NOT NULL REFERENCES covers (id) ON DELETE CASCADE,
      uid text NOT NULL CHECK (length(uid) BETWEEN 1 AND 64),
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (cover_id, uid)
    )`
  // A user's votes (the bearer's votes on a work's covers).
  yield* sql`CREATE INDEX cover_votes_uid ON cover_votes (uid, cover_id)`
})
