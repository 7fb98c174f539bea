/**
 * Signing keys encrypted at rest (src/identity/keys/SigningKeyCipher.ts, migrations/0011): the
 * stored row holds no private key material, tokens still sign and verify, plaintext rows of the
 * earlier schema are sealed at the next start, a changed secret stops start-up with a clear error
 * (never a new key), and the row's kid is authenticated (AES-GCM additional data, NIST SP 800-38D).
 */
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Exit, Layer, Redacted, Result } from "effect"
import { SqlClient } from "effect/sql"
import * as Jose from "jose"
import * as Crypto from "node:crypto"
import { inject } from "vitest"
import {
  makeCipher,
  parseEncryptionKey,
  SigningKeyCipher,
  SigningKeysUndecryptable
} from "../../src/identity/keys/SigningKeyCipher.js"
import { generateKey, SigningKeys } from "../../src/identity/keys/SigningKeys.js"
import { Tokens } from "../../src/identity/tokens/Tokens.js"
import { quoteIdentifier, withPgClient } from "../../src/platform/Database.js"
import { migrateUpTo, TemporaryMediaStoreLive, TestSqlLive } from "../support/TestDatabase.js"

const SECRET = "first-secret-first-secret-first-secret"
const OTHER_SECRET = "second-secret-second-secret-second-secret"
const CLEAR_ERROR = "cannot decrypt signing keys: SHIORI_SECRET or SIGNING_KEY_ENCRYPTION_KEY changed?"

/** The real clock: tokens are checked against their `exp` (see test/support/IdentityServers.ts). */
const layerOptions = { timeout: "120 seconds", excludeTestServices: true } as const

/** Only these settings; an empty value is a value (a blank key is refused, not taken as unset). */
const provider = (settings: Record<string, string>) =>
  ConfigProvider.fromEnv({ env: settings, preserveEmptyStrings: true })

/** One process start: the key ring over the current database, with only these settings. */
const start = (settings: Record<string, string> = { SHIORI_SECRET: SECRET }) =>
  Layer.build(SigningKeys.layer).pipe(
    Effect.map((context) => Context.get(context, SigningKeys)),
    Effect.provideService(ConfigProvider.ConfigProvider, provider(settings))
  )

const cipherFor = (settings: Record<string, string>) =>
  Effect.scoped(
    Layer.build(SigningKeyCipher.layer).pipe(
      Effect.map((context) => Context.get(context, SigningKeyCipher)),
      Effect.provideService(ConfigProvider.ConfigProvider, provider(settings))
    )
  ).pipe(Effect.orDie)

interface Row {
  readonly kid: string
  readonly text: string
  readonly plaintext: unknown
  readonly sealed: unknown
}

const rows = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<Row>`
    SELECT kid, row_to_json(k)::text AS text, private_jwk AS plaintext, private_jwk_encrypted AS sealed
    FROM signing_keys k ORDER BY created_at, kid
  `
}).pipe(Effect.orDie)

const clear = Effect.flatMap(SqlClient.SqlClient, (sql) => sql`DELETE FROM signing_keys`).pipe(Effect.orDie)

/** The RSA private members (RFC 7518 section 6.3.2) that must never be stored in the clear. */
const expectNoPrivateMaterial = (row: Row, jwk: Jose.JWK) => {
  for (const member of ["d", "p", "q", "dp", "dq", "qi"] as const) {
    const value = jwk[member]
    expect(typeof value).toBe("string")
    expect(value!.length).toBeGreaterThan(40)
    expect(row.text).not.toContain(value!)
  }
  expect(row.plaintext).toBeNull()
  expect(row.sealed).toMatchObject({ v: 1, alg: "A256GCM", kek: expect.any(String), iv: expect.any(String) })
}

const tokensOver = (keys: SigningKeys["Service"]) =>
  Tokens.layerWithoutDependencies.pipe(Layer.provide(Layer.succeed(SigningKeys, keys)))

/** An access token signed with the ring's key and verified through the same ring. */
const signAndVerify = (keys: SigningKeys["Service"]) =>
  Effect.gen(function*() {
    const tokens = yield* Tokens
    const issued = yield* tokens.issueAccessToken({
      sub: "5b0c7c4e-4a3f-4a51-9a0e-7c1f7f4c2d11",
      uid: 7,
      clientId: "rp",
      audience: "rp",
      scopes: ["openid"],
      roles: [],
      siteRoles: [],
      familyId: "0f4b6a1e-5f7f-4f0c-8c54-0d3e5c1a9b77"
    })
    const claims = yield* tokens.verifyAccessToken(issued.token, { audience: "rp" })
    expect(claims.uid).toBe(7)
    return issued.token
  }).pipe(Effect.provide(tokensOver(keys)))

