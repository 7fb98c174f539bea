/**
 * The release calendar (the list's `meta`, CalendarMeta in schema/Catalog/Calendar.ts) on a seeded
 * catalog whose dates are placed around the real today: the dated month window with navigation, the
 * year-only and undated windows with null navigation, `today` in Asia/Tokyo, keyset paging
 * (docs/api-contract.md, "Cursors and pages") and the content gate
 * (docs/api-contract.md, "Credentials, scopes and the content limit").
 * Runs on the real clock (the server reads today from `Clock`).
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { type ListCalendarParams } from "../../schema/Api/CalendarApi.js"
import type { CalendarList } from "../../schema/Catalog/Calendar.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
import { catalogClient, walkPages } from "../support/Clients.js"
import { expectProblem } from "../support/Problems.js"

type Key = "sfw" | "nsfw"

const problem = (path: string, code: Parameters<typeof expectProblem>[1]) =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const res = yield* Effect.promise(() =>
      fetch(`${catalog.base}${path}`, { headers: { authorization: `Bearer ${catalog.nsfwKey}` } })
    )
    return yield* Effect.promise(() => expectProblem(res, code, path))
  })

/** Every page of a window; each page must carry the same `meta`. */
const walk = (path: string, key: Key = "nsfw") =>
  Effect.gen(function*() {
    const catalog = yield* Catalog
    const items: Array<any> = []
    const metas: Array<any> = []
    let cursor: string | undefined
    do {
      const res = yield* catalog.get(cursor === undefined ? path : `${path}&cursor=${cursor}`, { key })
      expect(res.status, JSON.stringify(res.body)).toBe(200)
      items.push(...res.body.items)
      metas.push(res.body.meta)
      cursor = res.body.next_cursor
    } while (cursor !== undefined)
    for (const meta of metas) expect(meta).toEqual(metas[0])
    return { items, meta: metas[0] }
  })

/**
 * The same walk through the typed catalog client: pages decoded by CalendarList
 * (schema/Catalog/Calendar.ts); each page must carry the same `meta`.
 */
const walkTyped = (query: Omit<ListCalendarParams, "cursor">, key: Key = "nsfw") =>
  Effect.gen(function*() {
    const client = yield* catalogClient(key)
    const metas: Array<CalendarList["meta"]> = []
    const items = yield* walkPages((cursor) =>
      client.calendar.listCalendar({ query: { ...query, ...(cursor === undefined ? {} : { cursor }) } }).pipe(
        Effect.tap((page) => Effect.sync(() => metas.push(page.meta)))
      )
    )
    for (const meta of metas) expect(meta).toEqual(metas[0])
    return { items, meta: metas[0]! }
  })

interface Row {
  readonly id: string
  readonly key: number | null
  readonly released: string | null
}

/** The visible releases in calendar order (released_key, id), per content limit. */
const reference = (key: Key) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<Row>`
      SELECT r.id::text AS id, r.released_key AS key,
        CASE WHEN r.released_year IS NULL THEN NULL
          WHEN r.released_month IS NULL THEN r.released_year::text
          WHEN r.released_day IS NULL THEN r.released_year || '-' || lpad(r.released_month::text, 2, '0')
          ELSE r.released_year || '-' || lpad(r.released_month::text, 2, '0') || '-' || lpad(r.released_day::text, 2, '0')
        END AS released
      FROM releases r JOIN works w ON w.id = r.work_id
      WHERE r.live AND w.live ${key === "sfw" ? sql`AND NOT r.nsfw AND NOT w.nsfw` : sql``}
      ORDER BY r.released_key NULLS LAST, r.id`
  })

const monthOf = (row: Row) => row.released !== null && row.released.length >= 7 ? row.released.slice(0, 7) : null
const tokyoToday = () =>
  new Intl.DateTimeFormat("en-CA", { timeZone: "Asia/Tokyo", year: "numeric", month: "2-digit", day: "2-digit" })
    .format(new Date())

