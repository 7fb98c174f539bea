/**
 * Failed credentials cost the sender, not the service (docs/writing.md, "Limits"): API keys a
 * catalog process does not know as live take a token of their client address's bucket before their
 * lookup; past `CATALOG_FAILED_AUTH_BURST` the address is answered 429 `RATE_LIMITED` with
 * `Retry-After` and nothing is looked up; a key found unknown is remembered, so sending it again
 * costs no lookup; a live key is never refused, whatever its address sent before; other addresses
 * are unaffected. The address is the identity provider's (`TRUSTED_PROXIES`). Real HTTP from several
 * loopback addresses (test/support/LocalAddress.ts); lookups are counted by the
 * `catalog_api_key_lookups` metric of the servers, which run in this process.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Metric, Redacted } from "effect"
import * as Crypto from "node:crypto"
import { ProblemCodes } from "../../schema/Problem.js"
import { apiKeyLookups, ApiKeys } from "../../src/catalog/auth/ApiKeys.js"
import { eventually } from "../support/Eventually.js"
import { type Reply, requestFrom } from "../support/LocalAddress.js"
import { serverLayerOptions, testConfig, TestServers, TestServersLive } from "../support/TestServers.js"

const BURST = 5

/** Servers with a small burst refilled once a minute, so a spent bucket stays spent for the test. */
const env = (config: Record<string, string> = {}) =>
  Layer.mergeAll(TestServersLive, ApiKeys.layer.pipe(Layer.provide(TestServersLive))).pipe(
    Layer.provide(
      testConfig({ CATALOG_FAILED_AUTH_BURST: String(BURST), CATALOG_FAILED_AUTH_PER_MINUTE: "1", ...config })
    )
  )

const lookups = Effect.map(Metric.value(apiKeyLookups), (state) => state.count)

/** A well-formed key nobody issued. */
const randomKey = () => `sk_${Crypto.randomBytes(32).toString("base64url")}`

/** `GET /v2/credential` with `key`, from `address`. */
const credentialFrom = (address: string, key: string, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const { catalog } = yield* TestServers
    return yield* Effect.promise(() =>
      requestFrom(address, `${catalog}/v2/credential`, { headers: { authorization: `Bearer ${key}`, ...headers } })
    )
  })

const expectCode = (reply: Reply, code: keyof typeof ProblemCodes) => {
  expect(reply.status, reply.text).toBe(ProblemCodes[code].status)
  expect(reply.headers.get("content-type")).toBe("application/problem+json")
  expect(JSON.parse(reply.text).code).toBe(code)
}

/** 429 RATE_LIMITED for this reason, with a `Retry-After` of whole seconds. */
const expectThrottled = (reply: Reply) => {
  expectCode(reply, "RATE_LIMITED")
  expect(JSON.parse(reply.text).detail).toBe(
    "Too many unknown credentials from this address; wait `Retry-After` seconds."
  )
  expect(Number(reply.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
}

describe("failed credentials are throttled per client address", () => {
  it.layer(env(), serverLayerOptions())((it) => {
    it.effect("random keys: 401 for the burst, then 429 with Retry-After and no lookup", () =>
      Effect.gen(function*() {
        const before = yield* lookups
        for (let i = 0; i < BURST; i++) {
          expectCode(yield* credentialFrom("127.0.0.2", randomKey()), "INVALID_CREDENTIAL")
        }
        expect(yield* lookups).toBe(before + BURST)
        for (let i = 0; i < 3 * BURST; i++) expectThrottled(yield* credentialFrom("127.0.0.2", randomKey()))
        expect(yield* lookups).toBe(before + BURST)
        // `X-Forwarded-For` from a peer that is not a trusted proxy names nobody: still the same address.
        expectThrottled(yield* credentialFrom("127.0.0.2", randomKey(), { "x-forwarded-for": "198.51.100.7" }))
        expect(yield* lookups).toBe(before + BURST)
      }))

    it.effect("a live key from the throttled address is answered 200, as often as it is sent", () =>
      Effect.gen(function*() {
        const keys = yield* ApiKeys
        const { key } = yield* keys.create({
          site: "site_a",
          scopes: ["catalog:read"],
          contentLimit: "sfw",
          userId: null
        })
        // Never used before: not in any cache of verified keys. The process hears of a new key by the
        // notification its creation sends, a moment after the commit.
        const first = yield* eventually(Effect.map(credentialFrom("127.0.0.2", Redacted.value(key)), (reply) => {
          expect(reply.status, reply.text).toBe(200)
          return reply
        }))
        expect(JSON.parse(first.text).site).toBe("site_a")
        for (let i = 0; i < 3; i++) expect((yield* credentialFrom("127.0.0.2", Redacted.value(key))).status).toBe(200)
        // The address is still throttled for anything else.
        expectThrottled(yield* credentialFrom("127.0.0.2", randomKey()))
      }))

    it.effect("another address is unaffected", () =>
      Effect.gen(function*() {
        const before = yield* lookups
        expectCode(yield* credentialFrom("127.0.0.3", randomKey()), "INVALID_CREDENTIAL")
        expect(yield* lookups).toBe(before + 1)
      }))

    it.effect("a repeated unknown key is looked up once, then refused from memory until the burst is spent", () =>
      Effect.gen(function*() {
        const before = yield* lookups
        const bad = randomKey()
        for (let i = 0; i < BURST; i++) expectCode(yield* credentialFrom("127.0.0.4", bad), "INVALID_CREDENTIAL")
        expect(yield* lookups).toBe(before + 1)
        expectThrottled(yield* credentialFrom("127.0.0.4", bad))
        expect(yield* lookups).toBe(before + 1)
      }))
  })

  it.layer(env({ TRUSTED_PROXIES: "127.0.0.5" }), serverLayerOptions())((it) => {
    it.effect("behind a trusted proxy, each forwarded client has its own bucket", () =>
      Effect.gen(function*() {
        const viaProxy = (client: string) => credentialFrom("127.0.0.5", randomKey(), { "x-forwarded-for": client })
        for (let i = 0; i < BURST; i++) expectCode(yield* viaProxy("198.51.100.1"), "INVALID_CREDENTIAL")
        expectThrottled(yield* viaProxy("198.51.100.1"))
        // An IPv6 client counts as its /64: another address in it shares the bucket.
        for (let i = 0; i < BURST; i++) expectCode(yield* viaProxy("2001:db8:1:2::1"), "INVALID_CREDENTIAL")
        expectThrottled(yield* viaProxy("2001:db8:1:2::ffff"))
        // Another client behind the same proxy is unaffected.
        expectCode(yield* viaProxy("198.51.100.2"), "INVALID_CREDENTIAL")
      }))
  })
})
