/**
 * Request budgets across processes and through a database outage (docs/deploying.md, "Limits across
 * processes and outages"; docs/writing.md, "Limits"; src/platform/RateLimiter.ts):
 *
 * - with the database cut, or frozen past its deadline, a credential's budget is spent from a local allowance of the same policy
 *   in the process: a cached read answers 200, a read that needs the database 503, a credential past
 *   its allowance 429 with `Retry-After`, sign-in 503; one WARNING per outage, and the admissions
 *   counted in `rate_limit_local_allowances_total`; once the database answers, the shared bucket
 *   applies again;
 * - two processes with different `CATALOG_RATE_BURST` over one database keep a bucket each (the row's
 *   key names its shape), so neither clamps the other's, and the one that starts second says so.
 *
 * The servers are the built ones (`node dist/src/main.js`), over a proxy the test can cut
 * (test/support/DatabaseProxy.ts). The budgets refill one token per 20 s, so the counts below hold
 * for any test that runs in less.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { OPENMETRICS_CONTENT_TYPE } from "../../src/platform/Metrics.js"
import { sharedBucketKey } from "../../src/platform/RateLimiter.js"
import { type BuiltServer, freePort, startBuiltCatalog } from "../support/BuiltServer.js"
import { ClaimsFixture, ClaimsFixtureLive } from "../support/Claims.js"
import { DatabaseProxy, DatabaseProxyLive } from "../support/DatabaseProxy.js"
import { eventually } from "../support/Eventually.js"
import { parseOpenMetrics, sampleValue } from "../support/OpenMetrics.js"
import { expectProblem } from "../support/Problems.js"
import { serverLayerOptions } from "../support/TestServers.js"

const Env = DatabaseProxyLive.pipe(Layer.provideMerge(ClaimsFixtureLive()))

/** One token every 20 s: nothing refills while a test runs. */
const PER_SECOND = "0.05"

const get = (server: BuiltServer, path: string, key: string) =>
  Effect.promise(() => fetch(`${server.base}${path}`, { headers: { authorization: `Bearer ${key}` } }))

/** The statuses of `path` asked for until the first 429 (that one included), at most `max` times. */
const spendUntilRefused = (server: BuiltServer, path: string, key: string, max: number) =>
  Effect.gen(function*() {
    const statuses: Array<number> = []
    while (statuses.length < max) {
      const answer = yield* get(server, path, key)
      yield* Effect.promise(() => answer.arrayBuffer())
      statuses.push(answer.status)
      if (answer.status === 429) break
    }
    return statuses
  })

const occurrences = (text: string, needle: string) => text.split(needle).length - 1

