/**
 * Per-client allowed scopes and a verified-email flag (src/identity/shared/Scopes.ts,
 * src/identity/clients/Clients.ts, src/identity/users/Users.ts).
 *
 * - `oauth_clients.allowed_scopes`: the scopes a client may request at authorize and on refresh
 *   (RFC 6749 section 3.3: the authorization server may refuse a scope for a client). Existing
 *   clients get the default set, `DEFAULT_CLIENT_SCOPES` in src/identity/shared/Scopes.ts; the write
 *   scopes and `moderation` need an operator's `client update --scope`. A public client (no secret,
 *   RFC 6749 section 2.1) can never hold `moderation`: anyone can present its id.
 * - `users.email_verified` (OpenID Connect Core section 5.1): false unless the address was proven.
 *   When this migration ran, every account had been created by an operator (`user create`), who
 *   vouches for it, so existing rows are verified; registration and email changes (with an emailed
 *   code, migrations/0016) verify addresses since.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    ALTER TABLE oauth_clients
      ADD COLUMN allowed_scopes text[] NOT NULL
        DEFAULT ARRAY['openid', 'profile', 'email', 'offline_access', 'catalog:read']::text[],
      ADD CONSTRAINT oauth_clients_public_no_moderation
        CHECK (secret_hash IS NOT NULL OR NOT ('moderation' = ANY (allowed_scopes)))
  `

  yield* sql`ALTER TABLE users ADD COLUMN email_verified boolean NOT NULL DEFAULT false`
  yield* sql`UPDATE users SET email_verified = true`
})
