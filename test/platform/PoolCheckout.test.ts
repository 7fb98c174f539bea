/**
 * A pool with no free connection (docs/deploying.md, "When the database misbehaves", and "Metrics"):
 * a statement that finds every connection held waits at most `DATABASE_ACQUIRE_TIMEOUT_SECONDS`, then
 * its request answers 503 with `Retry-After` (`SERVICE_UNAVAILABLE` on the catalog,
 * `temporarily_unavailable` on the identity server's token endpoint, RFC 6749 section 5.2's shape)
 * and writes nothing; the waits that
 * ran out leave the pool whole; `/metrics` shows the pool's connections by state, its waiters, its
 * size, the waits and their timeouts.
 *
 * The servers run with a deadline of 1 s; the test holds every connection of their pool (its size
 * read from `/metrics`) in open transactions until it lets them go, so an answer that comes while they are
 * held could only come from the deadline. The tests assert the order of events, not durations.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Context, Deferred, Effect, Exit, Fiber, Layer } from "effect"
import { SqlClient } from "effect/sql"
import { MetricsHttpLive } from "../../src/platform/Metrics.js"
import { isPoolExhausted } from "../../src/platform/PoolCheckout.js"
import { ClaimsFixture, ClaimsFixtureLive } from "../support/Claims.js"
import { type Family, parseOpenMetrics, sampleValue } from "../support/OpenMetrics.js"
import { expectProblem } from "../support/Problems.js"
import { serveOn, serverLayerOptions, TestServers } from "../support/TestServers.js"

class MetricsUrl extends Context.Service<MetricsUrl, string>()("test/PoolCheckout/MetricsUrl") {}

const Env = Layer.effect(MetricsUrl, serveOn(MetricsHttpLive)).pipe(
  Layer.provideMerge(
    ClaimsFixtureLive({
      config: { DATABASE_ACQUIRE_TIMEOUT_SECONDS: "1" }
    })
  )
)

const scrape = Effect.gen(function*() {
  const base = yield* MetricsUrl
  return yield* Effect.promise(async () => parseOpenMetrics(await (await fetch(`${base}/metrics`)).text()))
})

const primary = { db_client_connection_pool_name: "primary" }
const connections = (families: Map<string, Family>, state: "used" | "idle") =>
  sampleValue(families, "db_client_connection_count", { ...primary, db_client_connection_state: state })

/**
 * Every connection of the pool held by an open transaction until `release` (or the end of the
 * test's scope); returns once all of them are held.
 */
const holdThePool = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const size = sampleValue(yield* scrape, "db_client_connection_max", primary)
  expect(size).toBeGreaterThan(0)
  const release = yield* Deferred.make<void>()
  const holders = yield* Effect.forEach(Array.from({ length: size }), () =>
    Effect.gen(function*() {
      const holding = yield* Deferred.make<void>()
      const fiber = yield* sql.withTransaction(
        sql`SELECT 1`.pipe(
          Effect.andThen(Deferred.succeed(holding, undefined)),
          Effect.andThen(Deferred.await(release))
        )
      ).pipe(Effect.orDie, Effect.forkDetach)
      yield* Deferred.await(holding)
      return fiber
    }))
  let released = false
  const letGo = Effect.gen(function*() {
    released = true
    yield* Deferred.succeed(release, undefined)
    yield* Fiber.joinAll(holders)
  })
  yield* Effect.addFinalizer(() => letGo)
  return { size, held: () => !released, release: letGo }
})

