/**
 * Works: the visual novels themselves, at each `view=` and with what each `include=` token adds.
 */
import { Schema } from "effect"
import { RosterCharacter } from "./Character.js"
import {
  ContentRating,
  Cover,
  DisplayString,
  EntityName,
  Intro,
  LangTag,
  ListOf,
  Localized,
  Medium,
  PartialDate,
  Platform,
  RatingSource,
  Ref,
  Timestamp,
  WorkId,
  WorkLink
} from "./Common.js"
import { CompanyBasic } from "./Company.js"
import { CreditGroup } from "./Credit.js"
import { EngineRef } from "./Engine.js"
import { WorkPlaytime } from "./Playtime.js"
import { CompanyRole } from "./Release.js"
import { WorkTag } from "./Tag.js"

/** One title of a work in one language (include=titles). */
export const WorkTitle = Schema.Struct({
  lang: LangTag,
  value: DisplayString,
  latin: Schema.NullOr(DisplayString).annotate({ description: "Romanization of value; null if none." }),
  is_main: Schema.Boolean.annotate({
    description: "True for the one title in the original language that is the work's display_name."
  }),
  is_official: Schema.Boolean.annotate({ description: "False for fan or unofficial translations." })
}).annotate({ identifier: "WorkTitle", description: "A title of a work in one language." })
export type WorkTitle = typeof WorkTitle.Type

/** A company's part in a work (include=companies). */
export const WorkCompany = Schema.Struct({
  company: CompanyBasic,
  roles: Schema.NonEmptyArray(CompanyRole).annotate({ description: "`developer` and/or `publisher`." })
}).annotate({ identifier: "WorkCompany", description: "A company that developed or published a work." })
export type WorkCompany = typeof WorkCompany.Type

/** A rating from one source (include=ratings). */
export const Rating = Schema.Struct({
  source: RatingSource,
  // `Finite`: the range already rules out NaN and the infinities, and a finite number is documented
  // as a plain JSON number with its bounds (a `Number` is documented with its non-finite spellings).
  score: Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 100 })).annotate({
    description: "The source's average rating normalized to 0..100 (one decimal)."
  }),
  votes: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)).annotate({
    description: "Number of votes behind the score."
  })
}).annotate({
  identifier: "Rating",
  description: "A rating of the work at one of the five rating sources. Sources without a rating are omitted."
})
export type Rating = typeof Rating.Type

export const DevelopmentStatus = Schema.Literals(["finished", "in_development", "cancelled"])

const workBasicFields = {
  object: Schema.Literal("work"),
  id: WorkId,
  display_name: DisplayString.annotate({ description: "Main title, in the original language's script." }),
  latin: Schema.NullOr(DisplayString).annotate({
    description: "Romanization of display_name; null when display_name is in Latin script."
  }),
  olang: Schema.NullOr(LangTag).annotate({ description: "Original language of the work; null if unknown." }),
  localized: Localized.annotate({
    description: "The work's title per language (the main title of each language), `{}` if none."
  }),
  released: Schema.NullOr(PartialDate).annotate({
    description: "First release date (`YYYY`, `YYYY-MM` or `YYYY-MM-DD`), possibly in the future; null when " +
      "no dated release exists."
  }),
  content_rating: ContentRating,
  length_minutes: Schema.NullOr(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0))).annotate({
    description: "Typical time to finish, in minutes; null if unknown."
  }),
  platforms: Schema.Array(Platform).annotate({ description: "Platforms of all releases; `[]` if none." }),
  media: Schema.Array(Medium).annotate({ description: "Media of all releases; `[]` if none." }),
  popularity: Schema.Finite.check(Schema.isBetween({ minimum: 0, maximum: 100 })).annotate({
    description: "Relative popularity, 0..100 (100 = the most popular work); the `popularity` sort key."
  }),
  updated_at: Timestamp.annotate({ description: "When the work's record last changed." })
}

/** A work at view=basic (also how works are nested in other records). */
export const WorkBasic = Schema.Struct(workBasicFields).annotate({
  identifier: "WorkBasic",
  description: "A visual novel at view=basic."
})
export type WorkBasic = typeof WorkBasic.Type

const workFullDescriptions = {
  aliases: "Other names and abbreviations; `[]` if none.",
  development_status: "`finished`, `in_development` or `cancelled`.",
  engine: "Engine of the main release; null if unknown.",
  links: "Official and store pages; `[]` if none.",
  created_at: "When the work entered the catalog."
} as const

const workFullFields = {
  aliases: Schema.Array(EntityName).annotate({ description: workFullDescriptions.aliases }),
  development_status: DevelopmentStatus.annotate({ description: workFullDescriptions.development_status }),
  engine: Schema.NullOr(EngineRef).annotate({ description: workFullDescriptions.engine }),
  links: Schema.Array(WorkLink).annotate({ description: workFullDescriptions.links }),
  created_at: Timestamp.annotate({ description: workFullDescriptions.created_at })
}

/** A work at view=full, without includes. */
export const WorkFull = Schema.Struct({ ...workBasicFields, ...workFullFields }).annotate({
  identifier: "WorkFull",
  description: "A visual novel at view=full."
})
export type WorkFull = typeof WorkFull.Type

const viewFull = (key: keyof typeof workFullDescriptions) => ({
  description: `view=full. ${workFullDescriptions[key]}`
})

/** The work record as served: basic fields, view=full fields, and include-only fields. */
export const Work = Schema.Struct({
  ...workBasicFields,
  aliases: Schema.optionalKey(workFullFields.aliases.annotate(viewFull("aliases"))),
  development_status: Schema.optionalKey(workFullFields.development_status.annotate(viewFull("development_status"))),
  engine: Schema.optionalKey(workFullFields.engine.annotate(viewFull("engine"))),
  links: Schema.optionalKey(workFullFields.links.annotate(viewFull("links"))),
  created_at: Schema.optionalKey(workFullFields.created_at.annotate(viewFull("created_at"))),
  characters: Schema.optionalKey(
    Schema.Array(RosterCharacter).annotate({
      description: "view=full on the single-work read only: the character roster, each row with its opaque " +
        "`identity`. Lists use the roster endpoint instead."
    })
  ),
  titles: Schema.optionalKey(Schema.Array(WorkTitle).annotate({ description: "include=titles: every title." })),
  refs: Schema.optionalKey(Schema.Array(Ref).annotate({ description: "include=refs." })),
  intros: Schema.optionalKey(Schema.Array(Intro).annotate({ description: "include=intros: descriptions." })),
  covers: Schema.optionalKey(Schema.Array(Cover).annotate({ description: "include=covers, best first." })),
  companies: Schema.optionalKey(Schema.Array(WorkCompany).annotate({ description: "include=companies." })),
  ratings: Schema.optionalKey(
    Schema.Array(Rating).annotate({
      description: "include=ratings: one entry per rating source that rates the work."
    })
  ),
  tags: Schema.optionalKey(Schema.Array(WorkTag).annotate({ description: "include=tags, highest score first." })),
  credits: Schema.optionalKey(Schema.Array(CreditGroup).annotate({ description: "include=credits." })),
  playtime: Schema.optionalKey(
    WorkPlaytime.annotate({ description: "include=playtime: the users' reported playtimes on the work." })
  )
}).annotate({
  identifier: "Work",
  description: "A visual novel. view=basic gives the fields every list needs; view=full adds aliases, status, " +
    "engine and links; `include=` adds titles, refs, intros, covers, companies, ratings, tags, credits and the playtime aggregate."
})
export type Work = typeof Work.Type

export const ListWork = ListOf(Work, "ListWork")
export type ListWork = typeof ListWork.Type
