/**
 * With the database unreachable, `/readyz` and any operation that needs the database answer 503
 * SERVICE_UNAVAILABLE with Retry-After; `/healthz` stays 200 (docs/api-contract.md, "Errors: catalog
 * problem documents"; docs/decisions.md, "Operations").
 */
import { PgClient } from "@effect/sql-pg"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { DatabaseProxy, DatabaseProxyLive } from "../support/DatabaseProxy.js"
import { ProbeServer, ProbeServerLive } from "../support/ProbeApi.js"
import { expectProblem } from "../support/Problems.js"
import { TestDatabaseUrlLive } from "../support/TestDatabase.js"
import { serverLayerOptions, testConfig, TestServers, TestServersLive } from "../support/TestServers.js"

const SqlThroughProxy = Layer.unwrap(
  Effect.map(DatabaseProxy, ({ url }) => PgClient.layer({ url, maxConnections: 4, connectTimeout: "1 second" }))
).pipe(Layer.orDie)

const Env = Layer.mergeAll(
  TestServersLive,
  ProbeServerLive.pipe(Layer.provide(SqlThroughProxy))
).pipe(Layer.provideMerge(DatabaseProxyLive.pipe(Layer.provide(TestDatabaseUrlLive))), Layer.provide(testConfig()))

describe("database unreachable (SERVICE_UNAVAILABLE, docs/api-contract.md, \"Errors: catalog problem documents\")", () => {
  it.layer(Env, serverLayerOptions("60 seconds"))((it) => {
    it.effect("queries fail over a cut connection: 503 with Retry-After, never 500", () =>
      Effect.gen(function*() {
        const probe = yield* ProbeServer
        const proxy = yield* DatabaseProxy
        const before = yield* Effect.promise(() => fetch(`${probe}/probe/database`))
        expect(before.status).toBe(200)
        proxy.cut()
        const res = yield* Effect.promise(() => fetch(`${probe}/probe/database`))
        expect(res.headers.get("retry-after")).toBe("5")
        yield* Effect.promise(() => expectProblem(res, "SERVICE_UNAVAILABLE", "/probe/database"))
      }))

    it.effect("readyz is 503 when the database does not answer; healthz stays 200", () =>
      Effect.gen(function*() {
        const probe = yield* ProbeServer
        const ready = yield* Effect.promise(() => fetch(`${probe}/readyz`))
        expect(ready.headers.get("retry-after")).toBe("5")
        yield* Effect.promise(() => expectProblem(ready, "SERVICE_UNAVAILABLE", "/readyz"))
        const health = yield* Effect.promise(() => fetch(`${probe}/healthz`))
        expect(health.status).toBe(200)
        // The real server over a live database stays ready.
        const { catalog } = yield* TestServers
        expect((yield* Effect.promise(() => fetch(`${catalog}/readyz`))).status).toBe(200)
      }))
  })
})
