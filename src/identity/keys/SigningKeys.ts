/**
 * RS256 signing keys (docs/decisions.md, "Identity: tokens and sessions").
 *
 * Keys live in `signing_keys`. The first process to start generates one; two processes starting at
 * once are serialised by a transaction-scoped advisory lock (and the partial unique index allows
 * one newest key only). `rotate()` (the `cli keys rotate` command) adds a key that is published
 * at once but signs only from `activates_at`, `ROTATION_GRACE_SECONDS` later: by then every
 * process has re-read the table (each does so every `RELOAD_INTERVAL_SECONDS`), so no instance
 * meets a token signed by a key it does not know, and relying parties can fetch the new JWKS early.
 * Every process switches at the same instant because the choice of signing key is made per token
 * from the clock, not at reload. The replaced key stops signing at that instant (`retired_at`) and
 * stays published until `not_after`, when every token it signed has expired.
 *
 * Imported `CryptoKey`s are cached in memory by `kid`. An unknown `kid` re-reads the table at most
 * once per `MISS_RELOAD_SECONDS`, so random `kid`s cannot hammer the database.
 *
 * Private keys are stored sealed (src/identity/keys/SigningKeyCipher.ts). Rows written before
 * migrations/0011 hold the plaintext JWK in `private_jwk`: the step that makes sure a key exists,
 * under the same advisory lock, seals them and nulls the plaintext (and re-seals rows under an earlier
 * key-encryption key), so once a process has started no plaintext private key is left. A key that
 * does not decrypt stops start-up with `SigningKeysUndecryptable`; it never leads to a new key.
 */
