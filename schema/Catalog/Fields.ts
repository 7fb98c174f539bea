/**
 * The field registry (docs/writing.md, "Field keys"): every field of every catalog entity type that an
 * edit proposal may name, as `<entity_type>.<field>` (`catalog.work.titles`), with the schema of its
 * value. One registry serves claim minting (`field_values`), snapshots, proposal patches and
 * amendments, the FieldDiffs of revisions and `GET /v2/catalog/fields`.
 *
 * Each value schema is the read record's own property signature for the field (so the registry cannot
 * drift from the reads), narrowed by what storage needs and the reads cannot show: texts PostgreSQL
 * can store (schema/Text.ts), names that show something, the columns' integer ranges, no duplicate
 * titles per language. A key whose value the catalog derives (a work's release date, its platforms,
 * its timestamps) is read-only: a patch naming it is 422 `IMMUTABLE`.
 *
 * Where a read embeds another record (a work's tags embed the tag), the value keeps only the embedded
 * record's `id`: that is what the work owns; the rest is the other record's.
 */
import { Schema, Struct } from "effect"
import { ReasonAnnotationId } from "../Annotations.js"
import { isNotBlank, isStorable, isStorableJson } from "../Text.js"
import type { TargetObject } from "./Change.js"
import { Character, Measurements, RowIdentity } from "./Character.js"
import { EntityName, ImageHash, Intro, WorkLink } from "./Common.js"
import { Company } from "./Company.js"
import { CreditEntry, CreditName } from "./Credit.js"
import { Engine } from "./Engine.js"
import { Release } from "./Release.js"
import { Tag, WorkTag } from "./Tag.js"
import { Work, WorkFull, WorkTitle } from "./Work.js"

/** The editing-engine entity types (closed). */
export const EntityTypes = [
  "catalog.work",
  "catalog.release",
  "catalog.character",
  "catalog.credit_name",
  "catalog.company",
  "catalog.tag",
  "catalog.engine"
] as const
export type EntityType = (typeof EntityTypes)[number]

export const EntityTypeSchema = Schema.Literals(EntityTypes).annotate({
  description: "Editing-engine entity type (closed): `catalog.work`, `catalog.release`, `catalog.character`, " +
    "`catalog.credit_name`, `catalog.company`, `catalog.tag`, `catalog.engine`."
})

/** The record `object` of each entity type (the change feed's `target_object`). */
export const entityObject = {
  "catalog.work": "work",
  "catalog.release": "release",
  "catalog.character": "character",
  "catalog.credit_name": "credit_name",
  "catalog.company": "company",
  "catalog.tag": "tag",
  "catalog.engine": "engine"
} as const satisfies Record<EntityType, TargetObject>

/** The entity type of a record `object`, for the types proposals edit. */
export const entityTypeOf = (object: string): EntityType | undefined =>
  EntityTypes.find((type) => entityObject[type] === object)

/** A field key: `^[a-z0-9_]+(\.[a-z0-9_]+)+$`, at most 128 characters. */
export const FieldKey = Schema.String.check(
  Schema.isPattern(/^[a-z0-9_]+(\.[a-z0-9_]+)+$/u),
  Schema.isMaxLength(128)
).annotate({ description: "A field key, `<entity_type>.<field>` (`catalog.work.titles`), at most 128 characters." })

/** A value schema of the registry: any schema whose encoded form is JSON. */
export type ValueSchema = Schema.Codec<any, any, never, never>

/** A field the registry holds. */
export interface FieldSpec {
  /** Whether a proposal may set it (else `IMMUTABLE`). */
  readonly writable: boolean
  readonly schema: ValueSchema
}

/** No two items share `key`: `DUPLICATE_ITEM`. */
const uniqueBy = <A>(what: string, key: (item: A) => unknown) =>
  Schema.makeFilter((items: ReadonlyArray<A>) => new Set(items.map(key)).size === items.length, {
    expected: `no two items with the same ${what}`,
    message: `must not hold two items with the same ${what}`,
    [ReasonAnnotationId]: "DUPLICATE_ITEM"
  })

/** An id without leading zeros (`007` and `7` name one row). */
const canonicalId = (id: string) => id.replace(/^0+(?=[0-9])/u, "")

/** Storage's smallint and integer columns. */
const smallint = Schema.isLessThanOrEqualTo(32_767)
const integer = Schema.isLessThanOrEqualTo(2_147_483_647)

/** A nullable integer of a read record, bounded by its column as well. */
const nullableInt = (
  schema: Schema.NullOr<Schema.Codec<number, number>>,
  bound: ReturnType<typeof Schema.isLessThanOrEqualTo>
) => Schema.NullOr(schema.members[0].check(bound))