describe("request budgets through a database outage (docs/deploying.md, \"Limits across processes and outages\")", () => {
  it.layer(Env, serverLayerOptions("180 seconds"))((it) => {
    it.effect("cached reads answer from a local allowance while the database is cut; the shared bucket applies after", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const proxy = yield* DatabaseProxy
        const sql = yield* SqlClient.SqlClient
        const burst = 6
        const [identityPort, metricsPort] = [yield* Effect.promise(freePort), yield* Effect.promise(freePort)]
        const server = yield* startBuiltCatalog(Redacted.value(proxy.url), {
          SHIORI_SERVE: "all",
          IDENTITY_PORT: String(identityPort),
          METRICS_PORT: String(metricsPort),
          CATALOG_RATE_BURST: String(burst),
          CATALOG_RATE_PER_SECOND: PER_SECOND
        })
        const key = yield* f.makeKey("site_a", ["catalog:read"], null)
        const cached = `/v2/catalog/works/${f.works[0]}`
        const uncached = `/v2/catalog/works/${f.works[1]}`

        // Computed once and stored (src/catalog/shared/ReadCache.ts): one token of the shared bucket.
        const warm = yield* get(server, cached, key)
        expect(warm.status).toBe(200)
        yield* Effect.promise(() => warm.arrayBuffer())

        proxy.cut()
        // The local allowance is a whole budget of this process: one token for the cached read...
        const fromCache = yield* get(server, cached, key)
        expect(fromCache.status).toBe(200)
        expect(fromCache.headers.get("ratelimit")).toBe(`"requests";r=${burst - 1};t=20`)
        yield* Effect.promise(() => fromCache.arrayBuffer())
        // ...one for a read that then needs the database, which fails as before...
        const needsDatabase = yield* get(server, uncached, key)
        expect(needsDatabase.headers.get("retry-after")).toBe("5")
        yield* Effect.promise(() => expectProblem(needsDatabase, "SERVICE_UNAVAILABLE", uncached))
        // ...and the rest: then 429 with Retry-After, not 503.
        expect(yield* spendUntilRefused(server, cached, key, burst)).toEqual([200, 200, 200, 200, 429])
        const refused = yield* get(server, cached, key)
        const retryAfter = Number(refused.headers.get("retry-after"))
        expect(retryAfter).toBeGreaterThanOrEqual(1)
        expect(retryAfter).toBeLessThanOrEqual(20)
        const problem = yield* Effect.promise(() => expectProblem(refused, "RATE_LIMITED", cached))
        expect(problem.retry_after).toBe(retryAfter)

        // Sign-in needs the database: it fails closed, as every identity limit does.
        const signIn = yield* Effect.promise(() =>
          fetch(`http://127.0.0.1:${identityPort}/api/v1/auth/login`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ email: "someone@example.test", password: "not-checked" })
          })
        )
        expect(signIn.status).toBe(503)
        expect(signIn.headers.get("retry-after")).toBe("5")
        yield* Effect.promise(() => signIn.arrayBuffer())

        // One warning for the outage, however many requests it met; every local admission counted.
        expect(occurrences(server.output(), "rate limits use local allowances: database unavailable")).toBe(1)
        const scraped = yield* Effect.promise(async () => {
          const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
          expect(res.headers.get("content-type")).toBe(OPENMETRICS_CONTENT_TYPE)
          return parseOpenMetrics(await res.text())
        })
        expect(sampleValue(scraped, "rate_limit_local_allowances_total", { limiter: "catalog" })).toBe(burst)

        // The database answers again: the shared bucket, with the five tokens the outage did not
        // touch, admits the credential the local allowance refuses; nothing spent locally is paid back.
        yield* Effect.promise(() => proxy.restore())
        yield* eventually(
          Effect.gen(function*() {
            const answer = yield* get(server, cached, key)
            yield* Effect.promise(() => answer.arrayBuffer())
            expect(answer.status).toBe(200)
          }),
          { timeoutMs: 20_000, intervalMs: 200 }
        )
        expect(yield* spendUntilRefused(server, cached, key, burst)).toEqual([200, 200, 200, 200, 429])
        const rows = yield* sql<{ tokens: number }>`
          SELECT tokens::float8 AS tokens FROM rate_limit_buckets
          WHERE key LIKE ${sharedBucketKey("catalog:key:%", { capacity: burst, refillPerSecond: Number(PER_SECOND) })}`
        expect(rows.length).toBe(1)
        expect(rows[0]!.tokens).toBeLessThan(1)
      }).pipe(Effect.scoped))

    it.effect("with the database frozen, the deadline ends the budget's statement and a cached read answers 200", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const proxy = yield* DatabaseProxy
        const server = yield* startBuiltCatalog(Redacted.value(proxy.url), {
          CATALOG_RATE_BURST: "6",
          CATALOG_RATE_PER_SECOND: PER_SECOND,
          DATABASE_QUERY_TIMEOUT_SECONDS: "1"
        })
        const key = yield* f.makeKey("site_a", ["catalog:read"], null)
        const cached = `/v2/catalog/works/${f.works[2]}`
        const warm = yield* get(server, cached, key)
        expect(warm.status).toBe(200)
        yield* Effect.promise(() => warm.arrayBuffer())
        // Nothing thaws the database before this answer: it can only come from the deadline
        // (src/platform/DatabaseDeadline.ts) and the local allowance.
        proxy.freeze()
        const answer = yield* get(server, cached, key)
        const status = answer.status
        yield* Effect.promise(() => answer.arrayBuffer())
        proxy.thaw()
        expect(status).toBe(200)
        expect(occurrences(server.output(), "rate limits use local allowances: database unavailable")).toBe(1)
      }).pipe(Effect.scoped))

    it.effect("two processes with different CATALOG_RATE_BURST keep a bucket each, and the second says so at start", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const url = Redacted.value(yield* DatabaseUrl)
        const sql = yield* SqlClient.SqlClient
        const small = yield* startBuiltCatalog(url, { CATALOG_RATE_BURST: "4", CATALOG_RATE_PER_SECOND: PER_SECOND })
        // The small one's shape is the recorded one before the large one starts.
        yield* eventually(Effect.gen(function*() {
          const recorded = yield* sql<{ capacity: number }>`
            SELECT capacity FROM rate_limit_policies WHERE name = 'catalog.requests'`
          expect(recorded.map((row) => row.capacity)).toEqual([4])
        }))
        const large = yield* startBuiltCatalog(url, { CATALOG_RATE_BURST: "40", CATALOG_RATE_PER_SECOND: PER_SECOND })
        // Recorded beside the start: the warning follows it shortly.
        yield* eventually(Effect.sync(() =>
          expect(large.output()).toMatch(
            /rate limit catalog\.requests: CATALOG_RATE_BURST is 40 here but 4 as recorded by .* pid \d+ at \d{4}-/
          )
        ))
        const key = yield* f.makeKey("site_a", ["catalog:read"], null)
        const path = "/v2/catalog/works?limit=4"
        // The large process spends 10 of its 40...
        expect(yield* spendUntilRefused(large, path, key, 10)).toEqual(Array(10).fill(200))
        // ...the small one has its own 4, not "at most 4 of the 30 left"...
        expect(yield* spendUntilRefused(small, path, key, 10)).toEqual([200, 200, 200, 200, 429])
        // ...and the large one still has the rest of its 40: the small one clamped nothing of it.
        expect(yield* spendUntilRefused(large, path, key, 20)).toEqual(Array(20).fill(200))
      }).pipe(Effect.scoped))
  })
})
