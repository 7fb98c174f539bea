/**
 * The catalog's limits (src/catalog/limits): every credential's request budget, a token bucket
 * shared by every process through PostgreSQL and leased per process, with the IETF RateLimit header
 * fields (draft-ietf-httpapi-ratelimit-headers) on every answer, 429 `RATE_LIMITED` past it, replayed
 * stored answers counted like computed ones; and every site's daily write quotas (429 `QUOTA_EXCEEDED`
 * until UTC midnight), counted in the write's own transaction.
 */
import { describe, expect, it, layer } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer, Metric } from "effect"
import { HttpServer } from "effect/http"
import { SqlClient } from "effect/sql"
import { CatalogHttpLive } from "../../src/catalog/CatalogServer.js"
import { CatalogLimits } from "../../src/catalog/limits/Limits.js"
import { RequestBudget } from "../../src/catalog/limits/RequestBudget.js"
import { replayedResponses } from "../../src/catalog/shared/Replay.js"
import { IdentityPortLive } from "../../src/identity/IdentityPortLive.js"
import { listen } from "../../src/platform/HttpListener.js"
import { RateLimiterMemory } from "../../src/platform/RateLimiter.js"
import { ClaimsFixture, ClaimsFixtureLive, writeScopes } from "../support/Claims.js"
import { eventually } from "../support/Eventually.js"
import { REQUEST_ID } from "../support/Problems.js"
import { serverLayerOptions, testConfigProvider } from "../support/TestServers.js"

interface Answer {
  readonly status: number
  readonly headers: Headers
  readonly body: any
}

/** A request to the catalog at `base` (either server), with the key as a bearer. */
const hit = (
  base: string,
  path: string,
  key: string,
  options: { readonly method?: string; readonly body?: unknown; readonly headers?: Record<string, string> } = {}
): Effect.Effect<Answer> =>
  Effect.promise(async () => {
    const res = await fetch(`${base}${path}`, {
      method: options.method ?? "GET",
      headers: {
        authorization: `Bearer ${key}`,
        ...(options.body === undefined ? {} : { "content-type": "application/json" }),
        ...options.headers
      },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) })
    })
    const text = await res.text()
    return { status: res.status, headers: res.headers, body: text === "" ? null : JSON.parse(text) }
  })

/** `"requests";r=<left>;t=<seconds>`, parsed. */
const rateLimit = (headers: Headers) => {
  const value = headers.get("ratelimit")
  expect(value, "RateLimit header").not.toBeNull()
  const match = /^"requests";r=(\d+);t=(\d+)$/.exec(value!)
  expect(match, `RateLimit: ${value}`).not.toBeNull()
  return { r: Number(match![1]), t: Number(match![2]) }
}

/** Both fields, the policy exactly as configured: `q` the burst, `w` the seconds to refill it. */
const expectLimitHeaders = (answer: Answer, burst: number, perSecond: number) => {
  expect(answer.headers.get("ratelimit-policy")).toBe(`"requests";q=${burst};w=${Math.ceil(burst / perSecond)}`)
  return rateLimit(answer.headers)
}

/** A 429 `RATE_LIMITED` problem document with `Retry-After` equal to its `retry_after` and to the RateLimit `t`. */
const expectRateLimited = (answer: Answer, burst: number, perSecond: number, instance: string) => {
  expect(answer.status, JSON.stringify(answer.body)).toBe(429)
  expect(answer.headers.get("content-type")).toBe("application/problem+json")
  expect(answer.body.code).toBe("RATE_LIMITED")
  expect(answer.body.status).toBe(429)
  expect(answer.body.instance).toBe(instance)
  expect(answer.body.request_id).toMatch(REQUEST_ID)
  const retryAfter = Number(answer.headers.get("retry-after"))
  expect(Number.isInteger(retryAfter) && retryAfter >= 1, `Retry-After: ${answer.headers.get("retry-after")}`).toBe(
    true
  )
  // One token comes back every 1 / perSecond seconds.
  expect(retryAfter).toBeLessThanOrEqual(Math.ceil(1 / perSecond))
  expect(answer.body.retry_after).toBe(retryAfter)
  const state = expectLimitHeaders(answer, burst, perSecond)
  expect(state.r).toBe(0)
  expect(state.t).toBe(retryAfter)
}

/**
 * Another catalog server over the same database: another process, as far as the budget can tell (the
 * same layers, built afresh, sharing nothing in memory). `config` is its whole configuration.
 */
