/**
 * Credit names and a work's credits.
 */
import { Schema } from "effect"
import {
  CharacterId,
  CreditNameId,
  DisplayString,
  EntityName,
  Gender,
  Image,
  Intro,
  LangTag,
  ListOf,
  Localized,
  PersonId,
  Ref,
  WorkLink
} from "./Common.js"

const creditNameBasicFields = {
  object: Schema.Literal("credit_name"),
  id: CreditNameId,
  display_name: DisplayString,
  latin: Schema.NullOr(DisplayString).annotate({ description: "Romanization of display_name; null if none." }),
  lang: Schema.NullOr(LangTag).annotate({ description: "Language of display_name." }),
  localized: Localized,
  person_id: Schema.NullOr(PersonId).annotate({
    description: "The person behind this name; null when the name is not linked to a person."
  })
}

/** A credit name without detail-face fields or includes (as in lists and `siblings`). */
export const CreditNameBasic = Schema.Struct(creditNameBasicFields).annotate({
  identifier: "CreditNameBasic",
  description: "A name under which a person (or group) is credited."
})
export type CreditNameBasic = typeof CreditNameBasic.Type

const detail = <S extends Schema.Top>(schema: S, description: string) =>
  Schema.optionalKey(schema.annotate({ description }))

export const CreditName = Schema.Struct({
  ...creditNameBasicFields,
  birth_year: detail(
    Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 9999 })),
    "Detail face only; absent when unrecorded or when the name has no public person link."
  ),
  birth_month: detail(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 12 })),
    "Detail face only; as birth_year."
  ),
  birth_day: detail(
    Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 31 })),
    "Detail face only; as birth_year."
  ),
  gender: detail(Gender, "Detail face only; as birth_year."),
  aliases: Schema.optionalKey(Schema.Array(EntityName).annotate({ description: "include=aliases." })),
  intros: Schema.optionalKey(Schema.Array(Intro).annotate({ description: "include=intros: person biography." })),
  links: Schema.optionalKey(Schema.Array(WorkLink).annotate({ description: "include=links." })),
  refs: Schema.optionalKey(Schema.Array(Ref).annotate({ description: "include=refs." })),
  photo: Schema.optionalKey(
    Image.annotate({ identifier: undefined, description: "include=photo, when a photo exists." })
  ),
  siblings: Schema.optionalKey(
    Schema.Array(CreditNameBasic).annotate({
      description: "include=siblings: the same person's other publicly linked names."
    })
  )
}).annotate({
  identifier: "CreditName",
  description: "A name under which a person is credited (staff or voice actor). The detail read adds the " +
    "person's public birth date and gender."
})
export type CreditName = typeof CreditName.Type

export const RoleKey = Schema.String.check(Schema.isPattern(/^[a-z][a-z0-9_]*$/u), Schema.isMaxLength(64)).annotate({
  description: "Credit role key (open vocabulary), e.g. `scenario`, `art`, `chardesign`, `music`, `songs`, " +
    "`director`, `voice`, `staff`."
})

export const CreditEntry = Schema.Struct({
  object: Schema.Literal("credit_name"),
  id: CreditNameId,
  display_name: DisplayString,
  latin: Schema.NullOr(DisplayString),
  localized: Localized,
  character_id: Schema.NullOr(CharacterId).annotate({
    description: "The character voiced; null when the credit is not a voice on a character."
  }),
  note: Schema.String.check(Schema.isMaxLength(512)).annotate({
    description: "Free-text qualifier (e.g. `opening song`, `assistant`); empty if none."
  }),
  identity: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(128)).annotate({
    description: "Opaque identity of this credit row, for a credit-suppression proposal; echo it back " +
      "verbatim, it cannot be rebuilt from other fields."
  })
}).annotate({ identifier: "CreditEntry", description: "One credited name within a role group." })
export type CreditEntry = typeof CreditEntry.Type

export const CreditGroup = Schema.Struct({
  object: Schema.Literal("credit_group"),
  role_key: RoleKey,
  role_name: Schema.String.check(Schema.isMaxLength(512)).annotate({ description: "Display name of the role." }),
  credits: Schema.Array(CreditEntry).annotate({ description: "`[]` when empty, never null." })
}).annotate({ identifier: "CreditGroup", description: "The credits of a work for one role." })
export type CreditGroup = typeof CreditGroup.Type

export const ListCreditName = ListOf(CreditName, "ListCreditName")
export type ListCreditName = typeof ListCreditName.Type

export const ListCreditGroup = ListOf(CreditGroup, "ListCreditGroup")
export type ListCreditGroup = typeof ListCreditGroup.Type
