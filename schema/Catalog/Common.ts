/**
 * Value types shared by every catalog record (docs/api-contract.md, "Records and lists"): ids,
 * timestamps, language tags, localized names, images, upstream references, links and the list envelope.
 *
 * Records are `Schema.Struct`s (not classes) so repositories can hand plain rows to the encoder.
 */
import { Schema } from "effect"
import { isNotBlank, StorableText } from "../Text.js"

// ---------------------------------------------------------------------------------------------
// Ids: decimal strings of 1 to 20 digits, branded per entity type.
// ---------------------------------------------------------------------------------------------

/** Any catalog id: `^[0-9]+$`, 1 to 20 characters. */
export const Id = Schema.String.check(
  Schema.isPattern(/^[0-9]+$/u),
  Schema.isMaxLength(20)
).annotate({ description: "Catalog id: a decimal string of 1 to 20 digits.", examples: ["1042"] })

// `Schema.brand` takes its brand as a literal (a generic helper cannot pass one on), so each id is
// branded where it is declared.
const idOf = (what: string) => ({ description: `Id of ${what} (decimal string, 1 to 20 digits).` })

export const WorkId = Id.pipe(Schema.brand("WorkId")).annotate(idOf("a work"))
export type WorkId = typeof WorkId.Type
export const ReleaseId = Id.pipe(Schema.brand("ReleaseId")).annotate(idOf("a release"))
export type ReleaseId = typeof ReleaseId.Type
export const CharacterId = Id.pipe(Schema.brand("CharacterId")).annotate(idOf("a character"))
export type CharacterId = typeof CharacterId.Type
export const TraitId = Id.pipe(Schema.brand("TraitId")).annotate(idOf("a character trait"))
export type TraitId = typeof TraitId.Type
export const CreditNameId = Id.pipe(Schema.brand("CreditNameId")).annotate(idOf("a credit name"))
export type CreditNameId = typeof CreditNameId.Type
export const PersonId = Id.pipe(Schema.brand("PersonId")).annotate(idOf("a person"))
export type PersonId = typeof PersonId.Type
export const CompanyId = Id.pipe(Schema.brand("CompanyId")).annotate(idOf("a company"))
export type CompanyId = typeof CompanyId.Type
export const EngineId = Id.pipe(Schema.brand("EngineId")).annotate(idOf("an engine"))
export type EngineId = typeof EngineId.Type
export const TagId = Id.pipe(Schema.brand("TagId")).annotate(idOf("a tag"))
export type TagId = typeof TagId.Type
export const CoverId = Id.pipe(Schema.brand("CoverId")).annotate(idOf("a cover row (not the image hash)"))
export type CoverId = typeof CoverId.Type

// ---------------------------------------------------------------------------------------------
// Scalars
// ---------------------------------------------------------------------------------------------

/**
 * A time the catalog answers (responses only; no request takes one): RFC 3339 in UTC, in the one
 * form src/catalog/shared/Rfc3339.ts writes, with the six fractional digits PostgreSQL keeps.
 */
export const Timestamp = Schema.String.annotate({ format: "date-time" }).check(
  Schema.isPattern(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/u)
).annotate({
  description: "RFC 3339 date-time in UTC, always `YYYY-MM-DDTHH:MM:SS.ffffffZ` (six fractional digits), so " +
    "timestamps compare as text in time order.",
  examples: ["2025-06-01T09:30:00.000000Z"]
})
export type Timestamp = typeof Timestamp.Type

/** BCP-47 language tag (`ja`, `en`, `zh-Hans`, `pt-BR`), at most 32 characters. */
export const LangTag = Schema.String.check(
  Schema.isPattern(/^[A-Za-z]{2,3}(-[A-Za-z0-9]{1,8})*$/u),
  Schema.isMaxLength(32)
).annotate({ description: "BCP-47 language tag, at most 32 characters.", examples: ["ja", "en", "zh-Hans"] })
export type LangTag = typeof LangTag.Type

/** Open vocabulary key: new values appear without notice. */
export const Source = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64)).annotate({
  description: "Open vocabulary (new keys appear; clients must accept unknown values), at most 64 characters."
})

export const DisplayString = Schema.String.check(Schema.isMaxLength(512))