describe("release calendar (CalendarMeta, schema/Catalog/Calendar.ts)", () => {
  layer(SeededCatalogLive({ works: 300, seed: 3 }), { timeout: "180 seconds", excludeTestServices: true })((it) => {
    it.effect("default window: this Tokyo month, with today and the dated navigation (schema/Catalog/Calendar.ts)", () =>
      Effect.gen(function*() {
        const rows = yield* reference("nsfw")
        const today = tokyoToday()
        const month = today.slice(0, 7)
        const { items, meta } = yield* walkTyped({ limit: 4 })
        const months = rows.map(monthOf).filter((m): m is string => m !== null).sort()
        expect(meta).toEqual({
          today,
          min_month: months[0],
          max_month: months[months.length - 1],
          has_prev: months[0]! < month,
          has_next: months[months.length - 1]! > month
        })
        expect(items.map((i) => i.release.id)).toEqual(rows.filter((r) => monthOf(r) === month).map((r) => r.id))
      }))

    it.effect("month window: every release dated in the month, day or month precision, in date order", () =>
      Effect.gen(function*() {
        const rows = yield* reference("nsfw")
        // A month holding a release known only to the month, plus as many releases as possible.
        const perMonth = new Map<string, Array<Row>>()
        for (const r of rows) {
          const m = monthOf(r)
          if (m !== null) perMonth.set(m, [...(perMonth.get(m) ?? []), r])
        }
        const [month, expected] = [...perMonth.entries()]
          .filter(([, rs]) => rs.some((r) => r.released!.length === 7))
          .sort((a, b) => b[1].length - a[1].length)[0]!
        const { items, meta } = yield* walk(`/v2/catalog/calendar?window=month&month=${month}&limit=3`)
        expect(items.map((i) => [i.release.id, i.release.released])).toEqual(expected.map((r) => [r.id, r.released]))
        expect(items[0].release.released).toBe(month)
        expect(meta.has_prev).toBe(meta.min_month < month)
        expect(meta.has_next).toBe(meta.max_month > month)
        const entry = items[0]
        expect(entry).toMatchObject({ object: "work", content_rating: expect.stringMatching(/^(sfw|nsfw)$/) })
        expect(Object.keys(entry.release).sort()).toEqual(
          ["content_rating", "display_name", "id", "is_official", "languages", "platforms", "released"]
        )
        const sql = yield* SqlClient.SqlClient
        const [work] = yield* sql<
          { work_id: string }
        >`SELECT work_id::text AS work_id FROM releases WHERE id = ${entry.release.id}`
        expect(entry.id).toBe(work!.work_id)
      }))

    it.effect("month navigation at the edges: has_prev/has_next and min/max months (schema/Catalog/Calendar.ts)", () =>
      Effect.gen(function*() {
        const client = yield* catalogClient()
        const calendar = (query: ListCalendarParams) => client.calendar.listCalendar({ query })
        const { meta } = yield* calendar({})
        const first = yield* calendar({ month: meta.min_month! })
        expect(first.items.length).toBeGreaterThan(0)
        expect(first.meta).toMatchObject({ has_prev: false, has_next: true })
        const last = yield* calendar({ month: meta.max_month! })
        expect(last.items.length).toBeGreaterThan(0)
        expect(last.meta).toMatchObject({ has_prev: true, has_next: false })
        const before = yield* calendar({ month: "1901-01" })
        expect(before).toEqual({
          object: "list",
          items: [],
          meta: { ...meta, has_prev: false, has_next: true }
        })
        const after = yield* calendar({ month: "2199-12" })
        expect(after.meta).toMatchObject({ has_prev: true, has_next: false })
      }))

    it.effect("year-only and undated windows: their releases, navigation fields null (schema/Catalog/Calendar.ts)", () =>
      Effect.gen(function*() {
        const rows = yield* reference("nsfw")
        const yearOnly = rows.filter((r) => r.released?.length === 4)
        const years = new Map<string, number>()
        for (const r of yearOnly) years.set(r.released!, (years.get(r.released!) ?? 0) + 1)
        const [year] = [...years.entries()].sort((a, b) => b[1] - a[1])[0]!
        const nulls = { min_month: null, max_month: null, has_prev: null, has_next: null }
        const byYear = yield* walkTyped({ window: "year", year: Number(year), limit: 2 })
        expect(byYear.items.map((i) => [i.release.id, i.release.released])).toEqual(
          yearOnly.filter((r) => r.released === year).map((r) => [r.id, year])
        )
        expect(byYear.meta).toEqual({ today: tokyoToday(), ...nulls })
        const undated = yield* walkTyped({ window: "undated", limit: 5 })
        expect(undated.items.map((i) => i.release.id)).toEqual(rows.filter((r) => r.key === null).map((r) => r.id))
        expect(undated.items.every((i) => i.release.released === null)).toBe(true)
        expect(undated.meta).toEqual({ today: tokyoToday(), ...nulls })
      }))

    it.effect("content gate: an sfw credential sees no nsfw release and no release of an nsfw work (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const all = yield* reference("nsfw")
        const rows = yield* reference("sfw")
        expect(rows.length).toBeLessThan(all.length)
        const perMonth = new Map<string, number>()
        for (const r of all) if (monthOf(r)) perMonth.set(monthOf(r)!, (perMonth.get(monthOf(r)!) ?? 0) + 1)
        const month = [...perMonth.entries()].sort((a, b) => b[1] - a[1])[0]![0]
        const { items, meta } = yield* walkTyped({ month, limit: 100 }, "sfw")
        expect(items.map((i) => i.release.id)).toEqual(rows.filter((r) => monthOf(r) === month).map((r) => r.id))
        expect(items.every((i) => i.content_rating === "sfw" && i.release.content_rating === "sfw")).toBe(true)
        const months = rows.map(monthOf).filter((m): m is string => m !== null).sort()
        expect([meta.min_month, meta.max_month]).toEqual([months[0], months[months.length - 1]])
        const undated = yield* walkTyped({ window: "undated", limit: 100 }, "sfw")
        expect(undated.items.map((i) => i.release.id)).toEqual(rows.filter((r) => r.key === null).map((r) => r.id))
      }))

    it.effect("bad parameters: window/month/year conflicts, formats, foreign cursors (docs/api-contract.md, \"Errors: catalog problem documents\")", () =>
      Effect.gen(function*() {
        const conflict = yield* problem("/v2/catalog/calendar?window=year&month=2024-05", "INVALID_PARAMETER")
        expect(conflict.errors).toEqual([expect.objectContaining({ parameter: "month", reason: "INCONSISTENT_WITH" })])
        const stray = yield* problem("/v2/catalog/calendar?year=2024", "INVALID_PARAMETER")
        expect(stray.errors).toEqual([expect.objectContaining({ parameter: "year", reason: "INCONSISTENT_WITH" })])
        const bad = yield* problem("/v2/catalog/calendar?window=week&month=2024-13&year=1800", "INVALID_PARAMETER")
        expect(bad.errors).toEqual(expect.arrayContaining([
          expect.objectContaining({
            parameter: "window",
            reason: "UNKNOWN_VALUE",
            params: { allowed: ["month", "year", "undated"] }
          }),
          expect.objectContaining({ parameter: "month", reason: "INVALID_FORMAT" }),
          expect.objectContaining({ parameter: "year", reason: "OUT_OF_RANGE" })
        ]))
        const client = yield* catalogClient()
        const page = yield* client.calendar.listCalendar({ query: { window: "undated", limit: 1 } })
        expect(page.next_cursor).toBeDefined()
        const next = yield* client.calendar.listCalendar({
          query: { window: "undated", limit: 1, cursor: page.next_cursor! }
        })
        expect(next.items[0]!.release.id).not.toBe(page.items[0]!.release.id)
        yield* problem(`/v2/catalog/calendar?cursor=${page.next_cursor}`, "INVALID_CURSOR")
        yield* problem(`/v2/catalog/calendar?window=year&year=2001&cursor=${page.next_cursor}`, "INVALID_CURSOR")
      }))
  })
})
