/**
 * Identity provider: sign-in throttling without lockout, and the indexes of the cleanup job.
 *
 * - `rate_limit_admit(...)`: one sign-in attempt against two rows of `rate_limit_buckets`, the
 *   token bucket of its (account, address) and the backoff of its account (src/identity/auth/Login.ts,
 *   src/identity/ratelimit/RateLimiter.ts). A backoff row keeps in `tokens` the attempts it counts and
 *   in `updated_at` when it last counted one; its next attempt waits `2^(count - free - 1)` seconds
 *   (at most `p_max_delay`) once the count passes `p_free`, and the count decays at `p_decay` per
 *   second. Both rows are locked, the backoff first (every caller with this backoff takes the same
 *   order); the attempt takes a token and is counted only when neither refuses.
 * - Indexes for the cleanup job (src/identity/cleanup/Cleanup.ts): sessions and refresh families by
 *   the moment they died (`least` skips NULL, so one expression covers ended or expired and revoked
 *   or expired), rotated refresh tokens by their rotation.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE FUNCTION rate_limit_admit(
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

  yield* sql`CREATE INDEX sessions_dead_at_idx ON sessions (least(ended_at, expires_at))`
  yield* sql`CREATE INDEX refresh_families_dead_at_idx ON refresh_families (least(revoked_at, expires_at))`
  yield* sql`CREATE INDEX refresh_tokens_rotated_at_idx ON refresh_tokens (rotated_at) WHERE rotated_at IS NOT NULL`
})
