/**
 * A second factor: TOTP (RFC 6238) with recovery codes (src/identity/twofactor/TwoFactor.ts), and
 * the authentication methods (RFC 8176 `amr`) that follow a sign-in into its tokens.
 *
 * - `two_factor_totp`: one row per user. `secret` is the confirmed TOTP key, `pending_secret` one
 *   being set up (shown to the user, not yet confirmed with a first code); both are AES-256-GCM
 *   envelopes `{v, alg, iv, tag, ct}` under a key derived from the server secret with the user id
 *   authenticated alongside (src/identity/keys/SigningKeyCipher.ts `gcmSeal`), so a dump alone
 *   yields no key and a ciphertext copied to another user does not open. `last_step` is the last
 *   accepted time step: a code is accepted at most once, and never one of an earlier step (RFC 6238
 *   section 5.2). `users.totp_enabled_at` (migrations/0016) is set and cleared together with
 *   `secret`.
 * - `two_factor_recovery_codes`: ten single-use codes per user, only their SHA-256 kept (80 random
 *   bits each, like the other high-entropy secrets of migrations/0003).
 * - `amr` on the session, the authorization code and the refresh family it produced, so an
 *   id_token says how its sign-in was made (OpenID Connect Core 1.0 section 2): `pwd`, or `pwd` and
 *   `otp`. Rows from before this migration were password sign-ins.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  const envelope = (column: string) =>
    sql.literal(
      `${column} IS NULL OR (jsonb_typeof(${column}) = 'object' AND ${column} ?& ARRAY['v', 'alg', 'iv', 'tag', 'ct'])`
    )

  yield* sql`
    CREATE TABLE two_factor_totp (
      user_id bigint PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
      secret jsonb CHECK (${envelope("secret")}),
      pending_secret jsonb CHECK (${envelope("pending_secret")}),
      pending_expires_at timestamptz,
      last_step bigint,
      confirmed_at timestamptz,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      CHECK (secret IS NOT NULL OR pending_secret IS NOT NULL),
      CHECK ((secret IS NULL) = (confirmed_at IS NULL)),
      CHECK ((pending_secret IS NULL) = (pending_expires_at IS NULL))
    )
  `

  yield* sql`
    CREATE TABLE two_factor_recovery_codes (
      user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      code_hash text NOT NULL CHECK (code_hash ~ '^[0-9a-f]{64}$'),
      created_at timestamptz NOT NULL DEFAULT now(),
      used_at timestamptz,
      PRIMARY KEY (user_id, code_hash)
    )
  `

  const amr = sql.literal(
    `text[] NOT NULL DEFAULT '{pwd}' CHECK (cardinality(amr) >= 1 AND amr <@ ARRAY['pwd', 'otp'])`
  )
  yield* sql`ALTER TABLE sessions ADD COLUMN amr ${amr}`
  yield* sql`ALTER TABLE authorization_codes ADD COLUMN amr ${amr}`
  yield* sql`ALTER TABLE refresh_families ADD COLUMN amr ${amr}`
})
