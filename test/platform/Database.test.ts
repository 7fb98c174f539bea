/**
 * The shared pool (docs/decisions.md, "Operations"; README, "Configuration"):
 * - a statement that runs past `DATABASE_STATEMENT_TIMEOUT_SECONDS` is cancelled by PostgreSQL
 *   (SQLSTATE 57014), so a request that runs to completion after its client hung up cannot hold a
 *   connection, or shutdown, forever; the pool stays usable afterwards;
 * - statements go as named prepared statements, parsed and planned once per connection
 *   (@effect/sql-pg's statement cache);
 * - a statement of a database that answers runs past `DATABASE_QUERY_TIMEOUT_SECONDS`: that deadline
 *   closes connections only when a probe finds the database frozen (docs/deploying.md, "When the
 *   database misbehaves"; the frozen case is test/platform/FrozenDatabase.test.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { SqlClient, type SqlError } from "effect/sql"
import { SqlLive } from "../../src/platform/Database.js"
import { TestDatabaseUrlLive } from "../support/TestDatabase.js"

const sqlWith = (settings: Record<string, string>) =>
  Layer.fresh(SqlLive).pipe(
    Layer.provide(TestDatabaseUrlLive),
    Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: settings })))
  )

describe("SqlLive statement timeout", () => {
  it.layer(sqlWith({ DATABASE_STATEMENT_TIMEOUT_SECONDS: "0.3" }), { timeout: "60 seconds" })((it) => {
    it.effect("cancels a statement past the limit (57014); the next statement on the pool runs", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const slow = yield* Effect.result(sql`SELECT pg_sleep(3)`)
        expect(slow._tag).toBe("Failure")
        if (slow._tag === "Failure") {
          expect(((slow.failure as SqlError.SqlError).reason.cause as { code?: string }).code).toBe("57014")
        }
        const [row] = yield* sql<{ timeout: string }>`SELECT current_setting('statement_timeout') AS timeout`
        expect(row!.timeout).toBe("300ms")
      }))
  })

  it.layer(sqlWith({}), { timeout: "60 seconds" })((it) => {
    it.effect("a statement is prepared once per connection under one name, however often it runs", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // One transaction: one connection, whose prepared statements the last statement lists.
        const prepared = yield* Effect.gen(function*() {
          for (const n of [1, 2, 3]) yield* sql`SELECT ${n}::int AS n, 'prepared-probe' AS probe`
          yield* sql`SELECT 'unprepared-probe' AS probe`
          return yield* sql<{ name: string; statement: string }>`
            SELECT name, statement FROM pg_prepared_statements WHERE statement LIKE ${"%-probe%"} AND name <> ''`
        }).pipe(sql.withTransaction)
        expect(prepared.filter((p) => p.statement.includes("'prepared-probe'"))).toEqual([
          { name: expect.any(String), statement: expect.stringContaining("SELECT $1::int") }
        ])
        // sql-pg prepares statements without parameters as well: one entry, however often it runs.
        expect(prepared.filter((p) => p.statement.includes("'unprepared-probe'"))).toHaveLength(1)
      }))
  })

  it.layer(sqlWith({ DATABASE_STATEMENT_TIMEOUT_SECONDS: "0" }), { timeout: "60 seconds" })((it) => {
    it.effect("0 turns the limit off", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ timeout: string }>`SELECT current_setting('statement_timeout') AS timeout`
        expect(row!.timeout).toBe("0")
      }))
  })
})

describe("SqlLive idle-in-transaction limit (docs/change-feed.md)", () => {
  it.layer(sqlWith({}), { timeout: "60 seconds" })((it) => {
    it.effect("pool sessions default to idle_in_transaction_session_timeout = 60 s", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const [row] = yield* sql<{ timeout: string }>`
          SELECT current_setting('idle_in_transaction_session_timeout') AS timeout`
        expect(row!.timeout).toBe("1min")
      }))
  })

  it.layer(sqlWith({ DATABASE_IDLE_IN_TRANSACTION_SECONDS: "0.3" }), { timeout: "60 seconds" })((it) => {
    it.effect("PostgreSQL ends a session left idle in its transaction; the pool goes on serving", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const abandoned = yield* Effect.exit(
          sql`SELECT 1`.pipe(
            // Idleness inside the transaction is the subject here, so this pause is real time.
            Effect.andThen(Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 1_000)))),
            Effect.andThen(sql`SELECT 2`),
            sql.withTransaction
          )
        )
        expect(abandoned._tag).toBe("Failure")
        const [row] = yield* sql<{ n: number }>`SELECT 3::int AS n`
        expect(row!.n).toBe(3)
      }))
  })
})

describe("SqlLive query deadline (docs/deploying.md, \"When the database misbehaves\")", () => {
  it.layer(sqlWith({ DATABASE_QUERY_TIMEOUT_SECONDS: "0.3" }), { timeout: "60 seconds" })((it) => {
    it.effect("a slow statement, alone or in a transaction, runs to its end while the database answers", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        // Silent for several deadlines in a row: each time the probe is answered.
        const [alone] = yield* sql<{ done: boolean }>`SELECT pg_sleep(1.5) IS NOT NULL AS done`
        expect(alone!.done).toBe(true)
        const inTransaction = yield* Effect.gen(function*() {
          yield* sql`SELECT pg_sleep(1)`
          const [row] = yield* sql<{ n: number }>`SELECT 1::int AS n`
          return row!.n
        }).pipe(sql.withTransaction)
        expect(inTransaction).toBe(1)
      }))
  })
})