/** Names (1..512 characters in every name column): must show something. */
const name = <S extends Schema.Codec<string, string>>(schema: S) => schema.check(Schema.isMinLength(1), isNotBlank)

/** Items of a list field, at most (satellite rows are numbered by a smallint). */
const MAX_ITEMS = 500
const listOf = <S extends Schema.Codec<any, any, never, never>>(item: S) =>
  Schema.Array(item).check(Schema.isMaxLength(MAX_ITEMS))

/**
 * A tag score: stored as `real`, so at most two decimals, which it keeps exactly: the number must be
 * the one its hundredths name. (Near enough is not enough: `1.0000000001` would read back as `1`, and
 * `1e-300` does not fit the column at all.)
 */
const twoDecimals = Schema.makeFilter((n: number) => Math.round(n * 100) / 100 === n, {
  expected: "a number with at most two decimals",
  message: "must have at most two decimals"
})

const aliases = listOf(EntityName.mapFields((fields) => ({ ...fields, value: name(fields.value) })))
const intros = listOf(Intro)
const links = listOf(WorkLink)
const textAliases = listOf(name(Engine.fields.aliases.value))

const field = (schema: ValueSchema, writable = true): FieldSpec => ({
  writable,
  // Every text at any depth is storable (schema/Text.ts); checked on the whole value once.
  schema: schema.check(isStorableJson)
})
const readOnly = (schema: ValueSchema) => field(schema, false)

/** The value schema of an optional (view- or include-dependent) member: the member's own schema. */
const inner = <S extends Schema.Top>(member: Schema.optionalKey<S>): S => member.schema

const work = {
  display_name: field(name(WorkFull.fields.display_name)),
  latin: field(WorkFull.fields.latin),
  olang: field(WorkFull.fields.olang),
  localized: field(WorkFull.fields.localized),
  length_minutes: field(nullableInt(WorkFull.fields.length_minutes, integer)),
  development_status: field(WorkFull.fields.development_status),
  titles: field(
    listOf(WorkTitle.mapFields((fields) => ({ ...fields, value: name(fields.value) }))).check(
      uniqueBy("`lang`", (title: typeof WorkTitle.Type) => title.lang),
      Schema.makeFilter(
        (titles: ReadonlyArray<typeof WorkTitle.Type>) => titles.filter((title) => title.is_main).length <= 1,
        { expected: "at most one main title", message: "must have at most one title with `is_main`" }
      )
    )
  ),
  aliases: field(aliases),
  intros: field(intros),
  links: field(links),
  tags: field(
    listOf(
      WorkTag.mapFields((fields) => ({
        ...fields,
        tag: fields.tag.mapFields(Struct.pick(["id"])).annotate({ identifier: undefined }),
        score: fields.score.check(twoDecimals)
      })).annotate({ identifier: undefined })
    ).check(uniqueBy("tag", (entry: { readonly tag: { readonly id: string } }) => canonicalId(entry.tag.id)))
  ),
  cover: field(
    ImageHash.annotate({
      description: "The hash of the work's cover (an EditImage `hash`): it becomes the first of `include=covers`."
    })
  ),
  roster_suppressed: field(
    listOf(RowIdentity).check(uniqueBy("identity", (identity: string) => identity)).annotate({
      description: "The `identity` values of the roster rows (`characters[]`) hidden from every read."
    })
  ),
  credits_suppressed: field(
    listOf(CreditEntry.fields.identity).check(uniqueBy("identity", (identity: string) => identity)).annotate({
      description: "The `identity` values of the credit rows (`include=credits`) hidden from every read."
    })
  ),
  released: readOnly(WorkFull.fields.released),
  content_rating: readOnly(WorkFull.fields.content_rating),
  platforms: readOnly(WorkFull.fields.platforms),
  media: readOnly(WorkFull.fields.media),
  popularity: readOnly(WorkFull.fields.popularity),
  created_at: readOnly(WorkFull.fields.created_at),
  updated_at: readOnly(Work.fields.updated_at)
} as const

