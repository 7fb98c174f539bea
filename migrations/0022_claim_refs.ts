/**
 * The refs of a minted draft (docs/writing.md, "Claims").
 *
 * An upstream ref (`entity_refs`, one work per source and external id) belongs to a served work only.
 * A draft minted with `refs` used to insert them into `entity_refs` at once, so an invisible draft
 * reserved the ref: a second site claiming with it matched nothing (only served works match), minted
 * its own work and silently lost the ref. Now a minted work's refs stay with its claim in
 * `claim_refs`, which has no uniqueness across works (two sites' drafts may name one ref), until
 * the work first goes live: then they move to `entity_refs` in the same transaction, and a ref that
 * another served work holds by then refuses the go-live (409 `ALREADY_EXISTS`). A release gives
 * them up.
 *
 * Existing data: the `entity_refs` of minted works that never went live move here; those of a draft
 * that was released are dropped (its release gave them up). A minted work is one whose claim was
 * created `draft` (only minting creates that state); `live` is the works' served flag.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE claim_refs (
      work_id bigint NOT NULL REFERENCES works (id),
      source text NOT NULL CHECK (length(source) BETWEEN 1 AND 64),
      external_id text NOT NULL CHECK (length(external_id) BETWEEN 1 AND 256),
      PRIMARY KEY (work_id, source, external_id)
    )`
  // A minted work (created `draft`: only minting does) that is not served and never went live.
  const unservedDraft = sql`
    NOT w.live
    AND EXISTS (SELECT 1 FROM claim_events e WHERE e.work_id = w.id AND e.from_state IS NULL AND e.to_state = 'draft')
    AND NOT EXISTS (SELECT 1 FROM claim_events e WHERE e.work_id = w.id AND e.to_state = 'live')`
  yield* sql`
    INSERT INTO claim_refs (work_id, source, external_id)
    SELECT r.entity_id, r.source, r.external_id
    FROM entity_refs r JOIN works w ON w.id = r.entity_id JOIN claims c ON c.work_id = w.id AND c.state <> 'none'
    WHERE r.entity_type = 'work' AND ${unservedDraft}`
  yield* sql`
    DELETE FROM entity_refs r USING works w
    WHERE r.entity_type = 'work' AND w.id = r.entity_id AND ${unservedDraft}`
})