class OtherCatalog extends Context.Service<OtherCatalog, { readonly base: string }>()("test/OtherCatalog") {}

const OtherCatalogLive = (config: ConfigProvider.ConfigProvider) =>
  Layer.effect(
    OtherCatalog,
    Effect.gen(function*() {
      const context = yield* Layer.build(
        listen(Layer.fresh(CatalogHttpLive.pipe(Layer.provide(IdentityPortLive))), { port: 0, host: "127.0.0.1" })
      )
      const address = Context.get(context, HttpServer.HttpServer).address
      if (address._tag !== "InetAddressV4") return yield* Effect.die(new Error("expected an IPv4 address"))
      return { base: `http://127.0.0.1:${address.port}` }
    }).pipe(Effect.provideService(ConfigProvider.ConfigProvider, config))
  )

/** Only what the environment says: the catalog's own defaults for everything else. */
const environmentOnly = ConfigProvider.fromUnknown({ LOG_LEVEL: "Warning" }).pipe(
  ConfigProvider.orElse(ConfigProvider.fromEnv())
)

/** Replayed (stored) answers so far (the servers run in this process). */
const hotHits = Effect.map(Metric.value(replayedResponses), (state) => state.count)

// A small budget: 5 requests back to back, a token every 20 seconds, so nothing refills during a test.
// Its lease (`capacity / 20`, at least 1) is one token: every request takes from the shared bucket.
const SMALL = { burst: 5, perSecond: 0.05 }
const smallConfig = {
  CATALOG_RATE_BURST: String(SMALL.burst),
  CATALOG_RATE_PER_SECOND: String(SMALL.perSecond)
}