/**
 * A name a request sets (a minted work's `display_name`): 1 to 512 characters the database can store
 * (schema/Text.ts), not only whitespace or zero-width characters.
 */
export const NameInput = StorableText.check(Schema.isMinLength(1), Schema.isMaxLength(512), isNotBlank)

/** A partial calendar date: year only, year and month, or a full date. */
export const PartialDate = Schema.String.check(
  Schema.isPattern(/^\d{4}(-(0[1-9]|1[0-2])(-(0[1-9]|[12]\d|3[01]))?)?$/u)
).annotate({
  description: "Partial date: `YYYY` (only the year is known), `YYYY-MM` or `YYYY-MM-DD`.",
  examples: ["2019", "2019-07", "2019-07-26"]
})
export type PartialDate = typeof PartialDate.Type

/** Absolute http(s) URL. */
export const Url = (maxLength: number) =>
  Schema.String.annotate({ format: "uri" }).check(
    Schema.isPattern(/^https?:\/\/[^\s]+$/u),
    Schema.isMaxLength(maxLength)
  )

export const Count = Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)).annotate({ description: "int64 >= 0" })

// ---------------------------------------------------------------------------------------------
// Closed vocabularies used by several records
// ---------------------------------------------------------------------------------------------

export const Spoiler = Schema.Literals(["none", "minor", "major"]).annotate({
  description: "Spoiler level (closed): `none`, `minor`, `major`."
})
export type Spoiler = typeof Spoiler.Type

export const ContentRating = Schema.Literals(["sfw", "nsfw"]).annotate({
  description: "Content rating (closed). `nsfw` works are never shown to an `sfw` credential."
})
export type ContentRating = typeof ContentRating.Type

export const Gender = Schema.Literals(["male", "female", "other"])
export type Gender = typeof Gender.Type

/**
 * The five rating sources (closed: they define the `rating_<source>` sorts).
 */
export const RatingSource = Schema.Literals(["vndb", "bangumi", "egs", "steam", "dlsite"]).annotate({
  description: "Rating source (closed): `vndb`, `bangumi`, `egs`, `steam`, `dlsite`."
})
export type RatingSource = typeof RatingSource.Type
export const ratingSources: ReadonlyArray<RatingSource> = ["vndb", "bangumi", "egs", "steam", "dlsite"]

/** Platform short code; an open vocabulary. */
export const Platform = Schema.String.check(Schema.isPattern(/^[a-z0-9]{2,16}$/u)).annotate({
  description: "Platform short code (open vocabulary), e.g. `win` (Windows), `mac`, `lin` (Linux), `ios`, " +
    "`and` (Android), `web`, `swi` (Nintendo Switch), `ps4`, `ps5`, `psv` (PS Vita), `xbo` (Xbox One), `dvd` " +
    "(DVD player). Also the token of the `platform` filter and facet."
})

/** Distribution medium short code; an open vocabulary. */
export const Medium = Schema.String.check(Schema.isPattern(/^[a-z0-9]{2,16}$/u)).annotate({
  description: "Distribution medium (open vocabulary), e.g. `dl` (download), `cd`, `dvd`, `bd` (Blu-ray), " +
    "`cart` (cartridge), `mem` (memory card), `web` (played in a browser). Also the token of the `medium` facet."
})

// ---------------------------------------------------------------------------------------------
// Names and texts
// ---------------------------------------------------------------------------------------------

/**
 * LocalizedText: the display name of an entity in one language.
 */
export const LocalizedText = Schema.Struct({
  value: DisplayString.annotate({ description: "The name as written in that language (max 512)." }),
  latin: Schema.NullOr(DisplayString).annotate({
    description: "Romanization of `value` when it is not written in Latin script; null when `value` is " +
      "already Latin script or no romanization is recorded (max 512)."
  })
}).annotate({
  identifier: "LocalizedText",
  description: "A display name in one language: the text and, for non-Latin scripts, its romanization."
})
export type LocalizedText = typeof LocalizedText.Type

/** `localized`: map from BCP-47 tag to LocalizedText; `{}` when none. */
export const Localized = Schema.Record(LangTag, LocalizedText).annotate({
  description: "Map from BCP-47 language tag to the name in that language; `{}` if none."
})
export type Localized = typeof Localized.Type

