/**
 * Playtimes: a user's cumulative minutes on a work, and the per-work aggregate works serve with
 * `include=playtime` (docs/writing.md, "Playtimes").
 */
import { Schema } from "effect"
import { Id, ListOf, Timestamp } from "./Common.js"

/** Cumulative minutes played, as the client last reported them (absolute, not an increment). */
export const PlaytimeMinutes = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 60_000 })).annotate({
  description: "Cumulative minutes played on the work (absolute, 0 to 60000)."
})

export const Playtime = Schema.Struct({
  object: Schema.Literal("playtime"),
  work_id: Id,
  minutes: PlaytimeMinutes,
  updated_at: Timestamp.annotate({ description: "When the bearer last reported this work." })
}).annotate({ identifier: "Playtime", description: "The bearer's reported playtime on one work." })
export type Playtime = typeof Playtime.Type

export const ListPlaytime = ListOf(Playtime, "ListPlaytime")
export type ListPlaytime = typeof ListPlaytime.Type

export const PlaytimeItem = Schema.Struct({
  work_id: Id.annotate({ description: "The catalog work id (a served work the credential may see)." }),
  minutes: PlaytimeMinutes
}).annotate({ identifier: "PlaytimeItem" })
export type PlaytimeItem = typeof PlaytimeItem.Type

// Every failing item is reported, and a member the body's schema does not name is refused: the
// endpoint decodes bodies with `errors: "all"` and `onExcessProperty: "error"`.
export const BatchPlaytimesInputBody = Schema.Struct({
  items: Schema.Array(PlaytimeItem).check(Schema.isMaxLength(100)).annotate({
    description: "At most 100 works, each at most once (a repeated `work_id` is `DUPLICATE_ITEM`)."
  })
}).annotate({ identifier: "BatchPlaytimesInputBody" })
export type BatchPlaytimesInputBody = typeof BatchPlaytimesInputBody.Type

/** A work's playtime aggregate (include=playtime). */
export const WorkPlaytime = Schema.Struct({
  players: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)).annotate({
    description: "How many users reported a playtime on the work."
  }),
  median_minutes: Schema.NullOr(Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 60_000 }))).annotate({
    description: "The median of their minutes (the mean of the two middle values for an even count); null " +
      "without players."
  })
}).annotate({ identifier: "WorkPlaytime", description: "What the users' reported playtimes say about a work." })
export type WorkPlaytime = typeof WorkPlaytime.Type