describe("request budget: a small burst (docs/writing.md, \"Limits\")", () => {
  layer(
    OtherCatalogLive(testConfigProvider(smallConfig)).pipe(
      Layer.provideMerge(ClaimsFixtureLive({ config: smallConfig }))
    ),
    serverLayerOptions("180 seconds")
  )((it) => {
    it.effect("past the burst a credential gets 429 RATE_LIMITED with Retry-After; budgets are per credential (docs/writing.md, \"Limits\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const key = yield* f.makeKey("site_a", ["catalog:read"], null)
        const paths = ["/v2/catalog/works?limit=1", `/v2/catalog/works/${f.works[0]}`, "/v2/catalog/works?limit=2"]
        const left: Array<number> = []
        for (let i = 0; i < SMALL.burst; i++) {
          const answer = yield* hit(f.base, paths[i % paths.length]!, key)
          expect(answer.status, JSON.stringify(answer.body)).toBe(200)
          left.push(expectLimitHeaders(answer, SMALL.burst, SMALL.perSecond).r)
        }
        // draft-ietf-httpapi-ratelimit-headers: `r` is what is left after this request.
        expect(left).toEqual([4, 3, 2, 1, 0])
        for (const path of ["/v2/catalog/works?limit=1", `/v2/catalog/works/${f.works[1]}`, "/v2/claims"]) {
          expectRateLimited(yield* hit(f.base, path, key), SMALL.burst, SMALL.perSecond, path)
        }
        // A refused request takes nothing: still refused, still no sooner than a token's refill.
        expectRateLimited(
          yield* hit(f.base, "/v2/catalog/works?limit=1", key),
          SMALL.burst,
          SMALL.perSecond,
          "/v2/catalog/works?limit=1"
        )

        // Another credential of the same site has its own budget.
        const other = yield* f.makeKey("site_a", ["catalog:read"], null)
        const fresh = yield* hit(f.base, "/v2/catalog/works?limit=1", other)
        expect(fresh.status).toBe(200)
        expect(expectLimitHeaders(fresh, SMALL.burst, SMALL.perSecond).r).toBe(SMALL.burst - 1)
        // And the first is still limited.
        expect((yield* hit(f.base, "/v2/catalog/works?limit=1", key)).status).toBe(429)
      }))

    it.effect("draft-ietf-httpapi-ratelimit-headers: every 2xx carries RateLimit-Policy and RateLimit (reads, writes, 304)", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const reader = yield* f.makeKey("site_a", ["catalog:read"], null)
        const user = yield* f.makeUser([])
        const writer = yield* f.makeKey("site_a", writeScopes, user)
        const work = f.works[5]!
        const answers: Array<[string, Answer]> = []
        const add = (label: string, answer: Answer) =>
          Effect.sync(() => {
            answers.push([label, answer])
            return answer
          })
        yield* add("list", yield* hit(f.base, "/v2/catalog/works?limit=3", reader))
        const single = yield* add("work", yield* hit(f.base, `/v2/catalog/works/${work}`, reader))
        yield* add("credential", yield* hit(f.base, "/v2/credential", reader))
        const creation = {
          method: "POST",
          body: { work_id: work, site_work_id: "5" },
          headers: { "idempotency-key": "limits-2xx" }
        }
        const created = yield* add("create claim", yield* hit(f.base, "/v2/claims", writer, creation))
        const replayed = yield* add("replayed creation", yield* hit(f.base, "/v2/claims", writer, creation))
        expect(replayed.headers.get("idempotent-replayed")).toBe("true")
        yield* add("get claim", yield* hit(f.base, `/v2/claims/${work}`, writer))
        yield* add("list claims", yield* hit(f.base, "/v2/claims", writer))
        expect(created.status, JSON.stringify(created.body)).toBe(201)
        for (const [label, answer] of answers) {
          expect(answer.status, `${label}: ${JSON.stringify(answer.body)}`).toBeGreaterThanOrEqual(200)
          expect(answer.status, label).toBeLessThan(300)
          expectLimitHeaders(answer, SMALL.burst, SMALL.perSecond)
        }
        // A conditional read answered 304 carries them too (it spent a token).
        const reader2 = yield* f.makeKey("site_a", ["catalog:read"], null)
        const etag = single.headers.get("etag")!
        expect(etag).toMatch(/^"/)
        const notModified = yield* hit(f.base, `/v2/catalog/works/${work}`, reader2, {
          headers: { "if-none-match": etag }
        })
        expect(notModified.status).toBe(304)
        expect(expectLimitHeaders(notModified, SMALL.burst, SMALL.perSecond).r).toBe(SMALL.burst - 1)
      }))

    it.effect("the budget is one bucket shared by every process (two servers, one database) (docs/writing.md, \"Limits\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const second = yield* OtherCatalog
        expect(second.base).not.toBe(f.base)
        const servers = [f.base, second.base]

        // Alternating servers, one key: the remaining count goes down across both.
        const key = yield* f.makeKey("site_a", ["catalog:read"], null)
        const left: Array<number> = []
        for (let i = 0; i < SMALL.burst; i++) {
          const answer = yield* hit(servers[i % 2]!, "/v2/catalog/works?limit=4", key)
          expect(answer.status, `request ${i} on server ${i % 2}`).toBe(200)
          left.push(expectLimitHeaders(answer, SMALL.burst, SMALL.perSecond).r)
        }
        expect(left).toEqual([4, 3, 2, 1, 0])
        // Neither server has anything left for it.
        for (const base of servers) {
          expectRateLimited(
            yield* hit(base, "/v2/catalog/works?limit=4", key),
            SMALL.burst,
            SMALL.perSecond,
            "/v2/catalog/works?limit=4"
          )
        }

        // Spent on one server: refused on the other at once.
        const key2 = yield* f.makeKey("site_a", ["catalog:read"], null)
        for (let i = 0; i < SMALL.burst; i++) {
          expect((yield* hit(f.base, "/v2/catalog/works?limit=4", key2)).status).toBe(200)
        }
        expectRateLimited(
          yield* hit(second.base, "/v2/catalog/works?limit=4", key2),
          SMALL.burst,
          SMALL.perSecond,
          "/v2/catalog/works?limit=4"
        )

        // Concurrent requests split over both servers: at most the burst plus one lease per process.
        const key3 = yield* f.makeKey("site_a", ["catalog:read"], null)
        const lease = Math.max(1, Math.floor(SMALL.burst / 20))
        const statuses = yield* Effect.all(
          Array.from(
            { length: 30 },
            (_, i) => Effect.map(hit(servers[i % 2]!, `/v2/catalog/works?limit=${1 + (i % 3)}`, key3), (a) => a.status)
          ),
          { concurrency: "unbounded" }
        )
        const admitted = statuses.filter((s) => s === 200).length
        expect(statuses.filter((s) => s !== 200 && s !== 429)).toEqual([])
        expect(admitted).toBeGreaterThanOrEqual(SMALL.burst)
        expect(admitted).toBeLessThanOrEqual(SMALL.burst + lease * servers.length)
        // The state is one row per credential in the database, not a copy per process: the three
        // credentials spent here hold less than a token there.
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<{ tokens: number }>`
          SELECT tokens::float8 AS tokens FROM rate_limit_buckets WHERE key LIKE 'catalog:key:%'`
        expect(rows.filter((row) => row.tokens < 1).length).toBeGreaterThanOrEqual(3)
      }))
  })
})

