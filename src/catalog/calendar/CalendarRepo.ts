/**
 * SQL of the release calendar, over the `releases_calendar` index (released_key, id) WHERE live.
 * `released_key` is YYYYMMDD with 00 for an unknown month or day: a month window is the key range
 * YYYYMM00..YYYYMM31, the year-only window the single key YYYY0000, the undated window NULL.
 * Content gate as in ReleasesRepo.
 */
import { Context, Effect, Layer, Schema, Struct } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { type CalendarEntry, CalendarRelease } from "../../../schema/Catalog/Calendar.js"
import { WorkBasic } from "../../../schema/Catalog/Work.js"
import { DatePart, partialDate, releaseGate } from "../releases/ReleasesRepo.js"
import { rfc3339Sql } from "../shared/Rfc3339.js"

/** Which releases a page reads: a key range (month and year windows) or the undated ones. */
export const CalendarRange = Schema.Union([
  Schema.TaggedStruct("Dated", { from: Schema.Int, to: Schema.Int }),
  Schema.TaggedStruct("Undated", {})
])
export type CalendarRange = typeof CalendarRange.Type

/** Keys of the first and last releases dated at least to the month (year-only keys end in 0000). */
const FIRST_KEY = 19000100
const LAST_KEY = 22001231

/** `released_key` (integer): YYYYMMDD, null when undated. */
const Key = Schema.NullOr(Schema.Int)

const CalendarRow = Schema.Struct({
  key: Key,
  release_id: CalendarRelease.fields.id,
  release_name: CalendarRelease.fields.display_name,
  release_year: DatePart,
  release_month: DatePart,
  release_day: DatePart,
  release_platforms: CalendarRelease.fields.platforms,
  release_languages: CalendarRelease.fields.languages,
  release_nsfw: Schema.Boolean,
  release_official: CalendarRelease.fields.is_official,
  ...Struct.pick(WorkBasic.fields, ["id", "display_name", "latin", "olang", "localized"]),
  released_year: DatePart,
  released_month: DatePart,
  released_day: DatePart,
  nsfw: Schema.Boolean,
  ...Struct.pick(WorkBasic.fields, ["length_minutes", "platforms", "media", "popularity"]),
  /** Written by PostgreSQL (rfc3339Sql). */
  updated_at: Schema.String
})
type CalendarRow = typeof CalendarRow.Type

const Bounds = Schema.Struct({ first: Key, last: Key })

const CalendarRequest = Schema.Struct({
  range: CalendarRange,
  after: Schema.NullOr(Schema.Struct({ key: Key, id: Schema.String })),
  take: Schema.Int,
  nsfw: Schema.Boolean
})

export interface CalendarPageRow {
  readonly entry: CalendarEntry
  /** The keyset position of the row: its `released_key` (null when undated) and release id. */
  readonly key: number | null
}

const toEntry = (row: CalendarRow): CalendarPageRow => ({
  key: row.key,
  entry: {
    object: "work",
    id: row.id,
    display_name: row.display_name,
    latin: row.latin,
    olang: row.olang,
    localized: row.localized,
    released: partialDate(row.released_year, row.released_month, row.released_day),
    content_rating: row.nsfw ? "nsfw" : "sfw",
    length_minutes: row.length_minutes,
    platforms: row.platforms,
    media: row.media,
    popularity: row.popularity,
    updated_at: row.updated_at,
    release: {
      id: row.release_id,
      display_name: row.release_name,
      released: partialDate(row.release_year, row.release_month, row.release_day),
      platforms: row.release_platforms,
      languages: row.release_languages,
      content_rating: row.release_nsfw ? "nsfw" : "sfw",
      is_official: row.release_official
    }
  }
})

export class CalendarRepo extends Context.Service<CalendarRepo>()("catalog/CalendarRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    const findPage = SqlSchema.findAll({
      Request: CalendarRequest,
      Result: CalendarRow,
      execute: (options) => {
        const { after, range } = options
        const where = range._tag === "Undated"
          ? sql`r.released_key IS NULL ${after === null ? sql`` : sql`AND r.id > ${after.id}`}`
          : sql`r.released_key BETWEEN ${range.from} AND ${range.to}
            ${after === null ? sql`` : sql`AND (r.released_key, r.id) > (${after.key ?? 0}, ${after.id}::bigint)`}`
        return sql`
        SELECT r.released_key AS key, r.id::text AS release_id, r.display_name AS release_name,
          r.released_year AS release_year, r.released_month AS release_month, r.released_day AS release_day,
          r.platforms AS release_platforms, r.languages AS release_languages, r.nsfw AS release_nsfw,
          r.is_official AS release_official,
          w.id::text AS id, w.display_name, w.latin, w.olang, w.localized, w.released_year, w.released_month,
          w.released_day, w.nsfw, w.length_minutes, w.platforms, w.media, w.popularity,
          ${sql.literal(rfc3339Sql("w.updated_at"))} AS updated_at
        FROM releases r JOIN works w ON w.id = r.work_id
        WHERE ${releaseGate(sql, options.nsfw)} AND ${where}
        ORDER BY ${range._tag === "Undated" ? sql`r.id` : sql`r.released_key, r.id`}
        LIMIT ${options.take}
      `
      }
    })
    const page = (options: typeof CalendarRequest.Type) =>
      findPage(options).pipe(
        Effect.orDie,
        Effect.map((rows) => rows.map(toEntry)),
        Effect.withSpan("CalendarRepo.page")
      )

    /** The keys of the first and last visible releases dated at least to the month; null when none. */
    const findBounds = SqlSchema.findOne({
      Request: Schema.Boolean,
      Result: Bounds,
      execute: (nsfw) =>
        sql`
        SELECT
          (SELECT r.released_key FROM releases r JOIN works w ON w.id = r.work_id
            WHERE ${releaseGate(sql, nsfw)} AND r.released_key BETWEEN ${FIRST_KEY} AND ${LAST_KEY}
              AND r.released_month IS NOT NULL
            ORDER BY r.released_key LIMIT 1) AS first,
          (SELECT r.released_key FROM releases r JOIN works w ON w.id = r.work_id
            WHERE ${releaseGate(sql, nsfw)} AND r.released_key BETWEEN ${FIRST_KEY} AND ${LAST_KEY}
              AND r.released_month IS NOT NULL
            ORDER BY r.released_key DESC LIMIT 1) AS last
      `
    })
    const datedBounds = (nsfw: boolean) =>
      findBounds(nsfw).pipe(Effect.orDie, Effect.withSpan("CalendarRepo.datedBounds"))

    return { page, datedBounds } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
