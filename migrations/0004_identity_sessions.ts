/**
 * Identity provider, second step: a public session id for tokens, and per-client catalog
 * settings.
 *
 * - `sessions.sid`: access tokens minted by the provider's own sign-in carry the session in a `sid`
 *   claim, so ending the session (logout, ban) kills them at userinfo and the catalog. The primary
 *   key stays the SHA-256 of the cookie, which never leaves the server.
 * - `oauth_clients.content_limit`: the catalog content gate (docs/api-contract.md, "Credentials, scopes
 *   and the content limit") for user tokens issued to the client, carried in the access token like an API
 *   key's content limit.
 * - `oauth_clients.site` follows the catalog's site-name rule so a token's `site` matches API keys.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`ALTER TABLE sessions ADD COLUMN sid uuid NOT NULL DEFAULT gen_random_uuid()`
  yield* sql`CREATE UNIQUE INDEX sessions_sid_key ON sessions (sid)`

  yield* sql`
    ALTER TABLE oauth_clients
      ADD COLUMN content_limit text NOT NULL DEFAULT 'sfw' CHECK (content_limit IN ('sfw', 'nsfw')),
      ADD CONSTRAINT oauth_clients_site_check CHECK (site IS NULL OR (site ~ '^[a-z][a-z0-9_]*$' AND length(site) <= 64))
  `
})