/** EntityName: an alias. `search_hint` aliases exist in storage but never appear. */
export const EntityName = Schema.Struct({
  lang: LangTag,
  value: DisplayString,
  alias_kind: Schema.Literals(["translation", "spelling_variant"]).annotate({
    description: "`translation` (the name in another language) or `spelling_variant` (another spelling, " +
      "abbreviation or romanization)."
  }),
  is_machine: Schema.Boolean.annotate({ description: "True when produced by machine translation." })
}).annotate({ identifier: "EntityName", description: "An alternative name (alias) of an entity." })
export type EntityName = typeof EntityName.Type

/** Intro: a description or biography in one language. */
export const Intro = Schema.Struct({
  object: Schema.Literal("intro"),
  lang: LangTag,
  value: Schema.String.check(Schema.isMaxLength(20000)),
  is_machine: Schema.Boolean.annotate({ description: "True when produced by machine translation." }),
  source: Source.annotate({ description: "Where the text comes from (open vocabulary), e.g. `vndb`, `official`." })
}).annotate({
  identifier: "Intro",
  description: "A description (of a work or company) or biography in one language."
})
export type Intro = typeof Intro.Type

// ---------------------------------------------------------------------------------------------
// Images
// ---------------------------------------------------------------------------------------------

// The pattern admits only ASCII characters, so counting code points (which JSON Schema's
// `minLength`/`maxLength` state exactly) is the same as counting UTF-16 units.
export const ImageHash = Schema.String.check(
  Schema.isPattern(/^[0-9a-f]{64}$/u),
  Schema.isMinCodePoints(64),
  Schema.isMaxCodePoints(64)
).annotate({
  description: "SHA-256 of the image bytes, 64 lowercase hex digits."
})

export const Thumbhash = Schema.String.check(Schema.isPattern(/^[A-Za-z0-9+/=_-]+$/u), Schema.isMaxLength(128))
  .annotate({ description: "ThumbHash placeholder (base64), at most 128 characters." })

export const Pixels = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 65535 }))

export const Sexual = Schema.Literals(["safe", "suggestive", "explicit"])
export const Violence = Schema.Literals(["tame", "violent", "brutal"])

const imageFields = {
  url: Url(512).annotate({ description: "Absolute URL of the image (never a bare hash)." }),
  hash: ImageHash,
  width: Schema.NullOr(Pixels).annotate({ description: "Width in pixels; null if unknown." }),
  height: Schema.NullOr(Pixels).annotate({ description: "Height in pixels; null if unknown." }),
  thumbhash: Schema.NullOr(Thumbhash),
  sexual: Schema.NullOr(Sexual).annotate({ description: "Sexual content level; null = not assessed." }),
  violence: Schema.NullOr(Violence).annotate({ description: "Violence level; currently always null." }),
  source: Source.annotate({ description: "Where the image comes from (open vocabulary)." })
}

/**
 * A record that describes its image for one use annotates it with `identifier: undefined` as well:
 * the described copy is then written inline in the OpenAPI document (as Schema 3 did), where one
 * that kept the identifier would become a second, numbered component (`Image_1`).
 */
export const Image = Schema.Struct(imageFields).annotate({ identifier: "Image", description: "An image." })
export type Image = typeof Image.Type

export const Cover = Schema.Struct({
  object: Schema.Literal("cover"),
  id: CoverId,
  vote_count: Count.annotate({ description: "Net votes for this cover (int64 >= 0)." }),
  portrait_pinned: Schema.Boolean.annotate({
    description: "True when moderators pinned this cover as the work's portrait cover."
  }),
  cover_kind: Schema.String.check(Schema.isMaxLength(32)).annotate({
    description: "Kind of cover (open vocabulary, e.g. `package`, `digital`, `limited`); empty if unrecorded."
  }),
  ...imageFields
}).annotate({ identifier: "Cover", description: "A cover image of a work, with its vote standing." })
export type Cover = typeof Cover.Type

// ---------------------------------------------------------------------------------------------
// Upstream references and links
// ---------------------------------------------------------------------------------------------

