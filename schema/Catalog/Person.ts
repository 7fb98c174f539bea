/**
 * Persons: the people behind credit names.
 */
import { Schema } from "effect"
import { DisplayString, Gender, Intro, LangTag, ListOf, Localized, PersonId, Ref, WorkLink } from "./Common.js"
import { CreditNameBasic } from "./Credit.js"

export const Person = Schema.Struct({
  object: Schema.Literal("person"),
  id: PersonId,
  display_name: DisplayString.annotate({ description: "The person's main name." }),
  latin: Schema.NullOr(DisplayString).annotate({ description: "Romanization of display_name; null if none." }),
  lang: Schema.NullOr(LangTag),
  localized: Localized,
  gender: Schema.NullOr(Gender).annotate({ description: "null if unrecorded." }),
  birth_year: Schema.NullOr(Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 9999 }))).annotate({
    description: "null if unrecorded; a year may be known without month or day."
  }),
  birth_month: Schema.NullOr(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 12 }))),
  birth_day: Schema.NullOr(Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 31 }))),
  names: Schema.optionalKey(
    Schema.Array(CreditNameBasic).annotate({
      description: "include=names: the person's publicly linked credit names."
    })
  ),
  intros: Schema.optionalKey(Schema.Array(Intro).annotate({ description: "include=intros: biography." })),
  links: Schema.optionalKey(Schema.Array(WorkLink).annotate({ description: "include=links." })),
  refs: Schema.optionalKey(Schema.Array(Ref).annotate({ description: "include=refs." }))
}).annotate({
  identifier: "Person",
  description: "A real person (staff member or voice actor) with a public link to one or more credit names. " +
    "Only publicly linked persons are served."
})
export type Person = typeof Person.Type

export const ListPerson = ListOf(Person, "ListPerson")
export type ListPerson = typeof ListPerson.Type
