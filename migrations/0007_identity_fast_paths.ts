/**
 * Identity provider, fewer round trips per token request (the throughput target in bench/README.md):
 *
 * - `authorization_codes.replayed_at`: redeeming a code is two autocommit statements (consume,
 *   then create the refresh family) instead of a transaction around both. A replay marks the code
 *   here before revoking what it produced; the family insert locks the code row and inserts only
 *   while the mark is absent, so a replay that slips between the two statements still wins
 *   (docs/decisions.md, "Identity: tokens and sessions").
 * - `rate_limit_take(key, capacity, rate, want)`: takes up to `want` tokens from a shared bucket in
 *   one call, so a process can lease a few tokens of the token endpoint's bucket at once
 *   (docs/api-contract.md, "Rate limits and body limits"). It answers how many were granted and what
 *   is left.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`ALTER TABLE authorization_codes ADD COLUMN replayed_at timestamptz`

  yield* sql`
    CREATE FUNCTION rate_limit_take(p_key text, p_capacity float8, p_rate float8, p_want integer)
    RETURNS TABLE (granted integer, tokens float8)
    LANGUAGE plpgsql AS $$
    DECLARE
      available float8;
    BEGIN
      SELECT least(p_capacity, b.tokens + greatest(0, extract(epoch FROM now() - b.updated_at)) * p_rate)
        INTO available
        FROM rate_limit_buckets b WHERE b.key = p_key FOR UPDATE;
      IF NOT FOUND THEN
        -- A concurrent first call may insert the same key: then take from the row it made.
        INSERT INTO rate_limit_buckets AS b (key, tokens, updated_at) VALUES (p_key, p_capacity, now())
        ON CONFLICT (key) DO NOTHING;
        SELECT least(p_capacity, b.tokens + greatest(0, extract(epoch FROM now() - b.updated_at)) * p_rate)
          INTO available
          FROM rate_limit_buckets b WHERE b.key = p_key FOR UPDATE;
      END IF;
      granted := least(greatest(p_want, 0), floor(available))::integer;
      IF granted > 0 THEN
        UPDATE rate_limit_buckets b SET tokens = available - granted, updated_at = now() WHERE b.key = p_key;
      END IF;
      tokens := available - granted;
      RETURN NEXT;
    END
    $$
  `
})
