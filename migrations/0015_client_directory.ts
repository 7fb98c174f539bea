/**
 * The application directory and the service-to-service user lookup
 * (src/identity/directory/Directory.ts).
 *
 * - `oauth_clients.homepage_url`: where the directory links a client. `tagline`, `listed` and
 *   `display_order` exist since migrations/0003; the bounds below match the CLI's checks
 *   (src/identity/clients/Clients.ts `checkListing`), so the database refuses what the CLI would.
 * - The listed clients are read in `display_order`, then `client_id` order.
 * - `GET /users/search` matches a name prefix case-insensitively: `lower(name)` with
 *   `text_pattern_ops`, so `LIKE 'prefix%'` uses the index whatever the database's collation. An
 *   exact email match already uses `users_email_lower_key` (migrations/0003).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    ALTER TABLE oauth_clients
      ADD COLUMN homepage_url text NOT NULL DEFAULT '' CHECK (length(homepage_url) <= 2048),
      ADD CONSTRAINT oauth_clients_tagline_length CHECK (length(tagline) <= 200)
  `
  yield* sql`
    CREATE INDEX oauth_clients_listed_order_idx ON oauth_clients (display_order, client_id) WHERE listed
  `
  yield* sql`CREATE INDEX users_name_lower_prefix_idx ON users (lower(name) text_pattern_ops)`
})
