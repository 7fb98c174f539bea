/**
 * Emailed codes bound to the flow that asked for them (src/identity/account/EmailCodes.ts), and
 * account recovery.
 *
 * - `pending_hash`: SHA-256 of the opaque pending value that `register/send-code` and
 *   `password/forgot/send-code` answer; only its holder can try the code, so a stranger's guesses
 *   never spend another requester's tries and a stranger's request never replaces their code. An
 *   email change stays keyed by the signed-in account (`user_id`).
 * - `purpose` gains `recovery` ("forgot password"): `user_id` is the account whose address the code
 *   went to, null when the address has none (a row is written all the same, so both answers do the
 *   same work; it can never reset anything).
 * - One live code per (account, address) for an email change; any number of pending ones per
 *   address, one per pending value. Registration codes from before this migration have no pending
 *   value and can no longer be used: they are deleted (asking again gives a new one).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`DELETE FROM email_codes WHERE purpose = 'register'`
  yield* sql`DROP INDEX email_codes_target_key`
  yield* sql`ALTER TABLE email_codes DROP CONSTRAINT email_codes_check`
  yield* sql`ALTER TABLE email_codes DROP CONSTRAINT email_codes_purpose_check`
  yield* sql`
    ALTER TABLE email_codes
      ADD COLUMN pending_hash text CHECK (pending_hash ~ '^[0-9a-f]{64}$'),
      ADD CONSTRAINT email_codes_purpose_check CHECK (purpose IN ('register', 'email_change', 'recovery')),
      ADD CONSTRAINT email_codes_flow_check CHECK (
        CASE purpose
          WHEN 'email_change' THEN user_id IS NOT NULL AND pending_hash IS NULL
          WHEN 'register' THEN user_id IS NULL AND pending_hash IS NOT NULL
          ELSE pending_hash IS NOT NULL
        END
      )
  `
  yield* sql`
    CREATE UNIQUE INDEX email_codes_email_change_key ON email_codes (user_id, email) WHERE purpose = 'email_change'
  `
  yield* sql`CREATE UNIQUE INDEX email_codes_pending_key ON email_codes (pending_hash) WHERE pending_hash IS NOT NULL`
  // Recovery codes still open for an account, ended together when one of them resets the password.
  yield* sql`CREATE INDEX email_codes_recovery_user_idx ON email_codes (user_id) WHERE purpose = 'recovery'`
})