describe("signing keys encrypted at rest", () => {
  it.layer(TestSqlLive, layerOptions)((it) => {
    it.effect("the stored row holds no private JWK member (d, p, q, dp, dq, qi) in the clear; tokens sign and verify", () =>
      Effect.gen(function*() {
        yield* clear
        const keys = yield* start()
        const token = yield* signAndVerify(keys)
        const [row] = yield* rows
        expect(Jose.decodeProtectedHeader(token).kid).toBe(row!.kid)
        const jwk = yield* (yield* cipherFor({ SHIORI_SECRET: SECRET })).open(row!.kid, row!.sealed)
        expectNoPrivateMaterial(row!, jwk)
        // A second start reads the same key back: it signs, and a token of the first start verifies.
        const again = yield* start()
        expect((yield* again.signingKey).kid).toBe(row!.kid)
        yield* signAndVerify(again)
        const claims = yield* Effect.flatMap(Tokens, (tokens) => tokens.verifyAccessToken(token, { audience: "rp" }))
          .pipe(Effect.provide(tokensOver(again)))
        expect(claims.uid).toBe(7)
        expect(yield* rows).toHaveLength(1)
      }).pipe(Effect.scoped))

    it.effect("a plaintext row of the pre-0011 schema is sealed at the next start, kept as the signing key", () =>
      Effect.gen(function*() {
        yield* clear
        const sql = yield* SqlClient.SqlClient
        const old = yield* generateKey
        // As migrations/0003 stored keys: the private JWK as plaintext jsonb.
        yield* sql`
          INSERT INTO signing_keys (kid, alg, private_jwk, public_jwk)
          VALUES (${old.kid}, 'RS256', ${JSON.stringify(old.privateJwk)}::jsonb, ${
          JSON.stringify(old.publicJwk)
        }::jsonb)
        `.pipe(Effect.orDie)
        expect((yield* rows)[0]!.text).toContain(old.privateJwk.d!)

        const keys = yield* start()
        const [row, ...more] = yield* rows
        expect(more).toEqual([])
        expect(row!.kid).toBe(old.kid)
        expectNoPrivateMaterial(row!, old.privateJwk)
        // The same key signs (no new key was made), verifiable with its public JWK alone.
        const token = yield* signAndVerify(keys)
        const publicKey = yield* Effect.promise(() => Jose.importJWK(old.publicJwk, "RS256"))
        const verified = yield* Effect.promise(() => Jose.jwtVerify(token, publicKey))
        expect(verified.protectedHeader.kid).toBe(old.kid)
      }).pipe(Effect.scoped))

    it.effect("a changed SHIORI_SECRET fails start-up with the clear error and makes no new key", () =>
      Effect.gen(function*() {
        yield* clear
        yield* start()
        const before = yield* rows
        const failed = yield* Effect.exit(start({ SHIORI_SECRET: OTHER_SECRET }))
        expect(Exit.isFailure(failed)).toBe(true)
        const error = yield* Effect.flip(start({ SHIORI_SECRET: OTHER_SECRET }))
        expect(error).toBeInstanceOf(SigningKeysUndecryptable)
        expect(error.message).toContain(CLEAR_ERROR)
        expect(yield* rows).toEqual(before)
      }).pipe(Effect.scoped))

    it.effect("swapping two rows' ciphertexts fails to decrypt: the kid is AES-GCM additional authenticated data", () =>
      Effect.gen(function*() {
        yield* clear
        const sql = yield* SqlClient.SqlClient
        const keys = yield* start()
        yield* keys.rotate()
        const [a, b] = yield* rows
        yield* sql`
          UPDATE signing_keys k
          SET private_jwk_encrypted = o.private_jwk_encrypted
          FROM signing_keys o
          WHERE (k.kid, o.kid) IN ((${a!.kid}, ${b!.kid}), (${b!.kid}, ${a!.kid}))
        `.pipe(Effect.orDie)
        const swapped = yield* rows
        expect(swapped.map((row) => row.sealed)).toEqual([b!.sealed, a!.sealed])
        const error = yield* Effect.flip(start())
        expect(error).toBeInstanceOf(SigningKeysUndecryptable)
        expect(error.message).toContain(CLEAR_ERROR)
        expect(error.message).toContain("authentication failed")
        expect(yield* rows).toEqual(swapped)
      }).pipe(Effect.scoped))

    it.effect("SIGNING_KEY_ENCRYPTION_KEY: adopted keys are re-sealed under it; dropping it again is the clear error", () =>
      Effect.gen(function*() {
        yield* clear
        yield* start()
        const [derived] = yield* rows
        const key = Crypto.randomBytes(32)
        const withKey = { SHIORI_SECRET: SECRET, SIGNING_KEY_ENCRYPTION_KEY: key.toString("base64") }
        const keys = yield* start(withKey)
        yield* signAndVerify(keys)
        const [resealed] = yield* rows
        expect(resealed!.kid).toBe(derived!.kid)
        expect((resealed!.sealed as { kek: string }).kek).toBe(makeCipher(key).kekId)
        expect((resealed!.sealed as { kek: string }).kek).not.toBe((derived!.sealed as { kek: string }).kek)
        // The same key in hex opens it too; the secret alone no longer does.
        yield* start({ SHIORI_SECRET: OTHER_SECRET, SIGNING_KEY_ENCRYPTION_KEY: key.toString("hex") })
        const error = yield* Effect.flip(start({ SHIORI_SECRET: SECRET }))
        expect(error.message).toContain(CLEAR_ERROR)
      }).pipe(Effect.scoped))

    it.effect("a malformed SIGNING_KEY_ENCRYPTION_KEY refuses to start, naming the expected form", () =>
      Effect.gen(function*() {
        for (const bad of ["", "too-short", Crypto.randomBytes(31).toString("base64"), "g".repeat(64)]) {
          const error = yield* Effect.flip(start({ SHIORI_SECRET: SECRET, SIGNING_KEY_ENCRYPTION_KEY: bad }))
          expect(String(error)).toContain("SIGNING_KEY_ENCRYPTION_KEY must be 32 bytes")
        }
        expect(Result.isSuccess(parseEncryptionKey(Crypto.randomBytes(32).toString("base64url")))).toBe(true)
        expect(Result.isSuccess(parseEncryptionKey(Crypto.randomBytes(32).toString("hex").toUpperCase()))).toBe(true)
      }).pipe(Effect.scoped))
  })
})

