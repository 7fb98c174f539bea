/**
 * Catalog API keys (docs/api-contract.md, "Credentials, scopes and the content limit"): 256 random
 * bits shown once as `sk_<base64url>`, stored as a sha256 hash, bound to a site, a scope set and a
 * content limit.
 */
import { Context, Data, Effect, Layer, Option, Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import type { Scope } from "../../../schema/Annotations.js"
import { Scopes } from "../../../schema/Annotations.js"
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

export const hashKey = (key: string): Buffer => Crypto.createHash("sha256").update(key).digest()

/** Shape check before any lookup: a malformed token never reaches the database. */
export const looksLikeApiKey = (token: string): boolean => KEY_BODY.test(token)

interface Row {
  readonly id: string
  readonly key_hash: Buffer
  readonly prefix: string
  readonly site: string
  readonly scopes: ReadonlyArray<string>
  readonly content_limit: ContentLimit
  readonly user_id: string | null
  readonly created_at: Date
  readonly revoked_at: Date | null
}

const toRecord = (row: Row): ApiKeyRecord => ({
  id: String(row.id),
  prefix: row.prefix,
  site: row.site,
  scopes: row.scopes as ReadonlyArray<Scope>,
  contentLimit: row.content_limit,
  userId: row.user_id === null ? null : Number(row.user_id),
  createdAt: row.created_at,
  revokedAt: row.revoked_at
})

export const API_KEYS_CHANNEL = "shiori_api_keys"

export class ApiKeys extends Context.Service<ApiKeys>()("catalog/ApiKeys", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

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
      const [row] = yield* sql<Row>`
        INSERT INTO api_keys (key_hash, prefix, site, scopes, content_limit, user_id)
        VALUES (${hashKey(key)}, ${key.slice(3, 11)}, ${input.site}, ${scopes}, ${input.contentLimit}, ${input.userId})
        RETURNING *
      `.pipe(Effect.orDie)
      return { key: Redacted.make(key), record: toRecord(row!) }
    })

    const list = Effect.fn("ApiKeys.list")(function*() {
      const rows = yield* sql<Row>`SELECT * FROM api_keys ORDER BY id`.pipe(Effect.orDie)
      return rows.map(toRecord)
    })

    /** Revokes and tells every server process to forget the key at once. */
    const revoke = Effect.fn("ApiKeys.revoke")(function*(id: string) {
      if (!/^[0-9]{1,18}$/.test(id)) return Option.none<ApiKeyRecord>()
      return yield* sql.withTransaction(Effect.gen(function*() {
        const rows = yield* sql<Row>`
          UPDATE api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = ${id} RETURNING *
        `
        if (rows.length === 0) return Option.none<ApiKeyRecord>()
        yield* sql`SELECT pg_notify(${API_KEYS_CHANNEL}, ${id})`
        return Option.some(toRecord(rows[0]!))
      })).pipe(Effect.orDie)
    })

    /** The live key behind a token, compared in constant time. */
    const findLive = Effect.fn("ApiKeys.findLive")(function*(token: string) {
      if (!looksLikeApiKey(token)) return Option.none<ApiKeyRecord>()
      const hash = hashKey(token)
      const rows = yield* sql<Row>`
        SELECT * FROM api_keys WHERE key_hash = ${hash} AND revoked_at IS NULL
      `.pipe(Effect.orDie)
      const row = rows[0]
      if (row === undefined || !Crypto.timingSafeEqual(Buffer.from(row.key_hash), hash)) {
        return Option.none<ApiKeyRecord>()
      }
      return Option.some(toRecord(row))
    })

    return { create, list, revoke, findLive } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