import { Clock, Context, Duration, Effect, Layer, Option, Ref, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Jose from "jose"
import { Jwk, Jwks } from "../../../schema/Identity/Discovery.js"
import { AdvisoryLockClass } from "../../platform/AdvisoryLocks.js"
import { CLOCK_SKEW_SECONDS, MAX_SIGNED_TOKEN_TTL_SECONDS } from "../shared/Lifetimes.js"
import { SigningKeyCipher, SigningKeysUndecryptable } from "./SigningKeyCipher.js"

export const SIGNING_ALG = "RS256"
const RELOAD_INTERVAL_SECONDS = 60
const MISS_RELOAD_SECONDS = 10

/** Delay between publishing a rotated-in key and signing with it: two reload intervals. */
export const ROTATION_GRACE_SECONDS = 2 * RELOAD_INTERVAL_SECONDS

/**
 * How long a key stays published after it stops signing: the longest token lifetime, plus one
 * reload interval for a process that missed the rotation, plus clock skew.
 */
export const RETIRED_KEY_RETENTION_SECONDS = MAX_SIGNED_TOKEN_TTL_SECONDS + RELOAD_INTERVAL_SECONDS +
  CLOCK_SKEW_SECONDS

/** A key as stored: JWKs plus its lifecycle. */
export interface StoredKey {
  readonly kid: string
  readonly privateJwk: Jose.JWK
  readonly publicJwk: Jose.JWK
  readonly createdAt: Date
  readonly activatesAt: Date
  readonly retiredAt: Date | null
  readonly notAfter: Date | null
}

export type NewKey = Pick<StoredKey, "kid" | "privateJwk" | "publicJwk">

/** Where keys are kept: PostgreSQL in production, memory in tests. */
export interface KeyStore {
  /** Every key not past `not_after`, latest activation first (the newest key first on a tie). */
  readonly published: Effect.Effect<ReadonlyArray<StoredKey>, SigningKeysUndecryptable>
  /**
   * Inserts a key from `generate`, active now, unless a key exists; safe when processes race. Also
   * seals any private key still stored in plaintext.
   */
  readonly ensureKey: (generate: Effect.Effect<NewKey>) => Effect.Effect<void, SigningKeysUndecryptable>
  /**
   * Adds `next`, signing from now + `graceSeconds`. Every key that would still sign at that instant
   * (the newest one, or a pending one from an earlier rotation) stops signing then and stays
   * published `retentionSeconds` longer. Atomic.
   */
  readonly rotate: (next: NewKey, graceSeconds: number, retentionSeconds: number) => Effect.Effect<void>
}

/** A fresh RSA 2048 key pair as JWKs, `kid` = RFC 7638 thumbprint. */
export const generateKey: Effect.Effect<NewKey> = Effect.promise(async () => {
  const { privateKey, publicKey } = await Jose.generateKeyPair(SIGNING_ALG, { modulusLength: 2048, extractable: true })
  const publicJwk = await Jose.exportJWK(publicKey)
  const kid = await Jose.calculateJwkThumbprint(publicJwk)
  return {
    kid,
    privateJwk: { ...(await Jose.exportJWK(privateKey)), kid, alg: SIGNING_ALG, use: "sig" },
    publicJwk: { kty: publicJwk.kty!, n: publicJwk.n!, e: publicJwk.e!, kid, alg: SIGNING_ALG, use: "sig" }
  }
}).pipe(Effect.withSpan("SigningKeys.generate"))

// ---------------------------------------------------------------------------------------------
// Stores
// ---------------------------------------------------------------------------------------------

const JwkJson = Schema.Record(Schema.String, Schema.Unknown)

const KeyRow = Schema.Struct({
  kid: Schema.String,
  sealed: Schema.Unknown,
  publicJwk: JwkJson,
  createdAt: Schema.Date,
  activatesAt: Schema.Date,
  retiredAt: Schema.NullOr(Schema.Date),
  notAfter: Schema.NullOr(Schema.Date)
})

const StateRow = Schema.Struct({ hasKey: Schema.Boolean, unsealed: Schema.Boolean })

const UnsealedRow = Schema.Struct({ kid: Schema.String, plaintext: Schema.NullOr(JwkJson), sealed: Schema.Unknown })

// Serialises key creation, sealing and rotation across processes for the duration of one transaction.
const lockKeys = (sql: SqlClient.SqlClient) =>
  sql`SELECT pg_advisory_xact_lock(${AdvisoryLockClass.signingKeys}::int4, 0)`

const decodeUnsealed = Schema.decodeUnknownEffect(Schema.Array(UnsealedRow))

/**
 * Seals every private key not sealed under `cipher`'s current KEK (plaintext of the earlier schema,
 * or sealed under an earlier KEK): answers how many. Run it holding the lock.
 */
const sealAll = (sql: SqlClient.SqlClient, cipher: SigningKeyCipher["Service"]) =>
  Effect.gen(function*() {
    const rows = yield* sql`
      SELECT kid, private_jwk AS "plaintext", private_jwk_encrypted AS "sealed"
      FROM signing_keys
      WHERE private_jwk IS NOT NULL OR private_jwk_encrypted ->> 'kek' IS DISTINCT FROM ${cipher.kekId}
    `.pipe(Effect.flatMap(decodeUnsealed))
    for (const row of rows) {
      const jwk = row.plaintext ?? (yield* cipher.open(row.kid, row.sealed))
      yield* sql`
        UPDATE signing_keys
        SET private_jwk_encrypted = ${JSON.stringify(cipher.seal(row.kid, jwk))}::jsonb, private_jwk = NULL
        WHERE kid = ${row.kid}
      `
    }
    if (rows.length > 0) yield* Effect.logInfo("sealed signing keys").pipe(Effect.annotateLogs({ keys: rows.length }))
    return rows.length
  })

/**
 * Re-seals every stored private key under `cipher`'s current KEK, in one transaction under the
 * signing keys' lock (there are a handful of keys); answers how many were sealed anew. Makes no key
 * when there is none (the `reencrypt-secrets` command of src/cli/SecretCommands.ts).
 */
export const resealSigningKeys = (cipher: SigningKeyCipher["Service"]) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* Effect.gen(function*() {
      yield* lockKeys(sql)
      return yield* sealAll(sql, cipher)
    }).pipe(sql.withTransaction)
  }).pipe(Effect.catchTags({ SqlError: Effect.die, SchemaError: Effect.die }))

/**
 * The PostgreSQL store over `signing_keys`, private keys sealed by `cipher`. SQL and decode failures
 * are defects; only `SigningKeysUndecryptable` is an error.
 */
