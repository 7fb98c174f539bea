/**
 * The LISTEN helper (src/platform/Notifications.ts): `onConnected` runs once LISTEN is in force
 * (a NOTIFY sent from inside it is delivered), before that connection's notifications, and again
 * after every reconnection; the connection ends with the scope.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { keepListening } from "../../src/platform/Notifications.js"
import { eventually } from "../support/Eventually.js"
import { awaitListeners, listenerBackends, withListenerDown } from "../support/Listeners.js"
import { TestSqlLive } from "../support/TestDatabase.js"
import { serverLayerOptions, testConfig } from "../support/TestServers.js"

const Env = TestSqlLive.pipe(Layer.provide(testConfig()))

describe("LISTEN with reconnects (platform/Notifications.ts)", () => {
  it.layer(Env, serverLayerOptions("60 seconds"))((it) => {
    it.effect("onConnected runs after LISTEN is in force, before the connection's notifications, on every (re)connection", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const channel = "test_listener_reconnects"
        const events: Array<string> = []
        let connections = 0
        yield* Effect.scoped(Effect.gen(function*() {
          yield* keepListening(channel, {
            // A NOTIFY committed here is only heard if LISTEN is already in force.
            onConnected: Effect.suspend(() => {
              connections++
              events.push(`connected ${connections}`)
              return sql`SELECT pg_notify(${channel}, ${`probe ${connections}`})`.pipe(Effect.orDie)
            }),
            onNotification: (payload) => Effect.sync(() => void events.push(payload))
          })
          yield* eventually(Effect.sync(() => expect(events).toEqual(["connected 1", "probe 1"])))
          yield* sql`SELECT pg_notify(${channel}, 'hello')`
          yield* eventually(Effect.sync(() => expect(events).toEqual(["connected 1", "probe 1", "hello"])))

          // Sent while nobody listens: lost, which is why onConnected runs again after the reconnection.
          yield* withListenerDown(channel, sql`SELECT pg_notify(${channel}, 'lost')`)
          yield* eventually(
            Effect.sync(() => expect(events).toEqual(["connected 1", "probe 1", "hello", "connected 2", "probe 2"]))
          )
          yield* sql`SELECT pg_notify(${channel}, 'again')`
          yield* eventually(Effect.sync(() => expect(events.at(-1)).toBe("again")))
          yield* awaitListeners(channel)
        }))
        // The scope closed: the connection is gone.
        yield* eventually(Effect.map(listenerBackends(channel), (rows) => expect(rows).toEqual([])))
      }))
  })
})
