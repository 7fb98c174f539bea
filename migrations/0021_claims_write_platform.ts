/**
 * Claims, their event log, and the catalog's write platform (docs/writing.md).
 *
 * Claims. A work holds at most one claim at a time: `claims` has one row per work that was ever
 * claimed, in state `none` once released. `hidden_from` remembers the state a ban hid, so an unban
 * can restore it. `minted` marks a work created by its claim: such a work is withdrawn (invisible to
 * every read and absent from the change feed) unless its claim is `live`. `last_event_id` is the
 * claim's version: its strong ETag is derived from it.
 *
 * The event log never skips. A mirror stores the highest event id it has seen and asks for ids above
 * it, so ids must become visible in ascending order. Every writer allocates its event id from
 * `claim_event_seq` only after taking one transaction-scoped advisory lock (`claim_event_lock()`),
 * and holds it until its commit is visible: ids are handed out in commit order, and a reader that
 * sees id n sees every id below n that will ever exist. Writers take the lock as their last step
 * before the idempotency record and COMMIT, so claim writers are serialized only for that window.
 * A statement trigger NOTIFYs `catalog_changed` like every catalog write (migrations/0005), so the
 * read caches of every process forget what a claim write changed.
 *
 * Idempotency. One row per (scope, key): the credential's scope (an API key, or a client and user
 * for access tokens), the key the client sent, a fingerprint of the request, and the stored answer.
 * The row is written in the same transaction as the write it answers. Rows older than a day are
 * ignored and removed by the sweep.
 *
 * Quotas. One row per (site, kind, UTC day), incremented in the write's own transaction, so a write
 * that rolls back uses no quota.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

const states = "'none', 'live', 'draft', 'pending', 'declined', 'hidden'"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql.unsafe(`
    CREATE TABLE claims (
      work_id bigint PRIMARY KEY REFERENCES works (id),
      state text NOT NULL CHECK (state IN (${states})),
      site text NOT NULL DEFAULT '' CHECK (site = '' OR (site ~ '^[a-z][a-z0-9_]*$' AND length(site) <= 64)),
      site_work_id text CHECK (site_work_id ~ '^[0-9]{1,20}$'),
      owner_uid text CHECK (length(owner_uid) <= 64),
      hidden_from text CHECK (hidden_from IN (${states})),
      minted boolean NOT NULL DEFAULT false,
      last_event_id bigint NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK ((state = 'none') = (site = '')),
      CHECK ((state = 'hidden') = (hidden_from IS NOT NULL))
    )`)
  yield* sql`CREATE INDEX claims_live_site ON claims (site, work_id) WHERE state = 'live'`
  yield* sql`CREATE INDEX claims_live_owner ON claims (owner_uid, work_id) WHERE state = 'live'`
  yield* sql`CREATE INDEX claims_queue ON claims (state, last_event_id)`

  yield* sql`CREATE SEQUENCE claim_event_seq`
  yield* sql.unsafe(`
    CREATE TABLE claim_events (
      id bigint PRIMARY KEY,
      work_id bigint NOT NULL REFERENCES works (id),
      from_state text CHECK (from_state IN (${states})),
      to_state text NOT NULL CHECK (to_state IN (${states})),
      decision text CHECK (decision IN ('approve', 'decline', 'ban', 'unban')),
      reason text CHECK (length(reason) <= 2000),
      actor_uid text NOT NULL CHECK (length(actor_uid) BETWEEN 1 AND 64),
      site text NOT NULL CHECK (length(site) <= 64),
      created_at timestamptz NOT NULL DEFAULT now()
    )`)
  yield* sql`CREATE INDEX claim_events_work ON claim_events (work_id, id)`
  yield* sql`CREATE INDEX claim_events_actor ON claim_events (actor_uid, work_id)`

  yield* sql`
    CREATE FUNCTION claim_event_lock() RETURNS void LANGUAGE sql AS $$
      SELECT pg_advisory_xact_lock(hashtext('shiori.claims.events'))
    $$`

  for (const table of ["claims", "claim_events"]) {
    yield* sql`
      CREATE TRIGGER ${sql(`${table}_notify`)} AFTER INSERT OR UPDATE OR DELETE ON ${sql(table)}
        FOR EACH STATEMENT EXECUTE FUNCTION catalog_notify_change()`
    yield* sql`
      CREATE TRIGGER ${sql(`${table}_notify_truncate`)} AFTER TRUNCATE ON ${sql(table)}
        FOR EACH STATEMENT EXECUTE FUNCTION catalog_notify_change()`
  }

  yield* sql`
    CREATE TABLE catalog_idempotency (
      scope text NOT NULL CHECK (length(scope) <= 200),
      key text NOT NULL CHECK (length(key) BETWEEN 1 AND 255),
      fingerprint bytea NOT NULL,
      status smallint NOT NULL,
      headers jsonb NOT NULL DEFAULT '{}',
      body text NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (scope, key)
    )`
  yield* sql`CREATE INDEX catalog_idempotency_created ON catalog_idempotency (created_at)`

  yield* sql`
    CREATE TABLE catalog_quota_usage (
      site text NOT NULL,
      kind text NOT NULL,
      day date NOT NULL,
      used integer NOT NULL CHECK (used >= 0),
      PRIMARY KEY (site, kind, day)
    )`
})
