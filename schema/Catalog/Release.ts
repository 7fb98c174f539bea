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

export const CompanyRole = Schema.Literal("developer", "publisher")
export type CompanyRole = typeof CompanyRole.Type

export const ReleaseCompany = Schema.Struct({
  company: CompanyBasic,
  roles: Schema.NonEmptyArray(CompanyRole).annotations({ description: "`developer` and/or `publisher`." })
}).annotations({ identifier: "ReleaseCompany", description: "A company involved in a release, with its roles." })
export type ReleaseCompany = typeof ReleaseCompany.Type

export const Release = Schema.Struct({
  object: Schema.Literal("release"),
  id: ReleaseId,
  work_id: WorkId.annotations({ description: "The work this release publishes." }),
  display_name: DisplayString.annotations({ description: "Title as printed on this release." }),
  latin: Schema.NullOr(DisplayString).annotations({ description: "Romanization of display_name; null if none." }),
  lang: Schema.NullOr(LangTag).annotations({ description: "Language of display_name." }),
  localized: Localized,
  released: Schema.NullOr(PartialDate).annotations({
    description: "Release date (`YYYY`, `YYYY-MM` or `YYYY-MM-DD`); may lie in the future; null when " +
      "undated (TBA)."
  }),
  languages: Schema.Array(LangTag).annotations({ description: "Languages the release is playable in." }),
  platforms: Schema.Array(Platform),
  media: Schema.Array(Medium).annotations({ description: "`[]` for a release without a recorded medium." }),
  content_rating: ContentRating,
  min_age: Schema.NullOr(Schema.Int.pipe(Schema.between(0, 21))).annotations({
    description: "Minimum age of the official age rating; null if unrated."
  }),
  release_kind: Schema.Literal("complete", "partial", "trial").annotations({
    description: "`complete`, `partial` (episode or chapter) or `trial` (demo)."
  }),
  is_official: Schema.Boolean.annotations({ description: "False for fan translations and unofficial ports." }),
  is_patch: Schema.Boolean.annotations({ description: "True when the release is a patch to another release." }),
  is_freeware: Schema.Boolean,
  voiced: Schema.NullOr(Schema.Literal("none", "ero_only", "partial", "full")).annotations({
    description: "Voice acting: `none`, `ero_only` (only sexual scenes), `partial`, `full`; null if unknown."
  }),
  engine: Schema.NullOr(EngineRef),
  companies: Schema.Array(ReleaseCompany).annotations({ description: "`[]` if none recorded." }),
  gtin: Schema.NullOr(Schema.String.pipe(Schema.pattern(/^[0-9]{8,14}$/))).annotations({
    description: "JAN/EAN/UPC barcode; null if none."
  }),
  catalog_number: Schema.NullOr(Schema.String.pipe(Schema.maxLength(64))),
  updated_at: Timestamp,
  refs: Schema.optional(Schema.Array(Ref).annotations({ description: "include=refs." })),
  links: Schema.optional(Schema.Array(WorkLink).annotations({ description: "include=links." }))
}).annotations({
  identifier: "Release",
  description: "An edition of a work: a dated product on given platforms and in given languages."
})
export type Release = typeof Release.Type

export const ListRelease = ListOf(Release, "ListRelease")
export type ListRelease = typeof ListRelease.Type