// A larger burst, so that a lease holds several tokens and replays spend from memory.
const HOT = { burst: 60, perSecond: 0.05 }

describe("request budget: replayed reads count (docs/writing.md, \"Limits\")", () => {
  layer(
    ClaimsFixtureLive({
      config: { CATALOG_RATE_BURST: String(HOT.burst), CATALOG_RATE_PER_SECOND: String(HOT.perSecond) }
    }),
    serverLayerOptions("180 seconds")
  )((it) => {
    it.effect("a cacheable GET repeated past the burst is refused, not replayed from its stored answer forever (docs/writing.md, \"Limits\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const path = "/v2/catalog/works?limit=5"
        const lease = Math.max(1, Math.floor(HOT.burst / 20))
        // The stored answer is replayed once the stack has computed this URL.
        const warm = yield* f.makeKey("site_a", ["catalog:read"], null)
        yield* eventually(Effect.gen(function*() {
          const before = yield* hotHits
          expect((yield* hit(f.base, path, warm)).status).toBe(200)
          expect((yield* hotHits) - before).toBe(1)
        }))

        const key = yield* f.makeKey("site_a", ["catalog:read"], null)
        let admitted = 0
        let hot = 0
        let refused: Answer | undefined
        for (let i = 0; i < HOT.burst * 3 && refused === undefined; i++) {
          const before = yield* hotHits
          const answer = yield* hit(f.base, path, key)
          const servedHot = (yield* hotHits) > before
          if (answer.status === 429) {
            refused = answer
            expect(servedHot).toBe(false)
            break
          }
          expect(answer.status, JSON.stringify(answer.body)).toBe(200)
          admitted++
          // Replayed or not, an admitted answer carries both fields.
          const state = expectLimitHeaders(answer, HOT.burst, HOT.perSecond)
          expect(state.r).toBeLessThan(HOT.burst)
          if (servedHot) hot++
        }
        expect(refused, "never refused").toBeDefined()
        expectRateLimited(refused!, HOT.burst, HOT.perSecond, path)
        expect(hot, "stored answers answered some of them").toBeGreaterThan(0)
        // Leased tokens that lapse unspent only make the limit stricter; a lease can overdraw by one lease.
        expect(admitted).toBeGreaterThanOrEqual(HOT.burst - lease)
        expect(admitted).toBeLessThanOrEqual(HOT.burst + lease)
        // Refused from then on, whatever the read cache holds.
        const before = yield* hotHits
        for (let i = 0; i < 5; i++) expect((yield* hit(f.base, path, key)).status).toBe(429)
        expect(yield* hotHits).toBe(before)
        // The stored answer still serves other credentials.
        const other = yield* f.makeKey("site_a", ["catalog:read"], null)
        expect((yield* hit(f.base, path, other)).status).toBe(200)
        const again = yield* hit(f.base, path, other)
        expect(again.status).toBe(200)
        expect(expectLimitHeaders(again, HOT.burst, HOT.perSecond).r).toBe(HOT.burst - 2)
      }))
  })
})

