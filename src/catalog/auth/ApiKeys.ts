/**
 * Catalog API keys (docs/api-contract.md, "Credentials, scopes and the content limit"): 256 random
 * bits shown once as `sk_<base64url>`, stored as a sha256 hash, bound to a site, a scope set and a
 * content limit.
 */
import { Context, Data, Effect, Layer, Metric, Option, Redacted, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import * as Crypto from "node:crypto"
import type { Scope } from "../../../schema/Annotations.js"
import { Scopes } from "../../../schema/Annotations.js"
import { CredentialInfo } from "../../../schema/Api/CredentialApi.js"
import type { ContentLimit } from "../../../schema/Api/Security.js"

export const SiteName = Schema.String.check(Schema.isPattern(/^[a-z][a-z0-9_]*$/), Schema.isMaxLength(64))

export interface ApiKeyRecord {
  readonly id: string
  readonly prefix: string
  readonly site: string
  readonly scopes: ReadonlyArray<Scope>
  readonly contentLimit: ContentLimit
  readonly userId: number | null
  readonly createdAt: Date
  readonly revokedAt: Date | null
}

export class ApiKeyInputError extends Data.TaggedError("ApiKeyInputError")<{ readonly message: string }> {}

const KEY_PREFIX = "sk_"
const KEY_BODY = /^sk_[A-Za-z0-9_-]{43}$/

// One-shot `hash`: every request with an API key hashes it to find its cached principal, and a
// `createHash` object per request cost several times the digest itself.
export const hashKey = (key: string): Buffer => Crypto.hash("sha256", key, "buffer")

/** `hashKey` as hex, the form the server processes know live keys by. */
export const hashKeyHex = (key: string): string => Crypto.hash("sha256", key, "hex")

/** Shape check before any lookup: a malformed token never reaches the database. */
export const looksLikeApiKey = (token: string): boolean => KEY_BODY.test(token)

/** A row of `api_keys` (migrations/0001): `bigint` ids read as decimal text, `bytea` as bytes. */
const Row = Schema.Struct({
  id: Schema.String,
  key_hash: Schema.Uint8Array,
  prefix: Schema.String,
  site: Schema.String,
  scopes: CredentialInfo.fields.scopes,
  content_limit: CredentialInfo.fields.content_limit,
  user_id: Schema.NullOr(Schema.String),
  created_at: Schema.Date,
  revoked_at: Schema.NullOr(Schema.Date)
})
type Row = typeof Row.Type

const toRecord = (row: Row): ApiKeyRecord => ({
  id: row.id,
  prefix: row.prefix,
  site: row.site,
  scopes: row.scopes,
  contentLimit: row.content_limit,
  userId: row.user_id === null ? null : Number(row.user_id),
  createdAt: row.created_at,
  revokedAt: row.revoked_at
})

/**
 * Tells every server process about keys as their transactions commit: the payload is a revoked
 * key's id, or `+<id>:<sha256 hex>` for a new key (the hash of a 256-bit random key reveals nothing
 * of it; the table holds the same).
 */
export const API_KEYS_CHANNEL = "shiori_api_keys"

/** `+<id>:<hash>`: a key created; anything else is a revoked key's id. */
export const parseKeyNotification = (
  payload: string
): { readonly created: true; readonly id: string; readonly hash: string } | {
  readonly created: false
  readonly id: string
} => {
  const created = /^\+([0-9]+):([0-9a-f]{64})$/.exec(payload)
  return created === null ? { created: false, id: payload } : { created: true, id: created[1]!, hash: created[2]! }
}

/** Lookups of an API key that reached the database (process-wide). */
export const apiKeyLookups = Metric.counter("catalog_api_key_lookups", {
  description: "API keys looked up in the database (a verified key is then cached; an unknown one refused)"
})

export class ApiKeys extends Context.Service<ApiKeys>()("catalog/ApiKeys", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = sql`id::text AS id, key_hash, prefix, site, scopes, content_limit, user_id::text AS user_id,
      created_at, revoked_at`
    const insertKey = SqlSchema.findOne({
      Request: Schema.Struct({
        hash: Schema.Uint8Array,
        prefix: Schema.String,
        site: Schema.String,
        scopes: Schema.Array(Schema.String),
        contentLimit: Row.fields.content_limit,
        userId: Schema.NullOr(Schema.Number)
      }),
      Result: Row,
      execute: (key) =>
        sql`
          INSERT INTO api_keys (key_hash, prefix, site, scopes, content_limit, user_id)
          VALUES (${key.hash}, ${key.prefix}, ${key.site}, ${key.scopes}, ${key.contentLimit}, ${key.userId})
          RETURNING ${columns}
        `
    })
    const listKeys = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Row,
      execute: () => sql`SELECT ${columns} FROM api_keys ORDER BY api_keys.id`
    })
    const revokeKey = SqlSchema.findOneOption({
      Request: Schema.String,
      Result: Row,
      execute: (id) =>
        sql`UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${id} RETURNING ${columns}`
    })
    const liveKeys = SqlSchema.findAll({
      Request: Schema.Void,
      Result: Schema.Struct({ id: Schema.String, key_hash: Schema.Uint8Array }),
      execute: () => sql`SELECT id::text AS id, key_hash FROM api_keys WHERE revoked_at IS NULL`
    })
    const liveKey = SqlSchema.findOneOption({
      Request: Schema.Uint8Array,
      Result: Row,
      execute: (hash) => sql`SELECT ${columns} FROM api_keys WHERE key_hash = ${hash} AND revoked_at IS NULL`
    })

    const create = Effect.fn("ApiKeys.create")(function*(input: {
      readonly site: string
      readonly scopes: ReadonlyArray<string>
      readonly contentLimit: ContentLimit
      readonly userId: number | null
    }) {
      if (!Schema.is(SiteName)(input.site)) {
        return yield* new ApiKeyInputError({ message: `site must match ^[a-z][a-z0-9_]*$ (max 64): ${input.site}` })
      }
      const unknown = input.scopes.filter((s) => !(Scopes as ReadonlyArray<string>).includes(s))
      if (unknown.length > 0 || input.scopes.length === 0) {
        return yield* new ApiKeyInputError({
          message: `scopes must be a non-empty subset of: ${Scopes.join(", ")}` +
            (unknown.length > 0 ? ` (unknown: ${unknown.join(", ")})` : "")
        })
      }
      const key = KEY_PREFIX + Crypto.randomBytes(32).toString("base64url")
      const scopes = [...new Set(input.scopes)]
      const hash = hashKey(key)
      const row = yield* sql.withTransaction(Effect.gen(function*() {
        const row = yield* insertKey({
          hash,
          prefix: key.slice(3, 11),
          site: input.site,
          scopes,
          contentLimit: input.contentLimit,
          userId: input.userId
        })
        // Every server process learns the key is live (auth/Authorization.ts, the failed-credential throttle).
        yield* sql`SELECT pg_notify(${API_KEYS_CHANNEL}, ${`+${row.id}:${hash.toString("hex")}`})`
        return row
      })).pipe(Effect.orDie)
      return { key: Redacted.make(key), record: toRecord(row) }
    })

    const list = Effect.fn("ApiKeys.list")(function*() {
      const rows = yield* listKeys(undefined).pipe(Effect.orDie)
      return rows.map(toRecord)
    })

    /** Revokes and tells every server process to forget the key at once. */
    const revoke = Effect.fn("ApiKeys.revoke")(function*(id: string) {
      if (!/^[0-9]{1,18}$/.test(id)) return Option.none<ApiKeyRecord>()
      return yield* sql.withTransaction(Effect.gen(function*() {
        const row = yield* revokeKey(id)
        if (Option.isNone(row)) return Option.none<ApiKeyRecord>()
        yield* sql`SELECT pg_notify(${API_KEYS_CHANNEL}, ${id})`
        return Option.some(toRecord(row.value))
      })).pipe(Effect.orDie)
    })

    /** Hashes (hex) of every live key, by id: what the server processes know as live. */
    const liveHashes = Effect.fn("ApiKeys.liveHashes")(function*() {
      const rows = yield* liveKeys(undefined).pipe(Effect.orDie)
      return rows.map((row) => ({ id: row.id, hash: Buffer.from(row.key_hash).toString("hex") }))
    })

    /** The live key behind a token, compared in constant time. */
    const findLive = Effect.fn("ApiKeys.findLive")(function*(token: string) {
      if (!looksLikeApiKey(token)) return Option.none<ApiKeyRecord>()
      yield* Metric.update(apiKeyLookups, 1)
      const hash = hashKey(token)
      const row = yield* liveKey(hash).pipe(Effect.orDie)
      if (Option.isNone(row) || !Crypto.timingSafeEqual(row.value.key_hash, hash)) {
        return Option.none<ApiKeyRecord>()
      }
      return Option.some(toRecord(row.value))
    })

    return { create, list, revoke, findLive, liveHashes } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
