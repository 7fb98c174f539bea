/**
 * Where characters and credit names appear.
 */
import { Schema } from "effect"
import { RosterRole, RowIdentity } from "./Character.js"
import { CharacterId, ListOf, Spoiler } from "./Common.js"
import { CreditNameBasic, RoleKey } from "./Credit.js"
import { WorkBasic } from "./Work.js"

export const Appearance = Schema.Struct({
  object: Schema.Literal("appearance"),
  work: WorkBasic,
  roster_role: RosterRole.annotate({ description: "`unknown` when reached only through a voice credit." }),
  spoiler: Spoiler.annotate({ description: "`none` when reached only through a voice credit." }),
  voices: Schema.Array(CreditNameBasic).annotate({
    description: "Who voices the character in this work; `[]` when empty, never null."
  }),
  identity: Schema.optionalKey(RowIdentity.annotate({
    description: "Opaque identity of the roster row; absent when the work is reached only through a voice credit."
  }))
}).annotate({ identifier: "Appearance", description: "A work a character appears in." })
export type Appearance = typeof Appearance.Type

export const NameCredit = Schema.Struct({
  object: Schema.Literal("name_credit"),
  work: WorkBasic,
  role_key: RoleKey,
  role_name: Schema.String.check(Schema.isMaxLength(512)),
  character_id: Schema.NullOr(CharacterId).annotate({ description: "The character voiced; null otherwise." }),
  note: Schema.String.check(Schema.isMaxLength(512)).annotate({ description: "Empty if none." })
}).annotate({ identifier: "NameCredit", description: "A credit of a credit name on a work." })
export type NameCredit = typeof NameCredit.Type

export const ListAppearance = ListOf(Appearance, "ListAppearance")
export type ListAppearance = typeof ListAppearance.Type

export const ListNameCredit = ListOf(NameCredit, "ListNameCredit")
export type ListNameCredit = typeof ListNameCredit.Type
