/**
 * Stored answers replayed inside the request stack (src/catalog/shared/Replay.ts; docs/life-of-a-request.md,
 * "Stored answers"): a repeated works read is answered from its stored answer after the request id,
 * the credential check and the request budget ran, so it is indistinguishable from a computed one,
 * keeps every rule the stack enforces (revoked key -> 401, missing scope -> 403, the content gate:
 * docs/api-contract.md, "Credentials, scopes and the content limit"; conditional reads and gzip:
 * "Caching, ETags and freshness"), and serves access tokens like API keys. A stored answer is keyed
 * by what its route declares (`CachedBy`): the computation sees nothing else.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect, Metric, Option, Redacted } from "effect"
import * as Http from "node:http"
import { cachedBy } from "../../schema/Annotations.js"
import type { PrincipalShape } from "../../schema/Api/Security.js"
import { ApiKeys } from "../../src/catalog/auth/ApiKeys.js"
import { cacheKeyOf, replayedResponses } from "../../src/catalog/shared/Replay.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
import { ClaimsFixture, ClaimsFixtureLive, startJwksRelay } from "../support/Claims.js"
import { eventually } from "../support/Eventually.js"
import { expectProblem } from "../support/Problems.js"
import { serverLayerOptions } from "../support/TestServers.js"

const raw = (url: string, token: string, headers: Record<string, string> = {}) =>
  Effect.promise(() => fetch(url, { headers: { authorization: `Bearer ${token}`, ...headers } }))

/** The headers a client sees, without the ones that differ per response by design. */
const stable = (res: Response) => {
  const headers: Array<[string, string]> = []
  res.headers.forEach((value, name) => {
    // The request budget's state (`RateLimit`) moves with every request; its presence is still compared.
    if (name !== "x-request-id" && name !== "date") headers.push([name, name === "ratelimit" ? "(state)" : value])
  })
  return headers.sort()
}

/** Replayed answers so far (the servers run in this process). */
const hits = Effect.map(Metric.value(replayedResponses), (state) => state.count)

describe("stored answers replayed in the stack (docs/life-of-a-request.md, \"Stored answers\")", () => {
  it.layer(SeededCatalogLive({ works: 40, seed: 11 }), serverLayerOptions("180 seconds"))((it) => {
    it.effect("a repeated list, search and work answer equal the stack's, with a fresh X-Request-ID (docs/decisions.md, \"Catalog reads\")", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        for (
          const path of [
            "/v2/catalog/works?limit=5&sort=popularity",
            "/v2/catalog/search?q=a&limit=3",
            "/v2/catalog/works/2"
          ]
        ) {
          const first = yield* raw(`${catalog.base}${path}`, catalog.nsfwKey)
          const firstBody = yield* Effect.promise(() => first.text())
          const before = yield* hits
          for (let i = 0; i < 3; i++) {
            const again = yield* raw(`${catalog.base}${path}`, catalog.nsfwKey)
            expect(again.status).toBe(first.status)
            expect(stable(again)).toEqual(stable(first))
            expect(yield* Effect.promise(() => again.text())).toBe(firstBody)
            expect(again.headers.get("x-request-id")).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/)
            expect(again.headers.get("x-request-id")).not.toBe(first.headers.get("x-request-id"))
          }
          expect((yield* hits) - before).toBe(3)
        }
      }))

    it.effect("If-None-Match on a stored work: 304 with the ETag and no body (docs/api-contract.md, \"Caching, ETags and freshness\"; RFC 9110 section 13.1.2)", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const url = `${catalog.base}/v2/catalog/works/3`
        const first = yield* raw(url, catalog.nsfwKey)
        const etag = first.headers.get("etag")!
        expect(etag).toMatch(/^"/)
        const before = yield* hits
        for (const header of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
          const res = yield* raw(url, catalog.nsfwKey, { "if-none-match": header })
          expect(res.status).toBe(304)
          expect(res.headers.get("etag")).toBe(etag)
          expect(yield* Effect.promise(() => res.text())).toBe("")
        }
        expect((yield* raw(url, catalog.nsfwKey, { "if-none-match": "\"stale\"" })).status).toBe(200)
        expect((yield* hits) - before).toBe(5)
      }))

    it.effect("a stored URL still needs a live key with the route's scope and keeps the content gate (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const keys = yield* ApiKeys
        const path = "/v2/catalog/works?limit=40"
        const url = `${catalog.base}${path}`
        const nsfwItems = (yield* catalog.get(path)).body.items.length
        yield* catalog.get(path)

        // Same content limit, but without catalog:read: 403 even though the answer is stored.
        const { key: writeOnly } = yield* keys.create({
          site: "test_site",
          scopes: ["claims:write"],
          contentLimit: "nsfw",
          userId: null
        })
        // (The first request verifies the key; the second meets the verified key's cached principal.)
        for (let i = 0; i < 2; i++) {
          const forbidden = yield* raw(url, Redacted.value(writeOnly))
          yield* Effect.promise(() => expectProblem(forbidden, "SCOPE_REQUIRED", path))
        }

        // An sfw key gets its own answer, never the nsfw one.
        const sfw = yield* catalog.get(path, { key: "sfw" })
        expect(sfw.body.items.every((w: any) => w.content_rating === "sfw")).toBe(true)
        expect(sfw.body.items.length).toBeLessThan(nsfwItems)
        expect((yield* catalog.get(path, { key: "sfw" })).body).toEqual(sfw.body)

        // A key that read the stored URL, then revoked: 401 at once (revocation is NOTIFYed).
        const { key, record } = yield* keys.create({
          site: "test_site",
          scopes: ["catalog:read"],
          contentLimit: "nsfw",
          userId: null
        })
        expect((yield* raw(url, Redacted.value(key))).status).toBe(200)
        expect((yield* raw(url, Redacted.value(key))).status).toBe(200)
        yield* keys.revoke(record.id)
        yield* eventually(Effect.flatMap(
          raw(url, Redacted.value(key)),
          (revoked) => Effect.promise(() => expectProblem(revoked, "INVALID_CREDENTIAL", path))
        ))
      }).pipe(Effect.orDie))
  })
})