export const Ref = Schema.Struct({
  source: Source.annotate({
    description: "Upstream catalog (open vocabulary), e.g. `vndb`, `bangumi`, `egs`, `steam`, `dlsite`, `wikidata`."
  }),
  external_id: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(256)).annotate({
    description: "The entity's id in that source, matched exactly (e.g. `v17`, `RJ123456`)."
  }),
  url: Schema.NullOr(Url(1024)).annotate({ description: "The entity's page at the source; null if none." })
}).annotate({
  identifier: "Ref",
  description: "Upstream anchor: the same entity in another catalog. A (source, external_id) pair names at most " +
    "one entity of a type; it is what `refs=` batch lookups match."
})
export type Ref = typeof Ref.Type

export const WorkLink = Schema.Struct({
  site: Source.annotate({
    description: "What the link points to (open vocabulary), e.g. `official`, `twitter`, `steam`, `dlsite`, " +
      "`wikipedia`, `youtube`, `pixiv`."
  }),
  url: Url(1024),
  label: Schema.String.check(Schema.isMaxLength(512)).annotate({
    description: "Link text to display; empty when the site name is enough."
  }),
  lang: Schema.NullOr(LangTag).annotate({ description: "Language of the linked page; null if unknown." })
}).annotate({
  identifier: "WorkLink",
  description: "An external web link of a work, company or credit name."
})
export type WorkLink = typeof WorkLink.Type

/** A short reference to another record where the full record is not embedded. */
export const NamedRef = <S extends Schema.Top>(id: S) => Schema.Struct({ id, display_name: DisplayString })

// ---------------------------------------------------------------------------------------------
// List envelope (docs/api-contract.md, "Records and lists")
// ---------------------------------------------------------------------------------------------

export const FacetValue = Schema.Struct({
  value: Schema.String.check(Schema.isMaxLength(256)).annotate({
    description: "Token to pass back to the same filter."
  }),
  display_name: Schema.String.check(Schema.isMaxLength(512)),
  count: Count.annotate({ description: "Hits after the same filters as the items." })
}).annotate({ identifier: "FacetValue", description: "One value of a facet with its hit count." })
export type FacetValue = typeof FacetValue.Type

export const Cursor = Schema.String.check(
  Schema.isPattern(/^cur_[A-Za-z0-9._~-]+$/u),
  Schema.isMaxLength(512)
).annotate({
  description: "Opaque cursor; pass it back unchanged as `cursor`. Omitted on the last page."
})

export const TotalRelation = Schema.Literals(["eq", "gte"]).annotate({
  description: "`eq`: total is exact; `gte`: total is a lower bound."
})

const listFields = <Item extends Schema.Top>(item: Item) => ({
  object: Schema.Literal("list"),
  items: Schema.Array(item).annotate({ description: "The page's items; `[]` when empty, never null." }),
  next_cursor: Schema.optionalKey(Cursor),
  total: Schema.optionalKey(Count.annotate({
    description: "Number of matching items: only with `include_total=true`, always in page mode."
  })),
  total_relation: Schema.optionalKey(TotalRelation.annotate({ description: "Page mode only." })),
  facets: Schema.optionalKey(
    Schema.Record(Schema.String, Schema.NullOr(Schema.Array(FacetValue))).annotate({
      description: "Facet name to its values; only when `facets=` is requested."
    })
  ),
  missing: Schema.optionalKey(
    Schema.Array(Schema.String.check(Schema.isMaxLength(330))).annotate({
      description: "`ids=`/`refs=` batch lane only: the requested ids (or refs, as sent) that are not visible."
    })
  )
})

/** The list envelope around `item`. */
export const ListOf = <Item extends Schema.Top>(item: Item, identifier: string) =>
  Schema.Struct(listFields(item)).annotate({
    identifier,
    description: "A page of a collection (list envelope)."
  })

/** The list envelope with a required `meta` member (the calendar list). */
export const ListWithMetaOf = <Item extends Schema.Top, Meta extends Schema.Top>(
  item: Item,
  meta: Meta,
  identifier: string
) =>
  Schema.Struct({ ...listFields(item), meta }).annotate({
    identifier,
    description: "A page of a collection with its `meta` block."
  })

export const ListCover = ListOf(Cover, "ListCover")
export type ListCover = typeof ListCover.Type

export const ListIntro = ListOf(Intro, "ListIntro")
export type ListIntro = typeof ListIntro.Type
