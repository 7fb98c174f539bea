/**
 * Which database failures are transient (503 SERVICE_UNAVAILABLE with Retry-After; docs/api-contract.md,
 * "Errors: catalog problem documents"): `isDatabaseUnavailable` tells them by SQLSTATE, system error code
 * and @effect/sql-pg's reason, never by message. Each case here is the error @effect/sql-pg really
 * produces, against the test database or a socket standing in for an unreachable one (so the tests run
 * on the real clock: `it.live`).
 */
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Layer, Redacted, Schedule } from "effect"
import { SqlClient } from "effect/sql"
import * as Net from "node:net"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { isDatabaseUnavailable } from "../../src/platform/SqlState.js"
import { TestDatabaseUrlLive } from "../support/TestDatabase.js"

/** The error a statement failed with, wherever in its cause it is. */
const failureOf = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    expect(exit._tag).toBe("Failure")
    return Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
  })

/** A local port with nothing listening on it. */
const closedPort = Effect.promise(() =>
  new Promise<number>((resolve) => {
    const server = Net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const port = (server.address() as Net.AddressInfo).port
      server.close(() => resolve(port))
    })
  })
)

/** A server that accepts connections and never answers, like a database host that hangs. */
const silentServer = Effect.acquireRelease(
  Effect.promise(() =>
    new Promise<{ readonly server: Net.Server; readonly sockets: Set<Net.Socket> }>((resolve) => {
      const sockets = new Set<Net.Socket>()
      const server = Net.createServer((socket) => void sockets.add(socket))
      server.listen(0, "127.0.0.1", () => resolve({ server, sockets }))
    })
  ),
  ({ server, sockets }) =>
    Effect.sync(() => {
      for (const socket of sockets) socket.destroy()
      server.close()
    })
).pipe(Effect.map(({ server }) => (server.address() as Net.AddressInfo).port))

const selectOneAt = (port: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SELECT 1`).pipe(
    Effect.provide(
      PgClient.layer({ url: Redacted.make(`postgres://shiori@127.0.0.1:${port}/shiori`), connectTimeout: "300 millis" })
    )
  )

const TestSql = Layer.unwrap(
  Effect.map(DatabaseUrl, (url) => PgClient.layer({ url, maxConnections: 4 }))
).pipe(Layer.provide(TestDatabaseUrlLive), Layer.orDie)

describe("isDatabaseUnavailable (src/platform/SqlState.ts)", () => {
  it.effect("a refused connection (ECONNREFUSED) is unavailable", () =>
    Effect.gen(function*() {
      const error = yield* failureOf(Effect.flatMap(closedPort, selectOneAt))
      expect(isDatabaseUnavailable(error)).toBe(true)
    }))

  it.live("a connection not made within connectTimeout is unavailable", () =>
    Effect.gen(function*() {
      const error = yield* failureOf(Effect.flatMap(silentServer, selectOneAt))
      expect(isDatabaseUnavailable(error)).toBe(true)
    }).pipe(Effect.scoped))

  it.live("a statement cancelled by statement_timeout (57014) is unavailable", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const error = yield* failureOf(
        sql`SET LOCAL statement_timeout = 100`.pipe(Effect.andThen(sql`SELECT pg_sleep(5)`), sql.withTransaction)
      )
      expect(isDatabaseUnavailable(error)).toBe(true)
    }).pipe(Effect.provide(TestSql)))

  it.live("a session the server terminates (pg_terminate_backend) is unavailable", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const victim = yield* Effect.forkChild(sql`SELECT pg_sleep(30)`)
      const [found] = yield* sql<{ pid: number }>`
        SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND query LIKE '%pg_sleep(30)%' AND state = 'active'
          AND pid <> pg_backend_pid()
      `.pipe(
        Effect.filterOrFail((rows) => rows.length > 0),
        Effect.retry(Schedule.spaced("20 millis"))
      )
      yield* sql`SELECT pg_terminate_backend(${found!.pid})`
      const exit = yield* Fiber.await(victim)
      expect(exit._tag).toBe("Failure")
      expect(isDatabaseUnavailable(Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined)).toBe(true)
    }).pipe(Effect.provide(TestSql)))

  it.live("a wrong statement (42601) or a unique violation (23505) is not", () =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      expect(isDatabaseUnavailable(yield* failureOf(sql.unsafe("SELEC 1")))).toBe(false)
      const duplicate = yield* failureOf(
        sql`CREATE TEMP TABLE once (id int PRIMARY KEY)`.pipe(
          Effect.andThen(sql`INSERT INTO once VALUES (1), (1)`),
          sql.withTransaction
        )
      )
      expect(isDatabaseUnavailable(duplicate)).toBe(false)
      expect(isDatabaseUnavailable(new Error("Connection terminated"))).toBe(false)
    }).pipe(Effect.provide(TestSql)))
})
