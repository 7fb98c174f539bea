/**
 * News items and the body that posts one (docs/writing.md, "News"). A news item comes from a news
 * source: a name an operator binds to one site (`news-source create`), so only that site's
 * credentials post under it, and which the operator can disable (`news-source disable`).
 */
import { Schema } from "effect"
import { isNotBlank, isStorable, StorableText } from "../Text.js"
import { Id, ListOf, Timestamp, Url } from "./Common.js"

/** A news source's name. */
export const NewsSourceName = Schema.String.check(
  Schema.isPattern(/^[a-z][a-z0-9_]*$/u),
  Schema.isMinLength(1),
  Schema.isMaxLength(64)
).annotate({ description: "A news source (`^[a-z][a-z0-9_]*$`, 1 to 64 characters), bound to one site." })

export const NewsLane = Schema.Literals(["news", "column"]).annotate({
  description: "`news`: a report; `column`: an opinion or feature piece."
})
export type NewsLane = typeof NewsLane.Type

/** The most Unicode code points a summary holds (the schema's length counts UTF-16 units). */
export const SUMMARY_MAX_CODE_POINTS = 200

/** Days in `month` (1-12) of `year`, proleptic Gregorian. */
const daysIn = (year: number, month: number) => new Date(Date.UTC(year, month, 0)).getUTCDate()

const rfc3339 =
  /^([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(?:\.[0-9]{1,9})?(?:[Zz]|[+-]([0-9]{2}):([0-9]{2}))$/u

/**
 * True when `text` is an RFC 3339 `date-time` (RFC 3339 section 5.6) naming a real instant: a day the
 * month has, hours to 23, minutes and seconds to 59 (a leap second is refused: PostgreSQL has none),
 * an offset within a day, a year from 0001.
 */
export const isRfc3339DateTime = (text: string): boolean => {
  const m = rfc3339.exec(text)
  if (m === null) return false
  const [year, month, day, hour, minute, second] = m.slice(1, 7).map(Number) as [
    number,
    number,
    number,
    number,
    number,
    number
  ]
  const offsetOk = m[7] === undefined || (Number(m[7]) <= 23 && Number(m[8]) <= 59)
  return year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= daysIn(year, month) && hour <= 23 &&
    minute <= 59 && second <= 59 && offsetOk
}

/** An RFC 3339 date-time a request gives. */
export const DateTimeInput = Schema.String.annotate({ format: "date-time" }).check(
  Schema.isMaxLength(64),
  Schema.makeFilter((text: string) => isRfc3339DateTime(text), {
    expected: "an RFC 3339 date-time",
    message: "must be an RFC 3339 date-time, e.g. 2025-06-01T09:30:00Z"
  })
).annotate({ description: "RFC 3339 date-time (`2025-06-01T09:30:00Z`, `2025-06-01T18:30:00+09:00`)." })

export const BannerHash = Schema.String.check(Schema.isPattern(/^(?:[0-9a-f]{64})?$/u)).annotate({
  description: "Empty, or the SHA-256 of the banner image: 64 lowercase hex digits (the format alone is checked)."
})

export const CreateNewsInputBody = Schema.Struct({
  source: NewsSourceName.annotate({
    description: "A news source bound to the credential's site and active; otherwise 422 `NOT_PERMITTED`."
  }),
  title: StorableText.check(Schema.isMinLength(1), Schema.isMaxLength(512), isNotBlank).annotate({
    description: "The headline, 1 to 512 characters."
  }),
  summary: StorableText.check(Schema.isMinLength(1), Schema.isMaxLength(2000), isNotBlank).annotate({
    description: `The summary: at most ${SUMMARY_MAX_CODE_POINTS} Unicode code points (\`TOO_LONG\` with ` +
      `\`max_length: ${SUMMARY_MAX_CODE_POINTS}\` past that), whatever script it is written in.`
  }),
  source_url: Url(1024).check(Schema.isMinLength(1), isStorable).annotate({
    description: "The article at the source: an absolute http(s) URL. One news item per URL: 409 `ALREADY_EXISTS`."
  }),
  lane: Schema.optionalKey(NewsLane.annotate({ description: "Default `news`." })),
  published_at: Schema.optionalKey(DateTimeInput.annotate({
    description: "When the source published it (RFC 3339); default the submission time."
  })),
  banner_hash: Schema.optionalKey(BannerHash),
  work_ids: Schema.optionalKey(
    Schema.Array(Id).check(Schema.isMaxLength(100)).annotate({
      description: "Works the item is about (at most 100), linked with `manual` confidence. An id no visible work " +
        "has is 422 `UNKNOWN_REFERENCE` at `/work_ids/<n>`."
    })
  )
}).annotate({ identifier: "CreateNewsInputBody", description: "A news item to post." })
export type CreateNewsInputBody = typeof CreateNewsInputBody.Type

export const NewsItem = Schema.Struct({
  object: Schema.Literal("news_item"),
  id: Id.annotate({ description: "The news item id." }),
  source: NewsSourceName,
  site: Schema.String.check(Schema.isMaxLength(64)).annotate({ description: "The site the source is bound to." }),
  title: Schema.String,
  summary: Schema.String,
  source_url: Url(1024),
  lane: NewsLane,
  published_at: Timestamp,
  banner_hash: Schema.NullOr(Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}$/u))).annotate({
    description: "The banner image's SHA-256; null when the item has none."
  }),
  work_ids: Schema.Array(Id).annotate({
    description: "The linked works the reader may see, in the order given (an `sfw` credential is not shown nsfw " +
      "works; a work no longer served is left out)."
  }),
  created_at: Timestamp
}).annotate({ identifier: "NewsItem", description: "A news item." })
export type NewsItem = typeof NewsItem.Type

export const ListNewsItem = ListOf(NewsItem, "ListNewsItem")
export type ListNewsItem = typeof ListNewsItem.Type
