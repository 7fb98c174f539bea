/**
 * The provider's signing key, read from the test database and decrypted with the same
 * `SHIORI_SECRET` as the servers (`AppSecret` of the test env), for forging tokens that only the key
 * can make (an expired token, a token with unusual claims) and the public key for attacks that
 * misuse it (HS256 keyed with the public key).
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as Jose from "jose"
import { SigningKeyCipher } from "../../src/identity/keys/SigningKeyCipher.js"

export const providerKey = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const cipher = yield* SigningKeyCipher
  const rows = yield* sql<{ kid: string; private_jwk_encrypted: unknown; public_jwk: Jose.JWK }>`
    SELECT kid, private_jwk_encrypted, public_jwk FROM signing_keys WHERE retired_at IS NULL
  `.pipe(Effect.orDie)
  const row = rows[0]
  if (row === undefined) return yield* Effect.die("no signing key yet")
  const privateJwk = yield* cipher.open(row.kid, row.private_jwk_encrypted).pipe(Effect.orDie)
  return { kid: row.kid, privateJwk, publicJwk: row.public_jwk }
}).pipe(Effect.provide(SigningKeyCipher.layerWithoutDependencies), Effect.orDie)

/** Signs `claims` with the provider's own key (RS256), header `typ` as given. */
export const signWithProviderKey = (claims: Jose.JWTPayload, typ = "at+jwt") =>
  Effect.gen(function*() {
    const key = yield* providerKey
    const privateKey = yield* Effect.promise(() => Jose.importJWK(key.privateJwk, "RS256"))
    return yield* Effect.promise(() =>
      new Jose.SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: key.kid, typ }).sign(privateKey)
    )
  })

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

/** `alg: none` (RFC 7519 section 6): the claims with no signature at all. */
export const unsignedToken = (claims: Jose.JWTPayload, kid?: string) =>
  `${b64({ alg: "none", typ: "at+jwt", ...(kid !== undefined ? { kid } : {}) })}.${b64(claims)}.`

/**
 * The classic key-confusion attack: HS256 with the provider's public key (as its PEM text) as the
 * HMAC secret, which a verifier that trusts the header's `alg` would accept.
 */
export const hs256WithPublicKey = (claims: Jose.JWTPayload) =>
  Effect.gen(function*() {
    const key = yield* providerKey
    const publicKey = yield* Effect.promise(() => Jose.importJWK(key.publicJwk, "RS256", { extractable: true }))
    const pem = yield* Effect.promise(() => Jose.exportSPKI(publicKey as Jose.CryptoKey))
    return yield* Effect.promise(() =>
      new Jose.SignJWT(claims).setProtectedHeader({ alg: "HS256", kid: key.kid, typ: "at+jwt" }).sign(
        new TextEncoder().encode(pem)
      )
    )
  })
