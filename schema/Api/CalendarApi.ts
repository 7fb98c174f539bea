/**
 * The release calendar: a list that always carries `meta` (CalendarMeta, schema/Catalog/Calendar.ts).
 */
import { Schema, SchemaTransformation } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { RequiredScope } from "../Annotations.js"
import { CalendarList } from "../Catalog/Calendar.js"
import { CursorParam, Limit } from "../Catalog/Query.js"
import { InvalidCursor, LimitTooLarge, problem } from "../Problem.js"
import { Authorization } from "./Security.js"

export const CalendarWindow = Schema.Literals(["month", "year", "undated"]).annotate({
  description: "Which releases: `month` (dated to a day or a month, in the month given by `month=`; the " +
    "default), `year` (known only to the year given by `year=`), `undated` (no date at all)."
})
export type CalendarWindow = typeof CalendarWindow.Type

export const ListCalendarParams = Schema.Struct({
  window: Schema.optional(CalendarWindow),
  month: Schema.optional(
    Schema.String.check(Schema.isPattern(/^\d{4}-(0[1-9]|1[0-2])$/u)).annotate({
      description: "`YYYY-MM`: the month of the `month` window; default the current month in Asia/Tokyo.",
      examples: ["2025-07"]
    })
  ),
  year: Schema.optional(
    // The description sits on the string side: that is what the OpenAPI document shows of a query parameter.
    Schema.String.annotate({
      description: "`YYYY`: the year of the `year` window; default the current year in " +
        "Asia/Tokyo."
    }).pipe(
      Schema.decodeTo(
        Schema.Number.check(Schema.isInt(), Schema.isBetween({ minimum: 1900, maximum: 2200 })),
        SchemaTransformation.numberFromString
      )
    )
  ),
  limit: Schema.optional(Limit),
  cursor: Schema.optional(CursorParam)
})
export type ListCalendarParams = typeof ListCalendarParams.Type

/** Every failing parameter is reported, not only the first (parse options of the query). */
const strict = { errors: "all" } as const

export class CalendarApi extends HttpApiGroup.make("calendar")
  .add(
    HttpApiEndpoint.get("listCalendar", "/v2/catalog/calendar", {
      query: ListCalendarParams,
      success: CalendarList,
      error: [
        problem(LimitTooLarge),
        problem(InvalidCursor)
      ]
    })
      .annotate(OpenApi.Summary, "Release calendar")
      .annotate(
        OpenApi.Description,
        "Releases with the work each one dates, in date order then release id, keyset-paginated (`cursor` = the " +
          "previous `next_cursor`). Three windows (`window=`): `month` (default; `month=YYYY-MM`, default the " +
          "current month in Asia/Tokyo; a release dated only to the month comes first in its month with " +
          "`released` = `YYYY-MM`), `year` (`year=YYYY`: releases known only to the year), `undated`. `meta` " +
          "(CalendarMeta) is always present: `today` in Asia/Tokyo; in the month window `min_month`/`max_month` " +
          "are the first and last months with a dated release (null when there is none) and `has_prev`/" +
          "`has_next` say whether an earlier or later month has one; in the year and undated windows those four " +
          "are null. `month=` outside the month window or `year=` outside the year window is 400 " +
          "`INVALID_PARAMETER` (`INCONSISTENT_WITH`). An `sfw` credential sees no nsfw release and no release " +
          "of an nsfw work."
      )
  )
  .middleware(Authorization)
  .annotate(HttpApi.QueryParseOptions, strict)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "Calendar")
  .annotate(OpenApi.Description, "The release calendar, in the Asia/Tokyo timezone.")
{}
