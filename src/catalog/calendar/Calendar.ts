/**
 * The release calendar: three windows over releases, keyset-paginated by (released_key, release id)
 * through the one pagination engine, with `meta` on every page.
 */
import { Context, DateTime, Effect, Layer } from "effect"
import type { CalendarWindow, ListCalendarParams } from "../../../schema/Api/CalendarApi.js"
import type { ContentLimit } from "../../../schema/Api/Security.js"
import type { CalendarEntry, CalendarList, CalendarMeta } from "../../../schema/Catalog/Calendar.js"
import { DEFAULT_LIMIT } from "../../../schema/Catalog/Query.js"
import { Cursors, filterDigest, pageOf } from "../pagination/Cursor.js"
import { inconsistent } from "../shared/Lanes.js"
import type { CalendarRange } from "./CalendarRepo.js"
import { CalendarRepo } from "./CalendarRepo.js"

/** The calendar's home timezone. */
export const CALENDAR_ZONE = "Asia/Tokyo"

/** Today's date (`YYYY-MM-DD`) in the calendar's timezone. */
export const calendarToday = Effect.map(
  DateTime.now,
  (now) => DateTime.formatIsoDate(DateTime.makeZonedUnsafe(now, { timeZone: CALENDAR_ZONE }))
)

/** `YYYY-MM` of a released_key (YYYYMMDD). */
const monthOfKey = (key: number): string =>
  `${String(Math.floor(key / 10000)).padStart(4, "0")}-${String(Math.floor(key / 100) % 100).padStart(2, "0")}`

export class Calendar extends Context.Service<Calendar>()("catalog/Calendar", {
  make: Effect.gen(function*() {
    const repo = yield* CalendarRepo
    const cursors = yield* Cursors

    const list = Effect.fn("Calendar.list")(function*(params: ListCalendarParams, limit: ContentLimit) {
      const window: CalendarWindow = params.window ?? "month"
      if (params.month !== undefined && window !== "month") {
        return yield* inconsistent(["month"], `window=${window}`)
      }
      if (params.year !== undefined && window !== "year") {
        return yield* inconsistent(["year"], `window=${window}`)
      }
      const nsfw = limit === "nsfw"
      const today = yield* calendarToday
      const month = params.month ?? today.slice(0, 7)
      const year = params.year ?? Number(today.slice(0, 4))

      const monthKey = Number(month.replace("-", "")) * 100
      const range: CalendarRange = window === "month"
        ? { _tag: "Dated", from: monthKey, to: monthKey + 31 }
        : window === "year"
        ? { _tag: "Dated", from: year * 10000, to: year * 10000 }
        : { _tag: "Undated" }

      // The "" member names the collection, as on every list (shared/Lanes.ts).
      const filters = filterDigest({
        "": "calendar",
        window,
        month: window === "month" ? month : undefined,
        year: window === "year" ? year : undefined
      })
      const after = params.cursor === undefined
        ? null
        : yield* Effect.map(
          cursors.decode(params.cursor, { sort: "calendar", filters }),
          (position) => ({ key: position.key[0] as number | null, id: position.id })
        )
      const pageSize = params.limit ?? DEFAULT_LIMIT
      const [rows, bounds] = yield* Effect.all([
        repo.page({ range, after, take: pageSize + 1, nsfw }),
        window === "month" ? repo.datedBounds(nsfw) : Effect.succeed(undefined)
      ], { concurrency: "unbounded" })
      const page = pageOf(
        rows,
        pageSize,
        (row) => ({ sort: "calendar", key: [row.key], id: row.entry.release.id }),
        (position) => cursors.encode(position, filters)
      )

      const meta: CalendarMeta = bounds === undefined
        ? { today, min_month: null, max_month: null, has_prev: null, has_next: null }
        : {
          today,
          min_month: bounds.first === null ? null : monthOfKey(bounds.first),
          max_month: bounds.last === null ? null : monthOfKey(bounds.last),
          has_prev: bounds.first !== null && monthOfKey(bounds.first) < month,
          has_next: bounds.last !== null && monthOfKey(bounds.last) > month
        }
      const items: ReadonlyArray<CalendarEntry> = page.items.map((row) => row.entry)
      const result: CalendarList = {
        object: "list",
        items,
        ...(page.next_cursor !== undefined ? { next_cursor: page.next_cursor } : {}),
        meta
      }
      return result
    })

    return { list } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([CalendarRepo.layer, Cursors.layer]))
}
