/**
 * Signing keys encrypted at rest (src/identity/keys/SigningKeyCipher.ts): the private JWK moves to
 * `private_jwk_encrypted`, an AES-256-GCM envelope bound to the row's `kid`.
 *
 * The key that encrypts is `SIGNING_KEY_ENCRYPTION_KEY` or derived from `SHIORI_SECRET`, which a
 * migration does not see, so existing rows cannot be encrypted here. `private_jwk` becomes nullable
 * and keeps a row's plaintext only until the next process start: under the advisory lock that
 * serialises key creation (src/identity/keys/SigningKeys.ts, `ensureKey`) the app seals every row
 * still in plaintext and nulls `private_jwk`. A row holds exactly one of the two, so a row with
 * neither (no private key) or both (plaintext left behind) is refused.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`ALTER TABLE signing_keys ADD COLUMN private_jwk_encrypted jsonb`
  yield* sql`ALTER TABLE signing_keys ALTER COLUMN private_jwk DROP NOT NULL`
  yield* sql`
    ALTER TABLE signing_keys
      ADD CONSTRAINT signing_keys_private_key_once CHECK ((private_jwk IS NULL) <> (private_jwk_encrypted IS NULL)),
      ADD CONSTRAINT signing_keys_private_key_envelope CHECK (
        private_jwk_encrypted IS NULL OR (
          jsonb_typeof(private_jwk_encrypted) = 'object'
          AND private_jwk_encrypted ?& ARRAY['v', 'alg', 'kek', 'iv', 'tag', 'ct']
        )
      )
  `
  yield* sql`
    COMMENT ON COLUMN signing_keys.private_jwk IS
      'plaintext private JWK of a row written before migration 0011; sealed and nulled at the next start'
  `
})