describe("migrations/0011 over rows of the earlier schema", () => {
  it.effect(
    "a database migrated to 0010 with a plaintext key: 0011 applies, the next start seals the row",
    () =>
      Effect.gen(function*() {
        const admin = Redacted.make(inject("pgAdminUrl"))
        const name = `shiori_test_${Crypto.randomBytes(6).toString("hex")}`
        yield* Effect.acquireRelease(
          withPgClient(admin, (c) => c.query(`CREATE DATABASE ${quoteIdentifier(name)}`)),
          () =>
            withPgClient(admin, (c) => c.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(name)} WITH (FORCE)`)).pipe(
              Effect.ignore
            )
        )
        const url = new URL(inject("pgAdminUrl"))
        url.pathname = `/${name}`
        const database = yield* Layer.build(
          Layer.mergeAll(PgClient.layer({ url: Redacted.make(url.toString()) }), TemporaryMediaStoreLive)
        )
        const migrateTo = (last: number) => migrateUpTo(last).pipe(Effect.provide(database))
        yield* migrateTo(10)
        const old = yield* generateKey
        yield* Effect.flatMap(SqlClient.SqlClient, (sql) =>
          sql`
          INSERT INTO signing_keys (kid, alg, private_jwk, public_jwk)
          VALUES (${old.kid}, 'RS256', ${JSON.stringify(old.privateJwk)}::jsonb, ${
            JSON.stringify(old.publicJwk)
          }::jsonb)
        `).pipe(Effect.provide(database))
        expect((yield* migrateTo(Number.MAX_SAFE_INTEGER)).map(([id]) => id)).toContain(11)
        const keys = yield* start().pipe(Effect.provide(database))
        expect((yield* keys.signingKey).kid).toBe(old.kid)
        const [row, ...more] = yield* rows.pipe(Effect.provide(database))
        expect(more).toEqual([])
        expectNoPrivateMaterial(row!, old.privateJwk)
      }).pipe(Effect.scoped, Effect.orDie),
    { timeout: 120_000 }
  )
})