export const makePgKeyStore = (cipher: SigningKeyCipher["Service"]) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const decodeRows = Schema.decodeUnknownEffect(Schema.Array(KeyRow))
    const decodeState = Schema.decodeUnknownEffect(Schema.Array(StateRow))
    const lock = lockKeys(sql)
    // One read on every reload: is there a signing key, and is any private key not sealed under the
    // current key-encryption key (a row from before migrations/0011, or sealed under an earlier KEK)?
    const state = sql`
      SELECT coalesce(bool_or(retired_at IS NULL), false) AS "hasKey",
             coalesce(bool_or(private_jwk IS NOT NULL
                              OR private_jwk_encrypted ->> 'kek' IS DISTINCT FROM ${cipher.kekId}), false) AS "unsealed"
      FROM signing_keys
    `.pipe(Effect.flatMap(decodeState), Effect.map((rows) => rows[0] ?? { hasKey: false, unsealed: false }))
    const insert = (key: NewKey, graceSeconds: number) =>
      sql`
        INSERT INTO signing_keys (kid, alg, private_jwk_encrypted, public_jwk, activates_at)
        VALUES (
          ${key.kid}, ${SIGNING_ALG}, ${JSON.stringify(cipher.seal(key.kid, key.privateJwk))}::jsonb,
          ${JSON.stringify(key.publicJwk)}::jsonb, now() + make_interval(secs => ${graceSeconds})
        )
      `

    const store: KeyStore = {
      // Column aliases are camelCase so the rows read the same with or without a result-name transform.
      // `ensureKey` runs first on every load and seals every row, so each row read here is sealed.
      published: sql`
        SELECT kid, private_jwk_encrypted AS "sealed", public_jwk AS "publicJwk", created_at AS "createdAt",
               activates_at AS "activatesAt", retired_at AS "retiredAt", not_after AS "notAfter"
        FROM signing_keys
        WHERE not_after IS NULL OR not_after > now()
        ORDER BY activates_at DESC, retired_at IS NULL DESC, created_at DESC
      `.pipe(
        Effect.flatMap(decodeRows),
        Effect.flatMap((rows) =>
          Effect.forEach(rows, (row) =>
            Effect.map(cipher.open(row.kid, row.sealed), (privateJwk): StoredKey => ({
              kid: row.kid,
              privateJwk,
              publicJwk: row.publicJwk,
              createdAt: row.createdAt,
              activatesAt: row.activatesAt,
              retiredAt: row.retiredAt,
              notAfter: row.notAfter
            })))
        ),
        Effect.catchTags({ SqlError: Effect.die, SchemaError: Effect.die })
      ),
      ensureKey: (generate) =>
        Effect.gen(function*() {
          const before = yield* state
          if (before.hasKey && !before.unsealed) return
          // Generated outside the lock (it takes a few hundred milliseconds); a loser discards its key.
          const candidate = before.hasKey ? undefined : yield* generate
          yield* Effect.gen(function*() {
            yield* lock
            yield* sealAll(sql, cipher)
            const now = yield* state
            if (!now.hasKey) yield* insert(candidate ?? (yield* generate), 0)
          }).pipe(sql.withTransaction)
        }).pipe(Effect.catchTags({ SqlError: Effect.die, SchemaError: Effect.die })),
      rotate: (next, graceSeconds, retentionSeconds) =>
        Effect.gen(function*() {
          yield* lock
          yield* sql`
            UPDATE signing_keys
            SET retired_at = now() + make_interval(secs => ${graceSeconds}),
                not_after = now() + make_interval(secs => ${graceSeconds + retentionSeconds})
            WHERE retired_at IS NULL OR retired_at > now() + make_interval(secs => ${graceSeconds})
          `
          yield* insert(next, graceSeconds)
        }).pipe(sql.withTransaction, Effect.orDie)
    }
    return store
  })