const release = {
  display_name: field(name(Release.fields.display_name)),
  latin: field(Release.fields.latin),
  lang: field(Release.fields.lang),
  localized: field(Release.fields.localized),
  languages: field(listOf(Release.fields.languages.value)),
  min_age: field(Release.fields.min_age),
  release_kind: field(Release.fields.release_kind),
  is_official: field(Release.fields.is_official),
  is_patch: field(Release.fields.is_patch),
  is_freeware: field(Release.fields.is_freeware),
  voiced: field(Release.fields.voiced),
  gtin: field(Release.fields.gtin),
  catalog_number: field(Release.fields.catalog_number),
  work_id: readOnly(Release.fields.work_id),
  released: readOnly(Release.fields.released),
  platforms: readOnly(Release.fields.platforms),
  media: readOnly(Release.fields.media),
  content_rating: readOnly(Release.fields.content_rating),
  updated_at: readOnly(Release.fields.updated_at)
} as const

const measurementsPresent = Schema.makeFilter(
  (m: typeof Measurements.Type | null) => m === null || Object.values(m).some((part) => part !== null),
  { expected: "at least one part (send null for none)", message: "must record at least one part; send null instead" }
)

const character = {
  display_name: field(name(Character.fields.display_name)),
  latin: field(Character.fields.latin),
  lang: field(Character.fields.lang),
  localized: field(Character.fields.localized),
  birthday: field(inner(Character.fields.birthday)),
  blood_type: field(inner(Character.fields.blood_type)),
  gender: field(inner(Character.fields.gender)),
  height_cm: field(nullableInt(inner(Character.fields.height_cm), smallint)),
  weight_kg: field(nullableInt(inner(Character.fields.weight_kg), smallint)),
  measurements: field(inner(Character.fields.measurements).check(measurementsPresent)),
  aliases: field(aliases),
  intros: field(intros),
  instance_of_id: readOnly(inner(Character.fields.instance_of_id))
} as const

const creditName = {
  display_name: field(name(CreditName.fields.display_name)),
  latin: field(CreditName.fields.latin),
  lang: field(CreditName.fields.lang),
  localized: field(CreditName.fields.localized),
  aliases: field(aliases),
  intros: field(intros),
  links: field(links),
  person_id: readOnly(CreditName.fields.person_id)
} as const

const company = {
  display_name: field(name(Company.fields.display_name)),
  latin: field(Company.fields.latin),
  lang: field(Company.fields.lang),
  localized: field(Company.fields.localized),
  company_kind: field(Company.fields.company_kind),
  aliases: field(aliases),
  intros: field(intros),
  links: field(links)
} as const

const tag = {
  display_name: field(name(Tag.fields.display_name)),
  localized: field(Tag.fields.localized),
  default_spoiler: field(Tag.fields.default_spoiler),
  description: field(Tag.fields.description),
  aliases: field(textAliases),
  category: readOnly(Tag.fields.category),
  parent_id: readOnly(Tag.fields.parent_id)
} as const

const engine = {
  display_name: field(name(Engine.fields.display_name)),
  description: field(Engine.fields.description),
  aliases: field(textAliases)
} as const

/** The registry: entity type -> field -> spec. */
export const FieldSpecs = {
  "catalog.work": work,
  "catalog.release": release,
  "catalog.character": character,
  "catalog.credit_name": creditName,
  "catalog.company": company,
  "catalog.tag": tag,
  "catalog.engine": engine
} as const satisfies Record<EntityType, Record<string, FieldSpec>>

/** The fields of an entity type, by field name (`titles`). */
export type FieldsOf<T extends EntityType> = keyof (typeof FieldSpecs)[T] & string

/** One key of the registry. */
export interface RegisteredField extends FieldSpec {
  readonly key: string
  readonly entityType: EntityType
  readonly field: string
}

/** Every key, in registry order (entity types as listed, fields as declared). */
export const registeredFields: ReadonlyArray<RegisteredField> = EntityTypes.flatMap((entityType) =>
  Object.entries(FieldSpecs[entityType] as Record<string, FieldSpec>).map(([field, spec]) => ({
    ...spec,
    key: `${entityType}.${field}`,
    entityType,
    field
  }))
)

const byKey = new Map(registeredFields.map((f) => [f.key, f]))

/** The registered field of `key`, if any. */
export const fieldOf = (key: string): RegisteredField | undefined => byKey.get(key)

/** The keys of one entity type. */
export const fieldsOf = (entityType: EntityType): ReadonlyArray<RegisteredField> =>
  registeredFields.filter((f) => f.entityType === entityType)

// Not a key: a key of the registry that the field-key pattern refuses would be unreachable.
for (const f of registeredFields) {
  if (!Schema.is(FieldKey)(f.key)) throw new Error(`field key ${f.key} does not match the field-key pattern`)
}

/** A text that a proposal carries: storable, at most 2000 characters. */
export const ProposalNote = Schema.String.check(Schema.isMaxLength(2000), isStorable)
