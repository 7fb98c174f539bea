/**
 * The identity provider's outgoing mail (src/identity/mail/Mailer.ts, src/identity/mail/MailDelivery.ts).
 *
 * - `mail_outbox` (created by migrations/0003_identity.ts): one row per message. `Mailer.send`
 *   inserts it in the caller's transaction, so a message exists exactly when what it announces was
 *   committed, and no request waits on SMTP. The
 *   delivery worker claims due rows (`next_attempt_at <= now()`, neither sent nor failed) with `FOR
 *   UPDATE SKIP LOCKED`, pushing `next_attempt_at` past the attempt's longest duration so no other
 *   process claims the row meanwhile; then it sets `sent_at`, or on failure a `next_attempt_at` that
 *   backs off exponentially with `attempts`, or `failed_at` once SMTP refused the message for good.
 * - A statement trigger NOTIFYs `mail_outbox` at commit, so idle workers wake as soon as a message can
 *   be claimed (a notification of an aborted transaction is never sent).
 * - Indexes: due rows for the worker, recipients in insertion order for the development mailbox
 *   (replacing 0003's by creation time, which ties within a transaction), and the moment a row was
 *   done with for the cleanup job (src/identity/cleanup/Cleanup.ts). The subject bound is RFC 5322
 *   section 2.1.1's line length.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    ALTER TABLE mail_outbox
      ADD COLUMN attempts integer NOT NULL DEFAULT 0,
      ADD COLUMN next_attempt_at timestamptz NOT NULL DEFAULT now(),
      ADD COLUMN last_error text,
      ADD COLUMN failed_at timestamptz,
      ADD CONSTRAINT mail_outbox_to_address_length CHECK (length(to_address) BETWEEN 3 AND 254),
      ADD CONSTRAINT mail_outbox_subject_length CHECK (length(subject) <= 998)
  `
  yield* sql`
    CREATE INDEX mail_outbox_due_idx ON mail_outbox (next_attempt_at)
    WHERE sent_at IS NULL AND failed_at IS NULL
  `
  yield* sql`DROP INDEX mail_outbox_to_address_idx`
  yield* sql`CREATE INDEX mail_outbox_recipient_idx ON mail_outbox (lower(to_address), id)`
  yield* sql`
    CREATE INDEX mail_outbox_done_at_idx ON mail_outbox (coalesce(sent_at, failed_at))
    WHERE sent_at IS NOT NULL OR failed_at IS NOT NULL
  `
  yield* sql`
    CREATE FUNCTION mail_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
      PERFORM pg_notify('mail_outbox', '');
      RETURN NULL;
    END
    $$
  `
  yield* sql`
    CREATE TRIGGER mail_outbox_notify AFTER INSERT ON mail_outbox
    FOR EACH STATEMENT EXECUTE FUNCTION mail_outbox_notify()
  `
})
