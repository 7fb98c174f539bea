/**
 * The pool's places under a race (docs/deploying.md, "When the database misbehaves"): checkouts that
 * finish, fail, run out of time in the queue or are interrupted while queued or while holding a
 * connection leave no place taken and none given twice. Afterwards nothing is counted as used or
 * waiting, every connection can be held at once, and one checkout more runs out of time in the queue
 * with `PoolExhausted`, rather than waiting inside the pool.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Cause, Deferred, Duration, Effect, Exit, Fiber, Random } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { isPoolExhausted, makeCheckedClient, makePool } from "../../src/platform/PoolCheckout.js"
import { TestDatabaseUrlLive } from "../support/TestDatabase.js"
import { serverLayerOptions } from "../support/TestServers.js"

const SIZE = 3

const makeClient = Effect.gen(function*() {
  const config = { url: yield* DatabaseUrl, maxConnections: SIZE, connectionTTL: Duration.minutes(15) }
  const pool = yield* makePool(config, { name: "primary", timeout: Duration.millis(200) })
  return { pool, sql: yield* makeCheckedClient(config, pool) }
})

const failedBecauseFull = (exit: Exit.Exit<unknown, unknown>) =>
  Exit.isFailure(exit) && exit.cause.reasons.some((reason) => reason._tag === "Fail" && isPoolExhausted(reason.error))

describe("the pool's places under a race (docs/deploying.md, \"When the database misbehaves\")", () => {
  layer(TestDatabaseUrlLive, serverLayerOptions())((it) => {
    it.effect("statements, transactions, timeouts and interruptions leave the pool whole", () =>
      Effect.gen(function*() {
        const { pool, sql } = yield* makeClient
        const work = (i: number) =>
          Effect.gen(function*() {
            const sleep = (yield* Random.nextIntBetween(0, 8)) / 1000
            const kind = i % 5
            const run = kind === 0
              ? sql.withTransaction(Effect.andThen(sql`SELECT pg_sleep(${sleep})`, sql`SELECT ${i}::int AS i`))
              : kind === 1
              ? sql`SELECT 1/0 AS fails`
              : sql`SELECT pg_sleep(${sleep}), ${i}::int AS i`
            // One in three is interrupted after up to 20 ms: queued, or holding its connection.
            const cut = kind === 2 || kind === 4
              ? Effect.timeout(run, Duration.millis(yield* Random.nextIntBetween(0, 20)))
              : run
            return yield* Effect.exit(cut)
          })
        const exits = yield* Effect.forEach(Array.from({ length: 600 }, (_, i) => i), work, {
          concurrency: "unbounded"
        })
        // Some ran, some failed on their own, some ran out of time in the queue.
        expect(exits.filter(Exit.isSuccess).length).toBeGreaterThan(0)
        expect(exits.some((exit) => Exit.isFailure(exit) && !failedBecauseFull(exit))).toBe(true)
        expect(exits.some(failedBecauseFull)).toBe(true)
        const cutShort = exits.filter((exit) =>
          Exit.isFailure(exit) &&
          exit.cause.reasons.some((reason) => reason._tag === "Fail" && Cause.isTimeoutError(reason.error))
        )
        expect(cutShort.length).toBeGreaterThan(0)
        expect(exits.some((exit) => Exit.isFailure(exit) && Cause.hasInterrupts(exit.cause))).toBe(false)

        expect(pool.state()).toMatchObject({ used: 0, pending: 0, max: SIZE })

        // Every place is free again: SIZE transactions hold a connection each at once ...
        const release = yield* Deferred.make<void>()
        const holding = yield* Effect.forEach(Array.from({ length: SIZE }), () =>
          Effect.gen(function*() {
            const held = yield* Deferred.make<void>()
            const fiber = yield* sql.withTransaction(
              sql`SELECT 1`.pipe(
                Effect.andThen(Deferred.succeed(held, undefined)),
                Effect.andThen(Deferred.await(release))
              )
            ).pipe(Effect.forkChild)
            yield* Deferred.await(held)
            return fiber
          }))
        expect(pool.state()).toMatchObject({ used: SIZE, pending: 0 })
        // ... and none is given twice: one more runs out of time in the queue (bounded here so that a
        // checkout let into the full pool, which would wait there without limit, fails the test).
        const extra = yield* sql`SELECT 1`.pipe(Effect.timeout(Duration.seconds(10)), Effect.exit)
        expect(failedBecauseFull(extra)).toBe(true)
        yield* Deferred.succeed(release, undefined)
        yield* Fiber.joinAll(holding)
        expect(pool.state()).toMatchObject({ used: 0, pending: 0 })
        expect(yield* sql<{ one: number }>`SELECT 1::int AS one`).toEqual([{ one: 1 }])
      }).pipe(Effect.scoped, Effect.provide(Reactivity.layer)))
  })
})
