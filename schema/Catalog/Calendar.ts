/**
 * The release calendar: its items and the `meta` (CalendarMeta) its list always carries.
 */
import { Schema } from "effect"
import { ContentRating, DisplayString, LangTag, ListWithMetaOf, PartialDate, Platform, ReleaseId } from "./Common.js"
import { WorkBasic } from "./Work.js"

const Month = Schema.String.check(Schema.isPattern(/^\d{4}-(0[1-9]|1[0-2])$/u)).annotate({
  description: "`YYYY-MM`"
})

export const CalendarMeta = Schema.Struct({
  today: Schema.String.annotate({ format: "date" }).check(Schema.isPattern(/^\d{4}-\d{2}-\d{2}$/u)).annotate({
    description: "Today's date in Asia/Tokyo, the calendar's home timezone."
  }),
  min_month: Schema.NullOr(Month).annotate({
    description: "Earliest month with a dated release; null outside the dated month window or when it is empty."
  }),
  max_month: Schema.NullOr(Month).annotate({
    description: "Latest month with a dated release; null outside the dated month window or when it is empty."
  }),
  has_prev: Schema.NullOr(Schema.Boolean).annotate({
    description: "Whether an earlier month has releases; null outside the dated month window."
  }),
  has_next: Schema.NullOr(Schema.Boolean).annotate({
    description: "Whether a later month has releases; null outside the dated month window."
  })
}).annotate({
  identifier: "CalendarMeta",
  description: "Navigation of the release calendar. The four navigation fields are populated only in the " +
    "dated month window and are null in the year-only and undated windows."
})
export type CalendarMeta = typeof CalendarMeta.Type

export const CalendarRelease = Schema.Struct({
  id: ReleaseId,
  display_name: DisplayString,
  released: Schema.NullOr(PartialDate).annotate({
    description: "Full date in the month window, `YYYY` in the year-only window, null in the undated window."
  }),
  platforms: Schema.Array(Platform),
  languages: Schema.Array(LangTag),
  content_rating: ContentRating,
  is_official: Schema.Boolean
}).annotate({ identifier: "CalendarRelease", description: "The release that puts a work on the calendar." })
export type CalendarRelease = typeof CalendarRelease.Type

/** A calendar row: the work (view=basic) plus the release that dates it. */
export const CalendarEntry = Schema.Struct({ ...WorkBasic.fields, release: CalendarRelease }).annotate({
  identifier: "CalendarEntry",
  description: "A work on the release calendar, with the release that dates it."
})
export type CalendarEntry = typeof CalendarEntry.Type

export const CalendarList = ListWithMetaOf(CalendarEntry, CalendarMeta, "CalendarList")
export type CalendarList = typeof CalendarList.Type
