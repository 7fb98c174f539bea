/**
 * The decoders of the shared rows of Rows.ts (a nested work at view=basic, a credit name), which
 * every query that selects `workBasicColumns` or `creditNameColumns` decodes its rows with. Each is
 * checked against its row type in Rows.ts, so the two cannot drift apart.
 */
import { Schema, Struct } from "effect"
import { CreditNameBasic } from "../../../schema/Catalog/Credit.js"
import { Person } from "../../../schema/Catalog/Person.js"
import type { CreditNameRow, WorkBasicRow } from "./Rows.js"

/**
 * A nested work: its id and the view=basic JSON text PostgreSQL built (works/WorkSql.ts). The text
 * is decoded as text only: it is the works list's own item, which the contract test checks.
 */
export const WorkBasicColumns = { w_id: Schema.String, w_json: Schema.String } as const
export const WorkBasicRowSchema: Schema.Codec<WorkBasicRow, unknown> = Schema.Struct(WorkBasicColumns)

export const CreditNameColumns = {
  ...Struct.pick(CreditNameBasic.fields, ["id", "display_name", "latin", "lang", "localized", "person_id"]),
  p_gender: Person.fields.gender,
  p_birth_year: Person.fields.birth_year,
  p_birth_month: Person.fields.birth_month,
  p_birth_day: Person.fields.birth_day
} as const
export const CreditNameRowSchema: Schema.Codec<CreditNameRow, unknown> = Schema.Struct(CreditNameColumns)
