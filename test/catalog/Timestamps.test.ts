/**
 * Catalog timestamps on the wire are RFC 3339 UTC with six fractional digits, written by PostgreSQL
 * (src/catalog/shared/Rfc3339.ts; docs/api-contract.md, "Records and lists": times are RFC 3339 UTC):
 * a value read back is exactly the stored `timestamptz`, microseconds included, which a JavaScript
 * `Date` (milliseconds) could not carry. Checked on the release record, the calendar entry and the
 * change feed, each against the stored column.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { rfc3339Sql } from "../../src/catalog/shared/Rfc3339.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"

const MICROSECONDS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/

describe("catalog timestamps (src/catalog/shared/Rfc3339.ts)", () => {
  it.layer(SeededCatalogLive({ works: 40, seed: 11 }), { timeout: "180 seconds" })((it) => {
    it.effect("release, calendar and change-feed times are the stored microseconds (docs/api-contract.md, \"Records and lists\")", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const sql = yield* SqlClient.SqlClient
        // A release dated to the day on a live work, as the month calendar lists it.
        const [release] = yield* sql<{ id: string; month: string; r_at: string; w_at: string }>`
          SELECT r.id::text AS id, to_char(make_date(r.released_year, r.released_month, 1), 'YYYY-MM') AS month,
            ${sql.literal(rfc3339Sql("r.updated_at"))} AS r_at, ${sql.literal(rfc3339Sql("w.updated_at"))} AS w_at
          FROM releases r JOIN works w ON w.id = r.work_id
          WHERE r.live AND w.live AND r.released_day IS NOT NULL
          ORDER BY r.id LIMIT 1`
        expect(release).toBeDefined()
        expect(release!.r_at).toMatch(MICROSECONDS)

        const detail = yield* catalog.get(`/v2/catalog/releases/${release!.id}`)
        expect(detail.status).toBe(200)
        expect(detail.body.updated_at).toBe(release!.r_at)

        const calendar = yield* catalog.get(`/v2/catalog/calendar?month=${release!.month}&limit=100`)
        const entry = calendar.body.items.find((item: any) => item.release.id === release!.id)
        expect(entry?.updated_at).toBe(release!.w_at)

        const feed = yield* catalog.get("/v2/catalog/changes?limit=100")
        expect(feed.body.items.length).toBeGreaterThan(0)
        const stored = new Map(
          (yield* sql<{ object: string; id: string; at: string }>`
            SELECT target_object AS object, id::text AS id, ${sql.literal(rfc3339Sql("updated_at"))} AS at
            FROM catalog_changes`).map((row) => [`${row.object}:${row.id}`, row.at])
        )
        for (const item of feed.body.items) {
          expect(item.updated_at).toMatch(MICROSECONDS)
          expect(item.updated_at).toBe(stored.get(`${item.target_object}:${item.id}`))
        }
      }))
  })
})
