import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/** Platform tables: catalog API keys (docs/api-contract.md, "Credentials, scopes and the content limit"). */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE api_keys (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      -- sha256 of the whole key; the key itself is shown once and never stored.
      key_hash bytea NOT NULL UNIQUE,
      -- first characters after "sk_", so an operator can recognise a key in a listing.
      prefix text NOT NULL,
      site text NOT NULL CHECK (site ~ '^[a-z][a-z0-9_]*$' AND length(site) <= 64),
      scopes text[] NOT NULL,
      content_limit text NOT NULL DEFAULT 'sfw' CHECK (content_limit IN ('sfw', 'nsfw')),
      user_id bigint,
      created_at timestamptz NOT NULL DEFAULT now(),
      revoked_at timestamptz
    )
  `
})
