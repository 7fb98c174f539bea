/**
 * Self-service accounts: emailed verification codes (src/identity/account/EmailCodes.ts).
 *
 * - `email_codes`: a 6-digit code mailed to an address, for registration (`user_id` null) or for an
 *   email change (`user_id` the account that asked). Only its keyed hash is kept (HMAC-SHA-256 with a
 *   key derived from the server secret, so a leaked table cannot be brute-forced offline over the
 *   million codes). A code lives 10 minutes and takes 5 tries; asking again replaces the older code
 *   for the same purpose, address and account. `email` is kept lower-case.
 * - `users.password_changed_at`: when the password last changed (the account page shows it).
 * - `users.totp_enabled_at`: when a second factor was confirmed, null without one (`two_factor` on
 *   `GET /auth/me`); the factor itself is kept by migrations/0018.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE email_codes (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      purpose text NOT NULL CHECK (purpose IN ('register', 'email_change')),
      email text NOT NULL CHECK (email = lower(email) AND length(email) BETWEEN 3 AND 254),
      user_id bigint REFERENCES users (id) ON DELETE CASCADE,
      code_hash text NOT NULL,
      attempts integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      consumed_at timestamptz,
      CHECK ((purpose = 'register') = (user_id IS NULL))
    )
  `
  // One live code per (purpose, address, account): asking again replaces it.
  yield* sql`
    CREATE UNIQUE INDEX email_codes_target_key ON email_codes (purpose, email, coalesce(user_id, 0))
  `
  yield* sql`CREATE INDEX email_codes_expires_at_idx ON email_codes (expires_at)`

  yield* sql`ALTER TABLE users ADD COLUMN password_changed_at timestamptz, ADD COLUMN totp_enabled_at timestamptz`
})
