/**
 * Edit proposals, their amendments and the revisions a merge records (docs/writing.md, "Edit
 * proposals").
 *
 * - `proposals`: one row per proposal. `patch` is the field-key -> value map as first sent, `effective`
 *   the patch with every amendment applied (kept by the amendments' writer); `version`
 *   counts the changes of the row (an amendment, a withdrawal, a decision), so the proposal's strong
 *   ETag is (id, version). `site` is the proposer's site: the tenant of every change to it.
 * - `proposal_amendments`: each amendment's `set` and `unset`, numbered by `seq` from 1 per proposal
 *   (the proposal row is locked while one is appended, so the numbers have no gaps).
 * - `revisions` (0002) gains the proposer and the moderator of the merge; `author_uid` was never
 *   written. A revision keeps the entity id it was recorded against: reads of a surviving entity
 *   gather the revisions of the ids merged into it through `catalog_redirects`.
 * - Roster and credit rows gain `suppressed`: a merged `catalog.work.roster_suppressed` /
 *   `credits_suppressed` hides the rows from every read without losing them (an unsuppress brings
 *   them back with the same opaque identity).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE proposals (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      entity_type text NOT NULL CHECK (entity_type ~ '^[a-z0-9_]+(\\.[a-z0-9_]+)+$' AND length(entity_type) <= 64),
      entity_id bigint NOT NULL,
      site text NOT NULL CHECK (length(site) BETWEEN 1 AND 64),
      proposer_uid text NOT NULL CHECK (length(proposer_uid) BETWEEN 1 AND 64),
      patch jsonb NOT NULL CHECK (jsonb_typeof(patch) = 'object'),
      effective jsonb NOT NULL CHECK (jsonb_typeof(effective) = 'object'),
      note text NOT NULL DEFAULT '' CHECK (length(note) <= 2000),
      state text NOT NULL DEFAULT 'open' CHECK (state IN ('open', 'merged', 'declined', 'withdrawn')),
      version integer NOT NULL DEFAULT 1 CHECK (version >= 1),
      amendment_count integer NOT NULL DEFAULT 0 CHECK (amendment_count >= 0),
      decided_by text CHECK (length(decided_by) <= 64),
      decision_note text CHECK (length(decision_note) <= 2000),
      revision_id bigint,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      closed_at timestamptz
    )`
  // The site's own list (newest first) and the moderation queue (oldest open first).
  yield* sql`CREATE INDEX proposals_site ON proposals (site, id)`
  yield* sql`CREATE INDEX proposals_open ON proposals (id) WHERE state = 'open'`
  yield* sql`CREATE INDEX proposals_entity ON proposals (entity_type, entity_id)`

  yield* sql`
    CREATE TABLE proposal_amendments (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      proposal_id bigint NOT NULL REFERENCES proposals (id),
      seq integer NOT NULL CHECK (seq >= 1),
      amender_uid text NOT NULL CHECK (length(amender_uid) BETWEEN 1 AND 64),
      set jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(set) = 'object'),
      unset text[] NOT NULL DEFAULT '{}' CHECK (cardinality(unset) <= 100),
      note text NOT NULL DEFAULT '' CHECK (length(note) <= 2000),
      created_at timestamptz NOT NULL DEFAULT now(),
      UNIQUE (proposal_id, seq)
    )`

  yield* sql`ALTER TABLE revisions DROP COLUMN author_uid`
  yield* sql`ALTER TABLE revisions ADD COLUMN proposer_uid text CHECK (length(proposer_uid) <= 64)`
  yield* sql`ALTER TABLE revisions ADD COLUMN moderator_uid text CHECK (length(moderator_uid) <= 64)`
  // An entity's revisions, newest first.
  yield* sql`CREATE INDEX revisions_entity ON revisions (entity_type, entity_id, id DESC)`

  yield* sql`ALTER TABLE work_characters ADD COLUMN suppressed boolean NOT NULL DEFAULT false`
  yield* sql`ALTER TABLE credits ADD COLUMN suppressed boolean NOT NULL DEFAULT false`
})
