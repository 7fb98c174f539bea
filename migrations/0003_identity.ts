/**
 * Identity provider tables (why: the "Identity: ..." sections of docs/decisions.md).
 *
 * Every secret that a client or browser holds (session cookie, authorization code, refresh token,
 * client secret) is stored only as its SHA-256 hex digest, so a database dump cannot be replayed.
 * Scopes are stored as `text[]` so narrowing and consent checks are set operations in SQL.
 * `bigint` columns come back from node-postgres as strings; repositories decode them with
 * `Schema.NumberFromString`.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  // Accounts. `roles` holds the granted roles only: `user` is implicit, so an ordinary user
  // has an empty array. Email uniqueness is case-insensitive through the `lower(email)` index.
  yield* sql`
    CREATE TABLE users (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      sub uuid NOT NULL UNIQUE,
      email text NOT NULL CHECK (length(email) BETWEEN 3 AND 254),
      name text NOT NULL DEFAULT '',
      picture text NOT NULL DEFAULT '',
      bio text NOT NULL DEFAULT '',
      password_hash text NOT NULL,
      roles text[] NOT NULL DEFAULT '{}'
        CHECK (roles <@ ARRAY['creator', 'moderator', 'admin', 'ren']::text[]),
      banned boolean NOT NULL DEFAULT false,
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now()
    )
  `
  yield* sql`CREATE UNIQUE INDEX users_email_lower_key ON users (lower(email))`

  // Site roles are scoped to the site of the issuing client; `user`, `admin` and `ren`
  // are reserved names.
  yield* sql`
    CREATE TABLE user_site_roles (
      user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      site text NOT NULL,
      role text NOT NULL CHECK (role ~ '^[a-z][a-z0-9_-]{0,31}$' AND role NOT IN ('user', 'admin', 'ren')),
      granted_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (user_id, site, role)
    )
  `

  // Registered clients. `secret_hash` is null for public clients, which must use PKCE (RFC 7636).
  // `refresh_ttl_seconds` overrides the 90-day session lifetime.
  // `tagline`, `listed` and `display_order` feed the public application directory.
  yield* sql`
    CREATE TABLE oauth_clients (
      client_id text PRIMARY KEY CHECK (client_id ~ '^[A-Za-z0-9._~-]{1,128}$'),
      name text NOT NULL,
      logo_url text NOT NULL DEFAULT '',
      tagline text NOT NULL DEFAULT '',
      secret_hash text,
      redirect_uris text[] NOT NULL CHECK (cardinality(redirect_uris) >= 1),
      auto_consent boolean NOT NULL DEFAULT false,
      site text,
      refresh_ttl_seconds integer CHECK (refresh_ttl_seconds > 0),
      listed boolean NOT NULL DEFAULT false,
      display_order integer NOT NULL DEFAULT 0,
      created_at timestamptz NOT NULL DEFAULT now()
    )
  `

  // Consent is remembered per client and scope set (docs/decisions.md, "Identity: protocol"): a
  // request is covered when its scopes are a subset of `scopes`.
  yield* sql`
    CREATE TABLE consents (
      user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      client_id text NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
      scopes text[] NOT NULL DEFAULT '{}',
      created_at timestamptz NOT NULL DEFAULT now(),
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (user_id, client_id)
    )
  `

  // The provider's own browser session. `id` is the SHA-256 hex of the random cookie value.
  yield* sql`
    CREATE TABLE sessions (
      id text PRIMARY KEY,
      user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      auth_time timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      last_seen_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      ended_at timestamptz,
      user_agent text NOT NULL DEFAULT '',
      ip text NOT NULL DEFAULT ''
    )
  `
  yield* sql`CREATE INDEX sessions_user_id_idx ON sessions (user_id) WHERE ended_at IS NULL`

  // Authorization codes: 64 hex, stored hashed, single use, 10 minutes.
  // The PKCE method is bound to the code. `session_id` is null when authorize ran on a Bearer token.
  yield* sql`
    CREATE TABLE authorization_codes (
      code_hash text PRIMARY KEY,
      client_id text NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
      user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      session_id text REFERENCES sessions (id) ON DELETE SET NULL,
      redirect_uri text NOT NULL,
      scopes text[] NOT NULL DEFAULT '{}',
      nonce text,
      code_challenge text,
      code_challenge_method text CHECK (code_challenge_method IN ('S256', 'plain')),
      auth_time timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      consumed_at timestamptz,
      CHECK ((code_challenge IS NULL) = (code_challenge_method IS NULL))
    )
  `
  yield* sql`CREATE INDEX authorization_codes_expires_at_idx ON authorization_codes (expires_at)`

  // A refresh family is everything one authorization code (or one login) produced: the chain of
  // rotated refresh tokens and the access tokens issued alongside, which carry the family id in
  // their `fid` claim. Revoking the family (reuse, code replay, RFC 7009 revocation, logout) makes
  // userinfo and the catalog reject those access tokens too (docs/decisions.md, "Identity: tokens and
  // sessions").
  yield* sql`
    CREATE TABLE refresh_families (
      id uuid PRIMARY KEY,
      client_id text NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
      user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      code_hash text,
      session_id text REFERENCES sessions (id) ON DELETE SET NULL,
      auth_time timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      revoked_at timestamptz,
      revoked_reason text
    )
  `
  yield* sql`CREATE INDEX refresh_families_user_id_idx ON refresh_families (user_id)`
  yield* sql`CREATE INDEX refresh_families_code_hash_idx ON refresh_families (code_hash) WHERE code_hash IS NOT NULL`
  yield* sql`CREATE INDEX refresh_families_session_id_idx ON refresh_families (session_id) WHERE session_id IS NOT NULL`
  // The per-request revocation check of access tokens reads only revoked families.
  yield* sql`CREATE INDEX refresh_families_revoked_idx ON refresh_families (id) WHERE revoked_at IS NOT NULL`

  // Opaque refresh tokens, matched by the hash of their value. Rotation is one
  // conditional UPDATE on `rotated_at IS NULL`, so concurrent refreshes of one token yield exactly
  // one successor; reuse of a rotated token revokes the family (RFC 9700 section 4.14.2).
  yield* sql`
    CREATE TABLE refresh_tokens (
      token_hash text PRIMARY KEY,
      family_id uuid NOT NULL REFERENCES refresh_families (id) ON DELETE CASCADE,
      client_id text NOT NULL REFERENCES oauth_clients (client_id) ON DELETE CASCADE,
      user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      scopes text[] NOT NULL DEFAULT '{}',
      auth_time timestamptz NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      expires_at timestamptz NOT NULL,
      rotated_at timestamptz,
      replaced_by text,
      revoked_at timestamptz
    )
  `
  yield* sql`CREATE INDEX refresh_tokens_family_id_idx ON refresh_tokens (family_id)`
  yield* sql`CREATE INDEX refresh_tokens_expires_at_idx ON refresh_tokens (expires_at)`

  // RS256 signing keys (docs/decisions.md, "Identity: tokens and sessions"). A rotated-in key is
  // published at once but signs only from `activates_at`, so every process and relying party knows it
  // before the first token it signs; the key it replaces signs until then (`retired_at`) and stays
  // published until `not_after`. Only the newest key has `retired_at` null. `private_jwk` is plain JWK
  // JSON; encrypting it at rest (for example AES-256-GCM under a key from Config) is a possible later
  // step, and the jsonb column can hold the encrypted envelope without a schema change.
  yield* sql`
    CREATE TABLE signing_keys (
      kid text PRIMARY KEY,
      alg text NOT NULL DEFAULT 'RS256' CHECK (alg = 'RS256'),
      private_jwk jsonb NOT NULL,
      public_jwk jsonb NOT NULL,
      created_at timestamptz NOT NULL DEFAULT now(),
      activates_at timestamptz NOT NULL DEFAULT now(),
      retired_at timestamptz,
      not_after timestamptz,
      CHECK ((retired_at IS NULL) = (not_after IS NULL))
    )
  `
  yield* sql`CREATE UNIQUE INDEX signing_keys_one_newest ON signing_keys ((true)) WHERE retired_at IS NULL`

  // Token buckets shared by every process (docs/api-contract.md, "Rate limits and body limits"): the
  // token endpoint per client_id, login per account and per IP. One atomic UPSERT refills and takes.
  yield* sql`
    CREATE TABLE rate_limit_buckets (
      key text PRIMARY KEY,
      tokens double precision NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )
  `
  yield* sql`CREATE INDEX rate_limit_buckets_updated_at_idx ON rate_limit_buckets (updated_at)`

  // Development mail outbox (docs/decisions.md, "Identity: accounts and self-service"): used when
  // SMTP_URL is unset and shown on the development mailbox page.
  yield* sql`
    CREATE TABLE mail_outbox (
      id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
      to_address text NOT NULL,
      subject text NOT NULL,
      text_body text NOT NULL,
      html_body text,
      created_at timestamptz NOT NULL DEFAULT now(),
      sent_at timestamptz
    )
  `
  yield* sql`CREATE INDEX mail_outbox_to_address_idx ON mail_outbox (lower(to_address), created_at DESC)`
})
