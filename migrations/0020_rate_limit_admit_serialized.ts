/**
 * `rate_limit_admit` (migrations/0013) could deadlock. A success takes its pair's bucket row away
 * (src/identity/ratelimit/RateLimiter.ts `succeeded`); two attempts of one account then both
 * re-insert it: the first, holding the backoff row, waits at its final upsert of the bucket for the
 * second, whose first insert created that row and which now waits for the backoff row. PostgreSQL
 * broke the cycle by failing one of them, a 500 at sign-in under concurrent attempts.
 *
 * Every admission now starts with a transaction-scoped advisory lock on its backoff key, so attempts
 * sharing a backoff (one account) run one after another and the row locks are only ever taken by
 * one of them; attempts of different accounts share no rows and still run side by side. `succeeded`
 * holds at most one row at a time and waits for nothing while holding it, so it cannot close a
 * cycle.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
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
      -- One attempt per backoff at a time (see the header of this file).
      PERFORM pg_advisory_xact_lock(hashtext('shiori.rate_limit_admit'), hashtext(p_backoff));
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
  `
})
