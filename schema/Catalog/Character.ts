/**
 * Characters and their traits.
 */
import { Schema } from "effect"
import {
  CharacterId,
  DisplayString,
  EntityName,
  Gender,
  Image,
  Intro,
  LangTag,
  ListOf,
  Localized,
  Ref,
  Spoiler,
  TraitId
} from "./Common.js"

/** Body measurements. */
export const Measurements = Schema.Struct({
  bust_cm: Schema.NullOr(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 999 }))),
  waist_cm: Schema.NullOr(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 999 }))),
  hips_cm: Schema.NullOr(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 999 }))),
  cup: Schema.NullOr(Schema.String.check(Schema.isPattern(/^[A-Z]{1,4}$/u))).annotate({
    description: "Cup size letters (`A` to `Z`, possibly repeated as in `AA`); null if unrecorded."
  })
}).annotate({
  identifier: "Measurements",
  description: "Three sizes in centimetres and cup size; each part is null when unrecorded."
})
export type Measurements = typeof Measurements.Type

export const CharacterTrait = Schema.Struct({
  object: Schema.Literal("character_trait"),
  id: TraitId,
  display_name: DisplayString,
  group: Schema.NullOr(DisplayString).annotate({
    description: "Name of the trait's root group (e.g. `Hair`, `Personality`); null for a root trait."
  }),
  localized: Localized,
  group_localized: Localized.annotate({ description: "The root group's name per language; `{}` if none." }),
  spoiler: Spoiler,
  is_sexual: Schema.Boolean,
  is_lie: Schema.Boolean.annotate({ description: "True when the trait is an in-story deception." })
}).annotate({ identifier: "CharacterTrait", description: "A trait of a character, with its spoiler level." })
export type CharacterTrait = typeof CharacterTrait.Type

export const RosterRole = Schema.Literals(["main", "secondary", "appears", "unknown"]).annotate({
  description: "Role in the work (closed): `main` (protagonist), `secondary` (main heroine or major role), " +
    "`appears`, `unknown`."
})
export type RosterRole = typeof RosterRole.Type

export const RowIdentity = Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(64)).annotate({
  description: "Opaque identity of the roster row, for a roster-suppression proposal on this work. Echo it back " +
    "verbatim; it cannot be rebuilt from other fields."
})

const characterBasicFields = {
  object: Schema.Literal("character"),
  id: CharacterId,
  display_name: DisplayString,
  latin: Schema.NullOr(DisplayString).annotate({ description: "Romanization of display_name; null if none." }),
  lang: Schema.NullOr(LangTag).annotate({ description: "Language of display_name." }),
  localized: Localized
}

/** The always-present fields of a character. */
export const CharacterBasic = Schema.Struct(characterBasicFields).annotate({
  identifier: "CharacterBasic",
  description: "A character at view=basic."
})
export type CharacterBasic = typeof CharacterBasic.Type

const full = <S extends Schema.Top>(schema: S, description: string) =>
  Schema.optionalKey(Schema.NullOr(schema).annotate({ description: `view=full; ${description}` }))

export const Character = Schema.Struct({
  ...characterBasicFields,
  birthday: full(
    Schema.String.check(Schema.isPattern(/^[0-1][0-9]-[0-3][0-9]$/u)),
    "birthday as `MM-DD` (no year); null if unrecorded."
  ),
  blood_type: full(Schema.Literals(["a", "b", "ab", "o"]), "null if unrecorded."),
  gender: full(Gender, "null if unrecorded."),
  height_cm: full(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)), "null if unrecorded."),
  weight_kg: full(Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)), "null if unrecorded."),
  measurements: full(Measurements, "null if unrecorded."),
  instance_of_id: full(CharacterId, "the character this row is an instance of; null if none."),
  aliases: Schema.optionalKey(Schema.Array(EntityName).annotate({ description: "include=aliases; detail only." })),
  intros: Schema.optionalKey(Schema.Array(Intro).annotate({ description: "include=intros; detail only." })),
  refs: Schema.optionalKey(Schema.Array(Ref).annotate({ description: "include=refs; detail only." })),
  traits: Schema.optionalKey(
    Schema.Array(CharacterTrait).annotate({ description: "include=traits; detail only." })
  ),
  image: Schema.optionalKey(
    Image.annotate({ identifier: undefined, description: "include=image when an image exists; detail only." })
  ),
  figure: Schema.optionalKey(
    Image.annotate({
      identifier: undefined,
      description: "include=figure when a full-body cutout exists; detail only."
    })
  )
}).annotate({
  identifier: "Character",
  description: "A character. view=full adds the profile fields; includes add aliases, intros, refs, traits " +
    "and images on the detail read."
})
export type Character = typeof Character.Type

/** A row of a work's character roster: the character plus its role in that work. */
export const RosterCharacter = Schema.Struct({
  ...characterBasicFields,
  roster_role: RosterRole,
  spoiler: Spoiler.annotate({ description: "How much knowing this character spoils the work." }),
  identity: RowIdentity
}).annotate({
  identifier: "RosterCharacter",
  description: "A character in a work's roster, with its role, spoiler level and the row's opaque identity."
})
export type RosterCharacter = typeof RosterCharacter.Type

export const ListCharacter = ListOf(Character, "ListCharacter")
export type ListCharacter = typeof ListCharacter.Type

export const ListRosterCharacter = ListOf(RosterCharacter, "ListRosterCharacter")
export type ListRosterCharacter = typeof ListRosterCharacter.Type