/** An in-memory store with the same semantics, for tests and single-process experiments. */
export const makeMemoryKeyStore = Effect.gen(function*() {
  const keys = yield* Ref.make<ReadonlyArray<StoredKey>>([])
  const later = (at: number, seconds: number) => new Date(at + seconds * 1000)
  const store: KeyStore = {
    published: Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const all = yield* Ref.get(keys)
      return all
        .filter((key) => key.notAfter === null || key.notAfter.getTime() > now)
        .sort((a, b) =>
          b.activatesAt.getTime() - a.activatesAt.getTime() ||
          Number(a.retiredAt !== null) - Number(b.retiredAt !== null) ||
          b.createdAt.getTime() - a.createdAt.getTime()
        )
    }),
    ensureKey: (generate) =>
      Effect.gen(function*() {
        if ((yield* Ref.get(keys)).some((key) => key.retiredAt === null)) return
        const key = yield* generate
        const now = yield* Clock.currentTimeMillis
        yield* Ref.update(keys, (all) => [...all, {
          ...key,
          createdAt: new Date(now),
          activatesAt: new Date(now),
          retiredAt: null,
          notAfter: null
        }])
      }),
    rotate: (next, graceSeconds, retentionSeconds) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const switchAt = later(now, graceSeconds)
        yield* Ref.update(keys, (all) => [
          ...all.map((key) =>
            key.retiredAt === null || key.retiredAt.getTime() > switchAt.getTime()
              ? { ...key, retiredAt: switchAt, notAfter: later(now, graceSeconds + retentionSeconds) }
              : key
          ),
          { ...next, createdAt: new Date(now), activatesAt: switchAt, retiredAt: null, notAfter: null }
        ])
      })
  }
  return store
})

// ---------------------------------------------------------------------------------------------
// Service
// ---------------------------------------------------------------------------------------------

/** The key that signs a new token. */
export interface SigningKey {
  readonly kid: string
  readonly alg: typeof SIGNING_ALG
  readonly privateKey: Jose.CryptoKey
}

interface RingEntry extends SigningKey {
  readonly activatesAt: number
  readonly retiredAt: number | null
  readonly publicKey: Jose.CryptoKey
}

interface KeyRing {
  /** Newest activation first. */
  readonly entries: ReadonlyArray<RingEntry>
  readonly byKid: ReadonlyMap<string, RingEntry>
  readonly jwks: Jwks
  readonly loadedAt: number
}

const importKey = (jwk: Jose.JWK) =>
  Effect.promise(() => Jose.importJWK(jwk, SIGNING_ALG)).pipe(
    Effect.flatMap((key) =>
      key instanceof Uint8Array ? Effect.die(new Error("signing key is not an asymmetric key")) : Effect.succeed(key)
    )
  )