/** A GET through node:http, which leaves the body as sent (gzip stays gzip) and shows every header. */
const get = (url: string, headers: Record<string, string>) =>
  Effect.promise(() =>
    new Promise<{ status: number; headers: Http.IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
      Http.get(url, { headers }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks) }))
      }).on("error", reject)
    })
  )

/** Header names, and the values that must not differ between a computed answer and its replay. */
const comparable = (headers: Http.IncomingHttpHeaders) =>
  Object.fromEntries(
    Object.entries(headers)
      .filter(([name]) => name !== "date" && name !== "x-request-id" && name !== "ratelimit")
      .map(([name, value]) => [name, name === "connection" || name === "keep-alive" ? "(connection)" : value])
  )

const relay = await startJwksRelay()
afterAll(() => relay.close())

describe("one path for computed and replayed answers (docs/life-of-a-request.md, \"Stored answers\")", () => {
  it.layer(ClaimsFixtureLive({ config: { IDENTITY_JWKS_URL: relay.url } }), serverLayerOptions("180 seconds"))(
    (it) => {
      it.effect("a replayed answer carries the computed one's headers: a new X-Request-ID, RateLimit, ETag, Vary, Content-Encoding", () =>
        Effect.gen(function*() {
          const f = yield* ClaimsFixture
          const key = yield* f.makeKey("site_a", ["catalog:read"], null)
          for (
            const [path, gzip] of [
              [`/v2/catalog/works/${f.works[0]}?include=titles,refs`, true],
              [`/v2/catalog/works/${f.works[0]}?include=titles,refs`, false],
              ["/v2/catalog/works?limit=30&include=titles", true],
              ["/v2/catalog/works?limit=30&include=titles", false]
            ] as const
          ) {
            const headers = { authorization: `Bearer ${key}`, ...(gzip ? { "accept-encoding": "gzip" } : {}) }
            const before = yield* hits
            const computed = yield* get(`${f.base}${path}`, headers)
            const replayed = yield* get(`${f.base}${path}`, headers)
            // The first of the pair computed (or was computed by the previous pair), the second replayed.
            expect((yield* hits) - before).toBeGreaterThanOrEqual(1)
            expect(computed.status).toBe(200)
            expect(replayed.status).toBe(200)
            expect(comparable(replayed.headers)).toEqual(comparable(computed.headers))
            expect(replayed.body.equals(computed.body)).toBe(true)
            for (const answer of [computed, replayed]) {
              expect(answer.headers["x-request-id"]).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/)
              expect(answer.headers["ratelimit"]).toBeDefined()
              expect(answer.headers["ratelimit-policy"]).toBeDefined()
              expect(answer.headers["vary"]).toBe("accept-encoding")
              expect(answer.headers["content-encoding"]).toBe(gzip ? "gzip" : undefined)
              // The catalog sends no Cache-Control on reads (docs/api-contract.md, "Caching, ETags and freshness").
              expect(answer.headers["cache-control"]).toBe(computed.headers["cache-control"])
            }
            expect(replayed.headers["x-request-id"]).not.toBe(computed.headers["x-request-id"])
            if (path.startsWith("/v2/catalog/works/")) {
              // The gzip representation's tag ends in `-gzip"`; the identity one is the bare tag.
              expect(computed.headers.etag).toMatch(/^"[^"]+"$/)
              expect(computed.headers.etag!.endsWith("-gzip\"")).toBe(gzip)
              // The 304 of a replay names the representation's tag, as the stack's does (Compression.ts).
              const current = yield* get(`${f.base}${path}`, { ...headers, "if-none-match": computed.headers.etag! })
              expect(current.status).toBe(304)
              expect(current.headers.etag).toBe(computed.headers.etag)
              expect(current.headers["x-request-id"]).toMatch(/^req_/)
              expect(current.headers["ratelimit"]).toBeDefined()
            }
          }
        }))

      it.effect("access tokens take the same path: replayed, budgeted and checked like API keys", () =>
        Effect.gen(function*() {
          const f = yield* ClaimsFixture
          const path = "/v2/catalog/works?limit=7&sort=id"
          const key = yield* f.makeKey("site_a", ["catalog:read"], null)
          const stored = yield* get(`${f.base}${path}`, { authorization: `Bearer ${key}` })
          expect(stored.status).toBe(200)
          const userId = yield* f.makeUser([])
          const token = yield* relay.accessToken({ userId, scope: "openid catalog:read", site: "site_a" })
          const before = yield* hits
          const answer = yield* get(`${f.base}${path}`, { authorization: `Bearer ${token}` })
          expect(answer.status, answer.body.toString()).toBe(200)
          expect((yield* hits) - before).toBe(1)
          expect(answer.body.equals(stored.body)).toBe(true)
          expect(answer.headers["ratelimit"]).toBeDefined()
          // Without the route's scope the stored answer is not given.
          const unscoped = yield* relay.accessToken({ userId, scope: "openid claims:write", site: "site_a" })
          const refused = yield* get(`${f.base}${path}`, { authorization: `Bearer ${unscoped}` })
          expect(refused.status).toBe(403)
          expect(JSON.parse(refused.body.toString()).code).toBe("SCOPE_REQUIRED")
        }))

      it.effect("URLs that decode alike share a stored answer: parameter order and an ignored unknown parameter", () =>
        Effect.gen(function*() {
          const f = yield* ClaimsFixture
          const key = yield* f.makeKey("site_a", ["catalog:read"], null)
          const headers = { authorization: `Bearer ${key}` }
          const first = yield* get(`${f.base}/v2/catalog/works?limit=6&sort=popularity`, headers)
          const before = yield* hits
          for (
            const query of ["sort=popularity&limit=6", "limit=6&sort=popularity&_=1", "_=2&sort=popularity&limit=6"]
          ) {
            const again = yield* get(`${f.base}/v2/catalog/works?${query}`, headers)
            expect(again.status).toBe(200)
            expect(again.body.equals(first.body)).toBe(true)
          }
          expect((yield* hits) - before).toBe(3)
        }))
    }
  )
})

