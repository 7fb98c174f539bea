/**
 * Releases: the editions in which a work was (or will be) published.
 */
import { Schema } from "effect"
import {
  ContentRating,
  DisplayString,
  LangTag,
  ListOf,
  Localized,
  Medium,
  PartialDate,
  Platform,
  Ref,
  ReleaseId,
  Timestamp,
  WorkId,
  WorkLink
} from "./Common.js"
import { CompanyBasic } from "./Company.js"
import { EngineRef } from "./Engine.js"

export const CompanyRole = Schema.Literals(["developer", "publisher"])
export type CompanyRole = typeof CompanyRole.Type

export const ReleaseCompany = Schema.Struct({
  company: CompanyBasic,
  roles: Schema.NonEmptyArray(CompanyRole).annotate({ description: "`developer` and/or `publisher`." })
}).annotate({ identifier: "ReleaseCompany", description: "A company involved in a release, with its roles." })
export type ReleaseCompany = typeof ReleaseCompany.Type

export const Release = Schema.Struct({
  object: Schema.Literal("release"),
  id: ReleaseId,
  work_id: WorkId.annotate({ description: "The work this release publishes." }),
  display_name: DisplayString.annotate({ description: "Title as printed on this release." }),
  latin: Schema.NullOr(DisplayString).annotate({ description: "Romanization of display_name; null if none." }),
  lang: Schema.NullOr(LangTag).annotate({ description: "Language of display_name." }),
  localized: Localized,
  released: Schema.NullOr(PartialDate).annotate({
    description: "Release date (`YYYY`, `YYYY-MM` or `YYYY-MM-DD`); may lie in the future; null when " +
      "undated (TBA)."
  }),
  languages: Schema.Array(LangTag).annotate({ description: "Languages the release is playable in." }),
  platforms: Schema.Array(Platform),
  media: Schema.Array(Medium).annotate({ description: "`[]` for a release without a recorded medium." }),
  content_rating: ContentRating,
  min_age: Schema.NullOr(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 21 }))).annotate({
    description: "Minimum age of the official age rating; null if unrated."
  }),
  release_kind: Schema.Literals(["complete", "partial", "trial"]).annotate({
    description: "`complete`, `partial` (episode or chapter) or `trial` (demo)."
  }),
  is_official: Schema.Boolean.annotate({ description: "False for fan translations and unofficial ports." }),
  is_patch: Schema.Boolean.annotate({ description: "True when the release is a patch to another release." }),
  is_freeware: Schema.Boolean,
  voiced: Schema.NullOr(Schema.Literals(["none", "ero_only", "partial", "full"])).annotate({
    description: "Voice acting: `none`, `ero_only` (only sexual scenes), `partial`, `full`; null if unknown."
  }),
  engine: Schema.NullOr(EngineRef),
  companies: Schema.Array(ReleaseCompany).annotate({ description: "`[]` if none recorded." }),
  gtin: Schema.NullOr(Schema.String.check(Schema.isPattern(/^[0-9]{8,14}$/u))).annotate({
    description: "JAN/EAN/UPC barcode; null if none."
  }),
  catalog_number: Schema.NullOr(Schema.String.check(Schema.isMaxLength(64))),
  updated_at: Timestamp,
  refs: Schema.optionalKey(Schema.Array(Ref).annotate({ description: "include=refs." })),
  links: Schema.optionalKey(Schema.Array(WorkLink).annotate({ description: "include=links." }))
}).annotate({
  identifier: "Release",
  description: "An edition of a work: a dated product on given platforms and in given languages."
})
export type Release = typeof Release.Type

export const ListRelease = ListOf(Release, "ListRelease")
export type ListRelease = typeof ListRelease.Type
