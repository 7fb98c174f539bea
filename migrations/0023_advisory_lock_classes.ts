/**
 * Every advisory lock in a key space of its own (src/platform/AdvisoryLocks.ts). The locks were
 * taken with one bigint each, hashed from a name, and the idempotency lock of the write runner with
 * a bigint hashed from the client's `Idempotency-Key`: a client could search for a key whose hash
 * equals the claim-event lock's (or the change feed's) and, holding it for the length of its own
 * request, stall every claim write. Now every use takes the two-integer form with its own class, so
 * a client's key only ever meets other keys of the idempotency class.
 *
 * The SQL functions that take a lock are redefined with their class as a literal: the change feed's
 * (`catalog_feed_publish()`, migrations/0010), the claim events' (`claim_event_lock()`,
 * migrations/0021) and sign-in admission's (`rate_limit_admit(...)`, migrations/0020, otherwise
 * unchanged). The locks taken by the application (idempotency, seed, signing keys) change with its
 * code.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { AdvisoryLockClass } from "../src/platform/AdvisoryLocks.js"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // The classes are integer constants of the code (never input), written into the function bodies.
  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION claim_event_lock() RETURNS void LANGUAGE sql AS $$
      SELECT pg_advisory_xact_lock(${AdvisoryLockClass.claimEvents}, 0)
    $$`)

  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION catalog_feed_publish() RETURNS trigger LANGUAGE plpgsql AS $$
    DECLARE
      newest timestamptz;
    BEGIN
      PERFORM pg_advisory_xact_lock(${AdvisoryLockClass.catalogFeed}, 0);
      IF TG_TABLE_NAME = 'catalog_changes' THEN
        SELECT c.updated_at INTO newest FROM catalog_changes c
        WHERE c.position IS NOT NULL ORDER BY c.position DESC LIMIT 1;
        UPDATE catalog_changes
        SET position = nextval('catalog_change_seq'), updated_at = greatest(clock_timestamp(), newest)
        WHERE target_object = NEW.target_object AND id = NEW.id AND position IS NULL;
      ELSE
        UPDATE catalog_redirects SET position = nextval('catalog_change_seq')
        WHERE target_object = NEW.target_object AND from_id = NEW.from_id AND position IS NULL;
      END IF;
      RETURN NULL;
    END
    $$`)

  yield* sql.unsafe(`
    CREATE OR REPLACE FUNCTION rate_limit_admit(
      p_bucket text, p_capacity float8, p_rate float8,
      p_backoff text, p_free float8, p_decay float8, p_max_delay float8, p_max_count float8
    )
    RETURNS TABLE (allowed boolean, retry_after float8)
    LANGUAGE plpgsql AS $$
    DECLARE
      v_count float8;
      v_since float8;
      v_available float8;
      v_delay float8;
    BEGIN
      -- One attempt per backoff at a time (migrations/0020).
      PERFORM pg_advisory_xact_lock(${AdvisoryLockClass.rateLimitAdmit}, hashtext(p_backoff));
      INSERT INTO rate_limit_buckets AS b (key, tokens, updated_at)
      VALUES (p_backoff, 0, now()), (p_bucket, p_capacity, now())
      ON CONFLICT (key) DO NOTHING;

      SELECT b.tokens, greatest(0, extract(epoch FROM now() - b.updated_at))
        INTO v_count, v_since
        FROM rate_limit_buckets b WHERE b.key = p_backoff FOR UPDATE;
      IF NOT FOUND THEN
        -- Removed since the insert (a success took its count back to nothing, or the cleanup job).
        v_count := 0;
        v_since := 0;
      END IF;
      SELECT least(p_capacity, b.tokens + greatest(0, extract(epoch FROM now() - b.updated_at)) * p_rate)
        INTO v_available
        FROM rate_limit_buckets b WHERE b.key = p_bucket FOR UPDATE;
      IF NOT FOUND THEN
        v_available := p_capacity;
      END IF;

      IF v_available < 1 THEN
        allowed := false;
        retry_after := (1 - v_available) / p_rate;
        RETURN NEXT;
        RETURN;
      END IF;
      v_delay := CASE WHEN v_count <= p_free THEN 0 ELSE least(p_max_delay, power(2, v_count - p_free - 1)) END;
      IF v_since < v_delay THEN
        allowed := false;
        retry_after := v_delay - v_since;
        RETURN NEXT;
        RETURN;
      END IF;

      INSERT INTO rate_limit_buckets AS b (key, tokens, updated_at)
      VALUES (p_backoff, least(p_max_count, greatest(0, v_count - v_since * p_decay) + 1), now())
      ON CONFLICT (key) DO UPDATE SET tokens = EXCLUDED.tokens, updated_at = EXCLUDED.updated_at;
      INSERT INTO rate_limit_buckets AS b (key, tokens, updated_at)
      VALUES (p_bucket, v_available - 1, now())
      ON CONFLICT (key) DO UPDATE SET tokens = EXCLUDED.tokens, updated_at = EXCLUDED.updated_at;
      allowed := true;
      retry_after := 0;
      RETURN NEXT;
    END
    $$
  `)
})
