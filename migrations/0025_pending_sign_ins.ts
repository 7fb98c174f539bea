/**
 * Sign-ins between their password step and their code step on the sign-in page
 * (src/identity/twofactor/PendingSignIn.ts), so each is used once.
 *
 * - `nonce`: 128 random bits, carried in the page's signed `uid.exp.nonce.mac` value. It alone
 *   proves nothing: the value also needs the MAC (keyed from the server secret) and the browser's
 *   CSRF cookie, so it is kept as it is.
 * - `password_digest`: SHA-256 of `users.password_hash` when the password step passed. The code
 *   step and its consumption compare it with the account's hash as it is then, so a password change
 *   (by any path) cancels the half-done sign-ins begun with the old password.
 * - A row is deleted when its code step succeeds (in the transaction that spends the code), when
 *   the account's password is right again (a newer sign-in), when the second factor changes, and
 *   by the cleanup job (src/identity/cleanup/Cleanup.ts) a day after it expired.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE pending_sign_ins (
      nonce text PRIMARY KEY CHECK (nonce ~ '^[A-Za-z0-9_-]{22}$'),
      user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      password_digest bytea NOT NULL CHECK (octet_length(password_digest) = 32),
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL
    )
  `
  yield* sql`CREATE INDEX pending_sign_ins_user_id_idx ON pending_sign_ins (user_id)`
  yield* sql`CREATE INDEX pending_sign_ins_expires_at_idx ON pending_sign_ins (expires_at)`
})