describe("a pool with no free connection (docs/deploying.md, \"When the database misbehaves\")", () => {
  layer(Env, serverLayerOptions("120 seconds"))((it) => {
    it.effect("reads, writes and token requests answer 503 while every connection is held; nothing is written", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { identity } = yield* TestServers
        const sql = yield* SqlClient.SqlClient
        const key = f.creator.key
        const path = `/v2/catalog/works/${f.works[0]}`
        // The key is known (its credential check is cached) before the pool fills.
        expect((yield* f.call("GET", path, { key })).status).toBe(200)
        const claim = { site_work_id: "9202", display_name: "Written while the pool was full" }
        const headers = { "idempotency-key": "pool-full-claim-1" }

        const pool = yield* holdThePool
        const answers = yield* Effect.all([
          Effect.promise(async () => {
            const response = await fetch(`${f.base}/v2/catalog/works/${f.works[1]}`, {
              headers: { authorization: `Bearer ${key}` }
            })
            return { response, whileHeld: pool.held() }
          }),
          Effect.promise(async () => {
            const response = await fetch(`${f.base}/v2/claims`, {
              method: "POST",
              headers: { authorization: `Bearer ${key}`, "content-type": "application/json", ...headers },
              body: JSON.stringify(claim)
            })
            return { response, whileHeld: pool.held() }
          }),
          // The identity server: a token request of an unknown client, which only the database can refuse.
          Effect.promise(async () => {
            const response = await fetch(`${identity}/api/v1/oauth/token`, {
              method: "POST",
              headers: { "content-type": "application/x-www-form-urlencoded" },
              body: "grant_type=client_credentials&client_id=pool-full-client&client_secret=not-a-secret"
            })
            return { response, whileHeld: pool.held() }
          })
        ], { concurrency: "unbounded" })
        const token = answers[2]
        expect(token.whileHeld).toBe(true)
        expect(token.response.status).toBe(503)
        expect(token.response.headers.get("retry-after")).toBe("5")
        expect((yield* Effect.promise(() => token.response.json())).error).toBe("temporarily_unavailable")
        for (
          const [answer, instance] of [[answers[0], `/v2/catalog/works/${f.works[1]}`], [
            answers[1],
            "/v2/claims"
          ]] as const
        ) {
          expect(answer.whileHeld).toBe(true)
          expect(answer.response.headers.get("retry-after")).toBe("5")
          const problem = yield* Effect.promise(() => expectProblem(answer.response, "SERVICE_UNAVAILABLE", instance))
          expect(problem.detail).toBe("The database is busy.")
        }
        // A statement of the process's client fails the same way, with the pool named as the cause.
        const direct = yield* Effect.exit(sql`SELECT 1`)
        expect(Exit.isFailure(direct)).toBe(true)
        if (Exit.isFailure(direct)) {
          expect(isPoolExhausted(direct.cause.reasons[0]?._tag === "Fail" ? direct.cause.reasons[0].error : undefined))
            .toBe(true)
        }
        expect(pool.held()).toBe(true)

        yield* pool.release
        // Nothing of the refused write was kept: the same key and body now create the claim.
        const stored = yield* sql<{ n: number }>`
          SELECT count(*)::int AS n FROM claims WHERE site_work_id = ${claim.site_work_id}`.pipe(Effect.orDie)
        expect(stored[0]!.n).toBe(0)
        const retried = yield* f.call("POST", "/v2/claims", { key, body: claim, headers })
        expect(retried.status).toBe(201)
        expect((yield* f.call("GET", `/v2/catalog/works/${f.works[1]}`, { key })).status).toBe(200)
        const refused = yield* Effect.promise(() =>
          fetch(`${identity}/api/v1/oauth/token`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: "grant_type=client_credentials&client_id=pool-full-client&client_secret=not-a-secret"
          })
        )
        expect(refused.status).toBe(401)
      }).pipe(Effect.scoped))

    it.effect("/metrics shows the full pool, its waiter and timeouts; the waits that ran out leave the pool whole", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const before = yield* scrape
        expect(connections(before, "used")).toBe(0)
        expect(connections(before, "idle")).toBeGreaterThanOrEqual(1)
        const timeoutsBefore = sampleValue(before, "db_client_connection_timeouts_total", primary)

        const pool = yield* holdThePool
        const waiter = yield* Effect.forkChild(Effect.exit(sql`SELECT 1`))
        const full = yield* scrape
        expect(connections(full, "used")).toBe(pool.size)
        expect(connections(full, "idle")).toBe(0)
        expect(sampleValue(full, "db_client_connection_pending_requests", primary)).toBeGreaterThanOrEqual(1)
        const waited = yield* Fiber.join(waiter)
        expect(Exit.isFailure(waited)).toBe(true)
        expect(pool.held()).toBe(true)
        yield* pool.release

        const after = yield* scrape
        expect(connections(after, "used")).toBe(0)
        expect(sampleValue(after, "db_client_connection_pending_requests", primary)).toBe(0)
        // The waiter's and the scrape's own statement (made while the pool was full) ran out.
        expect(sampleValue(after, "db_client_connection_timeouts_total", primary) - timeoutsBefore)
          .toBeGreaterThanOrEqual(1)
        expect(sampleValue(after, "db_client_connection_wait_time_seconds_count", primary))
          .toBeGreaterThan(sampleValue(before, "db_client_connection_wait_time_seconds_count", primary))
        expect(after.get("db_client_connection_wait_time_seconds")?.type).toBe("histogram")
        expect(after.get("db_client_connection_wait_time_seconds")?.unit).toBe("seconds")

        // Whole again: every connection can be held at once, and a burst far larger than the pool
        // queues and runs (each statement waits for a free connection, none for long).
        const again = yield* holdThePool
        yield* again.release
        const burst = yield* Effect.forEach(
          Array.from({ length: 200 }, (_, i) => i),
          (i) => Effect.map(sql<{ i: number }>`SELECT ${i}::int AS i, pg_sleep(0.002)`, (rows) => rows[0]!.i),
          { concurrency: "unbounded" }
        ).pipe(Effect.orDie)
        expect(burst).toEqual(Array.from({ length: 200 }, (_, i) => i))
        const settled = yield* scrape
        expect(connections(settled, "used")).toBe(0)
        expect(sampleValue(settled, "db_client_connection_pending_requests", primary)).toBe(0)
      }).pipe(Effect.scoped))
  })
})