/** The service over any store; `SigningKeys` uses PostgreSQL, `SigningKeysTest` memory. */
export const makeSigningKeys = (store: KeyStore) =>
  Effect.gen(function*() {
    // Imports are kept across reloads: a kid always names the same key material.
    const imported = new Map<string, { readonly privateKey: Jose.CryptoKey; readonly publicKey: Jose.CryptoKey }>()

    const load = Effect.gen(function*() {
      yield* store.ensureKey(generateKey)
      const rows = yield* store.published
      for (const row of rows) {
        if (imported.has(row.kid)) continue
        const [privateKey, publicKey] = yield* Effect.all([importKey(row.privateJwk), importKey(row.publicJwk)])
        imported.set(row.kid, { privateKey, publicKey })
      }
      // Keys no longer published stop verifying here too.
      const live = new Set(rows.map((row) => row.kid))
      for (const kid of imported.keys()) if (!live.has(kid)) imported.delete(kid)
      const entries = rows.map((row): RingEntry => ({
        ...imported.get(row.kid)!,
        kid: row.kid,
        alg: SIGNING_ALG,
        activatesAt: row.activatesAt.getTime(),
        retiredAt: row.retiredAt?.getTime() ?? null
      }))
      return {
        entries,
        byKid: new Map(entries.map((entry) => [entry.kid, entry])),
        jwks: new Jwks({
          keys: rows.map((row) =>
            new Jwk({
              kty: "RSA",
              kid: row.kid,
              use: "sig",
              alg: SIGNING_ALG,
              n: row.publicJwk.n!,
              e: row.publicJwk.e!
            })
          )
        }),
        loadedAt: yield* Clock.currentTimeMillis
      } satisfies KeyRing
    })

    // A key that does not decrypt fails here, so the process does not start (and makes no new key).
    const ring = yield* Ref.make<KeyRing>(yield* load)
    const reload = load.pipe(
      Effect.flatMap((next) => Ref.set(ring, next)),
      Effect.withSpan("SigningKeys.reload")
    )

    // Picks up rotations done by other processes (the CLI, other instances).
    yield* reload.pipe(
      Effect.catchCause((cause) => Effect.logWarning("signing key reload failed", cause)),
      Effect.delay(Duration.seconds(RELOAD_INTERVAL_SECONDS)),
      Effect.forever,
      Effect.forkScoped
    )

    /** The key that signs now: the one whose [activates_at, retired_at) window holds the clock. */
    const signingKey: Effect.Effect<SigningKey> = Effect.gen(function*() {
      const { entries } = yield* Ref.get(ring)
      const now = yield* Clock.currentTimeMillis
      const entry = entries.find((candidate) =>
        candidate.activatesAt <= now && (candidate.retiredAt === null || candidate.retiredAt > now)
      ) ??
        // Only when this process's clock disagrees with the database's: the newest key that has
        // started signing, else the oldest published one.
        entries.find((candidate) =>
          candidate.activatesAt <= now
        ) ?? entries[entries.length - 1]
      return { kid: entry.kid, alg: entry.alg, privateKey: entry.privateKey }
    })

    /** The public key for `kid`, re-reading the table on a miss at most once per MISS_RELOAD_SECONDS. */
    const verificationKey = Effect.fn("SigningKeys.verificationKey")(function*(kid: string) {
      const current = yield* Ref.get(ring)
      const entry = current.byKid.get(kid)
      if (entry !== undefined) return Option.some(entry.publicKey)
      const now = yield* Clock.currentTimeMillis
      if (now - current.loadedAt < MISS_RELOAD_SECONDS * 1000) return Option.none()
      // A key written meanwhile that does not decrypt here: keep verifying with the keys already known.
      yield* reload.pipe(
        Effect.catchTag("SigningKeysUndecryptable", (error) => Effect.logWarning("signing key reload failed", error))
      )
      return Option.map(Option.fromNullishOr((yield* Ref.get(ring)).byKid.get(kid)), (found) => found.publicKey)
    })

    /** The public JWK Set served at `{issuer}/oauth/jwks`: every published key, newest first. */
    const jwks: Effect.Effect<Jwks> = Effect.map(Ref.get(ring), (current) => current.jwks)

    /**
     * Adds a key that signs from `graceSeconds` on (default `ROTATION_GRACE_SECONDS`). A grace of 0
     * switches this process at once; other processes follow at their next reload.
     */
    const rotate = Effect.fn("SigningKeys.rotate")(function*(options?: { readonly graceSeconds?: number }) {
      const graceSeconds = options?.graceSeconds ?? ROTATION_GRACE_SECONDS
      const next = yield* generateKey
      yield* store.rotate(next, graceSeconds, RETIRED_KEY_RETENTION_SECONDS)
      yield* reload
      const activatesAt = (yield* Clock.currentTimeMillis) + graceSeconds * 1000
      return { kid: next.kid, activatesAt: new Date(activatesAt) }
    })

    return { signingKey, verificationKey, jwks, rotate, reload } as const
  })

export class SigningKeys extends Context.Service<SigningKeys>()("identity/SigningKeys", {
  make: SigningKeyCipher.pipe(Effect.flatMap(makePgKeyStore), Effect.flatMap(makeSigningKeys))
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([SigningKeyCipher.layer]))
}

/** Keys in memory: a fresh key per layer build, no database. */
export const SigningKeysTest: Layer.Layer<SigningKeys> = Layer.effect(
  SigningKeys,
  Effect.flatMap(makeMemoryKeyStore, makeSigningKeys).pipe(Effect.orDie)
)