describe("daily site quotas (docs/writing.md, \"Limits\")", () => {
  layer(
    OtherCatalogLive(environmentOnly).pipe(
      Layer.provideMerge(ClaimsFixtureLive({ config: { CATALOG_QUOTA_CLAIMS: "2" } }))
    ),
    serverLayerOptions("180 seconds")
  )(
    (it) => {
      it.effect("the third claim of a site in a UTC day is 429 QUOTA_EXCEEDED; refusals and replays use none (docs/writing.md, \"Limits\")", () =>
        Effect.gen(function*() {
          const f = yield* ClaimsFixture
          const sql = yield* SqlClient.SqlClient
          const [w0, w1, w2, w3] = f.works
          const create = (key: string, body: unknown, idempotencyKey?: string) =>
            hit(f.base, "/v2/claims", key, {
              method: "POST",
              body,
              headers: idempotencyKey === undefined ? {} : { "idempotency-key": idempotencyKey }
            })
          const used = (site: string) =>
            Effect.map(
              sql<{ used: number }>`
                SELECT used::int AS used FROM catalog_quota_usage
                WHERE site = ${site} AND kind = 'claims' AND day = (now() AT TIME ZONE 'UTC')::date`,
              (rows) => rows[0]?.used ?? 0
            ).pipe(Effect.orDie)

          const first = yield* create(f.siteUser.key, { work_id: w0, site_work_id: "1" }, "quota-1")
          expect(first.status, JSON.stringify(first.body)).toBe(201)
          expect(yield* used("site_a")).toBe(1)

          // Refused writes use no quota: 409 (the work holds a claim), 422 (no such work, no name to mint).
          const taken = yield* create(f.siteUser2.key, { work_id: w0 })
          expect(taken.status, JSON.stringify(taken.body)).toBe(409)
          expect(taken.body.code).toBe("ALREADY_EXISTS")
          const invalid = yield* create(f.siteUser2.key, { work_id: "999999999" })
          expect(invalid.status, JSON.stringify(invalid.body)).toBe(422)
          // An idempotent replay answers the first write again and uses none either.
          const replay = yield* create(f.siteUser.key, { work_id: w0, site_work_id: "1" }, "quota-1")
          expect(replay.status).toBe(201)
          expect(replay.headers.get("idempotent-replayed")).toBe("true")
          expect(yield* used("site_a")).toBe(1)

          const second = yield* create(f.siteUser2.key, { work_id: w1 })
          expect(second.status, JSON.stringify(second.body)).toBe(201)
          expect(yield* used("site_a")).toBe(2)

          const third = yield* create(f.siteUser.key, { work_id: w2 }, "quota-3")
          expect(third.status, JSON.stringify(third.body)).toBe(429)
          expect(third.headers.get("content-type")).toBe("application/problem+json")
          expect(third.body.code).toBe("QUOTA_EXCEEDED")
          expect(third.body.instance).toBe("/v2/claims")
          const retryAfter = Number(third.headers.get("retry-after"))
          expect(Number.isInteger(retryAfter)).toBe(true)
          expect(retryAfter).toBeGreaterThanOrEqual(1)
          expect(retryAfter).toBeLessThanOrEqual(86_400)
          expect(third.body.retry_after).toBe(retryAfter)
          // Seconds to the next UTC midnight (give or take the request's own time).
          const now = new Date()
          const midnight = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)
          expect(Math.abs(retryAfter - (midnight - now.getTime()) / 1000)).toBeLessThan(10)
          // draft-ietf-httpapi-ratelimit-headers: the spent quota is the first policy of each field (a day's
          // window, nothing left until midnight), then the request budget as on every answer.
          const [quotaPolicy, budgetPolicy] = (third.headers.get("ratelimit-policy") ?? "").split(", ")
          expect(quotaPolicy).toBe(`"claims";q=2;w=86400`)
          expect(budgetPolicy).toMatch(/^"requests";q=\d+;w=\d+$/)
          const [quotaState, budgetState] = (third.headers.get("ratelimit") ?? "").split(", ")
          expect(quotaState).toBe(`"claims";r=0;t=${retryAfter}`)
          expect(budgetState).toMatch(/^"requests";r=\d+;t=\d+$/)
          expect(third.body).toMatchObject({ quota: "claims", limit: 2 })
          // The refused write left nothing: no claim, no event, quota unchanged; its key stored nothing.
          const claims = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM claims WHERE work_id = ${w2}::bigint`
          expect(claims[0]!.n).toBe(0)
          const events = yield* sql<{ n: number }>`
            SELECT count(*)::int AS n FROM claim_events WHERE work_id = ${w2}::bigint`
          expect(events[0]!.n).toBe(0)
          expect(yield* used("site_a")).toBe(2)
          const retried = yield* create(f.siteUser.key, { work_id: w2 }, "quota-3")
          expect(retried.status).toBe(429)
          expect(retried.headers.get("idempotent-replayed")).toBeNull()

          // Another site has its own quota.
          const elsewhere = yield* create(f.otherSiteUser.key, { work_id: w3 })
          expect(elsewhere.status, JSON.stringify(elsewhere.body)).toBe(201)
          expect(yield* used("site_b")).toBe(1)
        }))

      it.effect("draft-ietf-httpapi-ratelimit-headers: without settings the policy is 600 requests, 20 a second", () =>
        Effect.gen(function*() {
          const f = yield* ClaimsFixture
          // A server configured by the environment alone (the test servers lift the budget).
          const plain = yield* OtherCatalog
          const key = yield* f.makeKey("site_c", ["catalog:read"], null)
          const answer = yield* hit(plain.base, "/v2/catalog/works?limit=1", key)
          expect(answer.status).toBe(200)
          expect(answer.headers.get("ratelimit-policy")).toBe(`"requests";q=600;w=30`)
          const state = rateLimit(answer.headers)
          expect(state.r).toBeGreaterThan(500)
          expect(state.r).toBeLessThan(600)
        }))
    }
  )
})

describe("limits: defaults (docs/writing.md, \"Limits\")", () => {
  it.effect("with no settings: burst 600, 20/s, leases of at most 1000, quotas 1000 claims, 10000 decisions, 5000 proposals, 100000 votes, 1000 news, 100000 playtime batches", () =>
    Effect.gen(function*() {
      const limits = yield* CatalogLimits
      expect(limits.requests).toEqual({ capacity: 600, refillPerSecond: 20 })
      expect(limits.leaseMax).toBe(1000)
      expect(limits.quotas).toEqual({
        claims: 1000,
        decisions: 10_000,
        proposals: 5000,
        votes: 100_000,
        news: 1000,
        playtimes: 100_000,
        media: 1024 ** 3
      })
      const budget = yield* RequestBudget
      const admitted = yield* budget.take("someone")
      expect(admitted.retryAfterSeconds).toBe(0)
      expect(budget.headers(admitted)).toEqual({
        "ratelimit-policy": `"requests";q=600;w=30`,
        ratelimit: `"requests";r=599;t=1`
      })
      // A bad setting is refused rather than ignored. (`local`: built afresh under these settings, not
      // the instance the enclosing `Effect.provide` memoized.)
      const refused = yield* Effect.exit(
        Effect.provide(CatalogLimits, CatalogLimits.layer, { local: true }).pipe(
          Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown({ CATALOG_RATE_BURST: "0" }))
        )
      )
      expect(refused._tag).toBe("Failure")
      // The proposals quota is read from `CATALOG_QUOTA_PROPOSALS`, the news quota from `CATALOG_QUOTA_NEWS`.
      const set = yield* Effect.provide(CatalogLimits, CatalogLimits.layer, { local: true }).pipe(
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          ConfigProvider.fromUnknown({ CATALOG_QUOTA_PROPOSALS: "7", CATALOG_QUOTA_NEWS: "9" })
        )
      )
      expect(set.quotas).toEqual({
        claims: 1000,
        decisions: 10_000,
        proposals: 7,
        votes: 100_000,
        news: 9,
        playtimes: 100_000,
        media: 1024 ** 3
      })
      // The votes quota is read from `CATALOG_QUOTA_VOTES`.
      const votes = yield* Effect.provide(CatalogLimits, CatalogLimits.layer, { local: true }).pipe(
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          ConfigProvider.fromUnknown({ CATALOG_QUOTA_VOTES: "9" })
        )
      )
      expect(votes.quotas.votes).toBe(9)
      // The playtimes quota: 100000 batches a day by default, read from `CATALOG_QUOTA_PLAYTIMES`.
      const playtimes = yield* Effect.provide(CatalogLimits, CatalogLimits.layer, { local: true }).pipe(
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          ConfigProvider.fromUnknown({ CATALOG_QUOTA_PLAYTIMES: "3" })
        )
      )
      expect(playtimes.quotas.playtimes).toBe(3)
      // The media quota: 1 GiB of upload bodies a day by default, read from `CATALOG_QUOTA_MEDIA_BYTES`,
      // a whole number of bytes.
      const media = yield* Effect.provide(CatalogLimits, CatalogLimits.layer, { local: true }).pipe(
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          ConfigProvider.fromUnknown({ CATALOG_QUOTA_MEDIA_BYTES: "5000000000" })
        )
      )
      expect(media.quotas.media).toBe(5_000_000_000)
      const fractional = yield* Effect.provide(CatalogLimits, CatalogLimits.layer, { local: true }).pipe(
        Effect.provideService(
          ConfigProvider.ConfigProvider,
          ConfigProvider.fromUnknown({ CATALOG_QUOTA_MEDIA_BYTES: "1.5" })
        ),
        Effect.exit
      )
      expect(fractional._tag).toBe("Failure")
    }).pipe(
      Effect.provide(
        RequestBudget.layerWithoutDependencies.pipe(
          Layer.provideMerge(Layer.merge(CatalogLimits.layer, RateLimiterMemory))
        )
      ),
      Effect.provideService(ConfigProvider.ConfigProvider, ConfigProvider.fromUnknown({}))
    ))
})
