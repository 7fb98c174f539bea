/**
 * Avatars (src/identity/account/Avatars.ts): the re-encoded image bytes, named by their SHA-256
 * (src/platform/Images.ts), so the same picture is stored once and its URL never changes meaning
 * (`GET /api/v1/avatars/{sha256}.webp`, cached as immutable). `users.picture` holds that URL and
 * `users.avatar_sha256` the stored avatar it names; an avatar no user points at any more is removed
 * by the cleanup job (src/identity/cleanup/Cleanup.ts) after a day.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE avatars (
      sha256 text PRIMARY KEY CHECK (sha256 ~ '^[0-9a-f]{64}$'),
      content_type text NOT NULL CHECK (content_type = 'image/webp'),
      bytes bytea NOT NULL CHECK (octet_length(bytes) <= 1048576),
      width integer NOT NULL,
      height integer NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now()
    )
  `
  yield* sql`ALTER TABLE users ADD COLUMN avatar_sha256 text REFERENCES avatars (sha256) ON DELETE SET NULL`
  yield* sql`CREATE INDEX users_avatar_sha256_idx ON users (avatar_sha256) WHERE avatar_sha256 IS NOT NULL`
})
