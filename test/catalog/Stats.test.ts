/**
 * Catalog statistics (CatalogStats, schema/Catalog/Stats.ts): exact counts of live rows, works and
 * characters under the content gate (docs/api-contract.md, "Credentials, scopes and the content
 * limit"), ETag, and the per-content-limit cache, kept `CATALOG_CACHE_SECONDS` (60) at most when no
 * notification empties it (docs/api-contract.md, "Caching, ETags and freshness"; driven here by the
 * TestClock the server runs on; a notified write: test/catalog/Freshness.test.ts).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { TestClock } from "effect/testing"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
import { expectProblem } from "../support/Problems.js"

const counts = (sfw: boolean) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const gate = sfw ? sql`AND NOT nsfw` : sql``
    const [row] = yield* sql<Record<string, number>>`
      SELECT
        (SELECT count(*) FROM works WHERE live ${gate})::int AS works,
        (SELECT count(*) FROM companies WHERE live)::int AS companies,
        (SELECT count(*) FROM characters WHERE live ${gate})::int AS characters,
        (SELECT count(*) FROM credit_names WHERE live)::int AS credit_names,
        (SELECT count(*) FROM persons WHERE live)::int AS persons`
    return { object: "catalog_stats", ...row }
  })

describe("catalog statistics (schema/Catalog/Stats.ts)", () => {
  it.layer(SeededCatalogLive({ works: 300, seed: 9 }), { timeout: "180 seconds" })((it) => {
    it.effect("exact live counts; works and characters under the content gate (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const nsfw = yield* catalog.get("/v2/catalog/stats")
        const sfw = yield* catalog.get("/v2/catalog/stats", { key: "sfw" })
        expect(nsfw.body).toEqual(yield* counts(false))
        expect(sfw.body).toEqual(yield* counts(true))
        expect(sfw.body.works).toBeLessThan(nsfw.body.works)
        expect(sfw.body.companies).toBe(nsfw.body.companies)
        // Merged and withdrawn rows are not counted.
        const sql = yield* SqlClient.SqlClient
        const [{ n }] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM works`
        expect(nsfw.body.works).toBeLessThan(n)
      }))

    it.effect("ETag and 304 (docs/api-contract.md, \"Caching, ETags and freshness\"); needs a credential (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const res = yield* catalog.get("/v2/catalog/stats")
        const etag = res.headers.get("etag")!
        expect((yield* catalog.get("/v2/catalog/stats", { headers: { "if-none-match": etag } })).status).toBe(304)
        const sfw = yield* catalog.get("/v2/catalog/stats", { key: "sfw", headers: { "if-none-match": etag } })
        expect(sfw.status).toBe(200)
        const anonymous = yield* Effect.promise(() => fetch(`${catalog.base}/v2/catalog/stats`))
        yield* Effect.promise(() => expectProblem(anonymous, "MISSING_CREDENTIAL", "/v2/catalog/stats"))
      }))

    it.effect("counted at most once per content limit every CATALOG_CACHE_SECONDS while no write is notified", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        const before = (yield* catalog.get("/v2/catalog/stats")).body
        // Against the convention: no catalog_touch, so no notification (the case the lifetime bounds).
        yield* sql`INSERT INTO works (display_name) VALUES ('A new work')`
        expect((yield* catalog.get("/v2/catalog/stats")).body).toEqual(before)
        yield* TestClock.adjust("61 seconds")
        expect((yield* catalog.get("/v2/catalog/stats")).body).toEqual({ ...before, works: before.works + 1 })
      }))
  })
})
