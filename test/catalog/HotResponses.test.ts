/**
 * Hot responses (src/catalog/shared/HotResponses.ts): a repeated works read is answered before the
 * request stack runs, and that answer must be indistinguishable from the stack's and must never
 * bypass a rule the stack enforces: the credential checks (revoked key -> 401, missing scope -> 403)
 * and the content gate (docs/api-contract.md, "Credentials, scopes and the content limit"), and
 * conditional reads (docs/api-contract.md, "Caching, ETags and freshness").
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Metric, Redacted } from "effect"
import { ApiKeys } from "../../src/catalog/auth/ApiKeys.js"
import { hotResponses } from "../../src/catalog/shared/HotResponses.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
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

/** Hot answers so far (the servers run in this process). */
const hits = Effect.map(Metric.value(hotResponses), (state) => state.count)

describe("hot responses (docs/decisions.md, \"Catalog reads\")", () => {
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

    it.effect("If-None-Match on a hot work: 304 with the ETag and no body (docs/api-contract.md, \"Caching, ETags and freshness\"; RFC 9110 section 13.1.2)", () =>
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

    it.effect("a hot URL still needs a live key with the route's scope and keeps the content gate (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const keys = yield* ApiKeys
        const path = "/v2/catalog/works?limit=40"
        const url = `${catalog.base}${path}`
        const nsfwItems = (yield* catalog.get(path)).body.items.length
        yield* catalog.get(path)

        // Same content limit, but without catalog:read: 403 even though the answer is hot.
        const { key: writeOnly } = yield* keys.create({
          site: "test_site",
          scopes: ["claims:write"],
          contentLimit: "nsfw",
          userId: null
        })
        // (The first request verifies the key, so the second one meets the hot path's own check.)
        for (let i = 0; i < 2; i++) {
          const forbidden = yield* raw(url, Redacted.value(writeOnly))
          yield* Effect.promise(() => expectProblem(forbidden, "SCOPE_REQUIRED", path))
        }

        // An sfw key gets its own answer, never the nsfw one.
        const sfw = yield* catalog.get(path, { key: "sfw" })
        expect(sfw.body.items.every((w: any) => w.content_rating === "sfw")).toBe(true)
        expect(sfw.body.items.length).toBeLessThan(nsfwItems)
        expect((yield* catalog.get(path, { key: "sfw" })).body).toEqual(sfw.body)

        // A key that read the hot URL, then revoked: 401 at once (revocation is NOTIFYed).
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
