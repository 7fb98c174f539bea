/**
 * Taking NOTIFY listeners (src/platform/Notifications.ts) down in the test's database: their backends
 * are terminated and the database refuses new connections until `during` has run, so whatever
 * `during` does happens while nobody listens, and the listeners reconnect only afterwards.
 */
import { expect } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { inject } from "vitest"
import { quoteIdentifier, withPgClient } from "../../src/platform/Database.js"
import { listenerApplicationName } from "../../src/platform/Notifications.js"
import { eventually } from "./Eventually.js"

/** The backends listening on `channel` in this database. */
export const listenerBackends = (channel: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ pid: number }>`
        SELECT pid FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = ${listenerApplicationName(channel)}
      `.pipe(Effect.orDie)
  )

/**
 * Waits until a listener on `channel` is connected, and returns the backend pids of all of them (two
 * services of one test file may listen on the same channel in its database).
 */
export const awaitListeners = (channel: string) =>
  eventually(Effect.map(listenerBackends(channel), (rows) => {
    expect(rows.length, `listeners on ${channel}`).toBeGreaterThan(0)
    return rows.map((row) => row.pid)
  }))

/**
 * Runs `during` while the listeners on `channel` are down: the database stops accepting connections,
 * their backends are terminated (and gone), `during` runs on the pool's open connections,
 * then connections are allowed again. Warm the pool first if `during` needs several connections.
 */
export const withListenerDown = <A, E, R>(channel: string, during: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    yield* awaitListeners(channel)
    const [{ name }] = yield* sql<{ name: string }>`SELECT current_database() AS name`.pipe(Effect.orDie)
    // PostgreSQL refuses to shut the current database from inside it: from the admin database.
    const allow = (allowed: boolean) =>
      withPgClient(
        Redacted.make(inject("pgAdminUrl")),
        (client) => client.query(`ALTER DATABASE ${quoteIdentifier(name)} ALLOW_CONNECTIONS ${allowed}`)
      )
    return yield* Effect.gen(function*() {
      yield* allow(false)
      // Every listener on the channel, including one that connected since: none may reconnect now.
      const terminated = yield* sql<{ terminated: boolean }>`
        SELECT pg_terminate_backend(pid) AS terminated FROM pg_stat_activity
        WHERE datname = current_database() AND application_name = ${listenerApplicationName(channel)}
      `.pipe(Effect.orDie)
      expect(terminated.length).toBeGreaterThan(0)
      expect(terminated.every((row) => row.terminated)).toBe(true)
      yield* eventually(Effect.map(listenerBackends(channel), (rows) => expect(rows).toEqual([])))
      return yield* during
    }).pipe(Effect.ensuring(allow(true)))
  })
