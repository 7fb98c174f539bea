/**
 * What the write platform keeps, and for how long (docs/writing.md): stored answers 24 hours, quota
 * days until the day after, request budgets until a day untouched. The sweep every catalog process
 * runs removes the rest, and nothing else: the identity provider's buckets are its own job's.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { ReadCache } from "../../src/catalog/shared/ReadCache.js"
import { Writes } from "../../src/catalog/writes/Writes.js"
import { TestSqlLive } from "../support/TestDatabase.js"
import { serverLayerOptions } from "../support/TestServers.js"

const WritesLive = Writes.layer.pipe(Layer.provide(ReadCache.layer), Layer.provideMerge(TestSqlLive))

describe("the write platform's sweep (docs/writing.md, \"The write runner\", \"Limits\")", () => {
  layer(WritesLive, serverLayerOptions())((it) => {
    it.effect("answers older than 24 h, past quota days and idle catalog budgets go; the rest stays (docs/writing.md, \"The write runner\")", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const writes = yield* Writes
        yield* sql`
          INSERT INTO catalog_idempotency (scope, key, fingerprint, status, body, created_at) VALUES
            ('key:1', 'old', '\\x00', 201, '{}', now() - interval '25 hours'),
            ('key:1', 'new', '\\x00', 201, '{}', now() - interval '23 hours')`
        yield* sql`
          INSERT INTO catalog_quota_usage (site, kind, day, used) VALUES
            ('s', 'claims', (now() AT TIME ZONE 'UTC')::date - 2, 5),
            ('s', 'claims', (now() AT TIME ZONE 'UTC')::date - 1, 5),
            ('s', 'claims', (now() AT TIME ZONE 'UTC')::date, 5)`
        yield* sql`
          INSERT INTO rate_limit_buckets (key, tokens, updated_at) VALUES
            ('catalog:key:1', 1, now() - interval '2 days'),
            ('catalog:key:2', 1, now() - interval '1 hour'),
            ('token:portal', 1, now() - interval '2 days')`
        yield* writes.sweep
        const keys = yield* sql<{ key: string }>`SELECT key FROM catalog_idempotency ORDER BY key`
        expect(keys.map((r) => r.key)).toEqual(["new"])
        const days = yield* sql<{ age: number }>`
          SELECT ((now() AT TIME ZONE 'UTC')::date - day)::int AS age FROM catalog_quota_usage ORDER BY day`
        expect(days.map((r) => r.age)).toEqual([1, 0])
        const buckets = yield* sql<{ key: string }>`SELECT key FROM rate_limit_buckets ORDER BY key`
        expect(buckets.map((r) => r.key)).toEqual(["catalog:key:2", "token:portal"])
      }).pipe(Effect.orDie))
  })
})
