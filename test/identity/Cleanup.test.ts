/**
 * The identity cleanup job (src/identity/cleanup/Cleanup.ts): a run deletes authorization codes,
 * sessions, refresh families and refresh tokens that died more than a day ago, rotated refresh tokens
 * older than the idle timeout, and rate limit rows untouched for a day; live rows stay. Batches are
 * small here (2) so a run needs several, and two runs at once (two processes) share the work.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { IdentityCleanup } from "../../src/identity/cleanup/Cleanup.js"
import { IdentityConfig } from "../../src/identity/shared/IdentityConfig.js"
import { TestSqlLive } from "../support/TestDatabase.js"

const Env = IdentityCleanup.layer.pipe(
  Layer.provide(IdentityConfig.layer),
  Layer.provideMerge(TestSqlLive),
  Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({
    env: { IDENTITY_CLEANUP_INTERVAL_SECONDS: "0", IDENTITY_CLEANUP_BATCH_SIZE: "2" }
  })))
)

/** `now() + <offset>` as SQL. */
const at = (sql: SqlClient.SqlClient, offset: string) => sql`now() + ${offset}::interval`

const seed = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [user] = yield* sql<{ id: string }>`
    INSERT INTO users (sub, email, password_hash) VALUES (gen_random_uuid(), 'cleanup@example.com', 'x')
    RETURNING id
  `
  const userId = user!.id
  yield* sql`
    INSERT INTO oauth_clients (client_id, name, redirect_uris) VALUES ('cleanup', 'Cleanup', ARRAY['https://rp.example/cb'])
  `
  const session = (id: string, expires: string, ended: string | null) =>
    sql`
      INSERT INTO sessions (id, user_id, auth_time, expires_at, ended_at)
      VALUES (${id}, ${userId}, now(), ${at(sql, expires)}, ${ended === null ? null : at(sql, ended)})
    `
  yield* session("s-expired-1", "-2 days", null)
  yield* session("s-expired-2", "-3 days", null)
  yield* session("s-expired-3", "-30 days", null)
  yield* session("s-ended", "+80 days", "-2 days")
  yield* session("s-expired-recently", "-1 hour", null)
  yield* session("s-live", "+80 days", null)

  const code = (hash: string, expires: string) =>
    sql`
      INSERT INTO authorization_codes (code_hash, client_id, user_id, redirect_uri, auth_time, expires_at)
      VALUES (${hash}, 'cleanup', ${userId}, 'https://rp.example/cb', now(), ${at(sql, expires)})
    `
  for (const hash of ["c-old-1", "c-old-2", "c-old-3"]) yield* code(hash, "-2 days")
  yield* code("c-live", "+10 minutes")

  const family = (id: string, expires: string, revoked: string | null) =>
    sql`
      INSERT INTO refresh_families (id, client_id, user_id, auth_time, expires_at, revoked_at)
      VALUES (${id}::uuid, 'cleanup', ${userId}, now(), ${at(sql, expires)}, ${
      revoked === null ? null : at(sql, revoked)
    })
    `
  const token = (hash: string, familyId: string, expires: string, rotated: string | null) =>
    sql`
      INSERT INTO refresh_tokens (token_hash, family_id, client_id, user_id, auth_time, expires_at, rotated_at)
      VALUES (${hash}, ${familyId}::uuid, 'cleanup', ${userId}, now(), ${at(sql, expires)}, ${
      rotated === null ? null : at(sql, rotated)
    })
    `
  const expiredFamily = "00000000-0000-4000-8000-000000000001"
  const revokedFamily = "00000000-0000-4000-8000-000000000002"
  const liveFamily = "00000000-0000-4000-8000-000000000003"
  yield* family(expiredFamily, "-2 days", null)
  for (const hash of ["t-expired-1", "t-expired-2", "t-expired-3"]) yield* token(hash, expiredFamily, "-2 days", null)
  yield* family(revokedFamily, "+80 days", "-2 days")
  yield* token("t-revoked", revokedFamily, "+80 days", null)
  yield* family(liveFamily, "+80 days", null)
  yield* token("t-rotated-long-ago", liveFamily, "+80 days", "-40 days")
  yield* token("t-rotated-recently", liveFamily, "+80 days", "-1 hour")
  yield* token("t-current", liveFamily, "+80 days", null)

  const bucket = (key: string, touched: string) =>
    sql`INSERT INTO rate_limit_buckets (key, tokens, updated_at) VALUES (${key}, 1, ${at(sql, touched)})`
  for (const key of ["b-old-1", "b-old-2", "b-old-3"]) yield* bucket(key, "-2 days")
  yield* bucket("b-fresh", "-1 minute")

  const pending = (nonce: string, expires: string) =>
    sql`
      INSERT INTO pending_sign_ins (nonce, user_id, password_digest, expires_at)
      VALUES (${nonce.padEnd(22, "0")}, ${userId}, sha256('x'::bytea), ${at(sql, expires)})
    `
  for (const nonce of ["p-old-1", "p-old-2", "p-old-3"]) yield* pending(nonce, "-2 days")
  yield* pending("p-live", "+5 minutes")
})

const keys = (table: string, column: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ k: string }>`SELECT ${sql(column)}::text AS k FROM ${sql(table)} ORDER BY 1`,
      (rows) => rows.map((row) => row.k)
    ))

describe("identity cleanup job", () => {
  it.layer(Env, { timeout: "60 seconds" })((it) => {
    it.effect("expired and dead rows vanish after a run, live ones stay; concurrent runs share the work", () =>
      Effect.gen(function*() {
        yield* seed
        const cleanup = yield* IdentityCleanup
        const [a, b] = yield* Effect.all([cleanup.run(), cleanup.run()], { concurrency: 2 })
        const total = (key: keyof typeof a) => a[key] + b[key]
        expect(total("sessions")).toBe(4)
        expect(total("authorizationCodes")).toBe(3)
        expect(total("refreshFamilies")).toBe(2)
        expect(total("refreshTokens")).toBe(5)
        expect(total("rateLimitBuckets")).toBe(3)
        expect(total("pendingSignIns")).toBe(3)

        expect(yield* keys("sessions", "id")).toEqual(["s-expired-recently", "s-live"])
        expect(yield* keys("authorization_codes", "code_hash")).toEqual(["c-live"])
        expect(yield* keys("refresh_families", "id")).toEqual(["00000000-0000-4000-8000-000000000003"])
        expect(yield* keys("refresh_tokens", "token_hash")).toEqual(["t-current", "t-rotated-recently"])
        expect(yield* keys("rate_limit_buckets", "key")).toEqual(["b-fresh"])
        expect(yield* keys("pending_sign_ins", "nonce")).toEqual(["p-live".padEnd(22, "0")])

        // Nothing left to do: a second run deletes nothing.
        expect(yield* cleanup.run()).toEqual({
          authorizationCodes: 0,
          sessions: 0,
          refreshFamilies: 0,
          refreshTokens: 0,
          rateLimitBuckets: 0,
          mailOutbox: 0,
          emailCodes: 0,
          avatars: 0,
          pendingSignIns: 0
        })
      }))
  })
})