describe("the cache key is what the route declares (src/catalog/shared/Replay.ts)", () => {
  const principal = (site: string): PrincipalShape => ({
    credential: "api_key",
    credentialId: `key-${site}`,
    owner: `key-${site}`,
    site,
    scopes: new Set(["catalog:read"]),
    contentLimit: "sfw",
    user: Option.none()
  })
  const url = { query: { limit: 5 } }

  it("a route declaring `tenant` keeps one answer per site, and its computation sees the site", () => {
    const declared = cachedBy(["content_limit", "tenant", "url"])
    const a = cacheKeyOf("GET /v2/example", declared, principal("site_a"), url)
    const b = cacheKeyOf("GET /v2/example", declared, principal("site_b"), url)
    expect(a.key).not.toBe(b.key)
    expect(a.input.tenant).toBe("site_a")
    expect(b.input.tenant).toBe("site_b")
    expect(a.input.url).toEqual(url)
  })

  it("a route not declaring `tenant` shares one answer between sites, and its computation cannot read the site", () => {
    const declared = cachedBy(["content_limit", "url"])
    const a = cacheKeyOf("GET /v2/example", declared, principal("site_a"), url)
    const b = cacheKeyOf("GET /v2/example", declared, principal("site_b"), url)
    expect(a.key).toBe(b.key)
    expect(Object.keys(a.input).sort()).toEqual(["content_limit", "url"])
    // @ts-expect-error: the site is not part of this route's key, so its computation has no `tenant`.
    expect(a.input.tenant).toBeUndefined()
    // @ts-expect-error: nor the scopes.
    expect(a.input.scopes).toBeUndefined()
  })

  it("routes, content limits and scope sets separate keys only when declared", () => {
    const limited = cachedBy(["content_limit", "url"])
    const nsfw = { ...principal("site_a"), contentLimit: "nsfw" as const }
    expect(cacheKeyOf("GET /v2/a", limited, principal("site_a"), url).key).not.toBe(
      cacheKeyOf("GET /v2/a", limited, nsfw, url).key
    )
    expect(cacheKeyOf("GET /v2/a", limited, principal("site_a"), url).key).not.toBe(
      cacheKeyOf("GET /v2/b", limited, principal("site_a"), url).key
    )
    const scoped = cachedBy(["scopes"])
    const more = { ...principal("site_a"), scopes: new Set(["moderation", "catalog:read"] as const) }
    expect(cacheKeyOf("GET /v2/a", scoped, principal("site_a"), url).key).not.toBe(
      cacheKeyOf("GET /v2/a", scoped, more, url).key
    )
    expect(cacheKeyOf("GET /v2/a", scoped, more, url).input.scopes).toEqual(["catalog:read", "moderation"])
  })
})
