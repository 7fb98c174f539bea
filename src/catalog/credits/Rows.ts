/**
 * Row shapes and their wire mappings shared by the character, credit-name and person reads: a
 * nested work at view=basic and a credit name at its basic face. Columns come from the SQL
 * fragments here so every query selects the same ones.
 */
import { Schema, Struct } from "effect"
import type { SqlClient } from "effect/sql"
import { CreditNameBasic } from "../../../schema/Catalog/Credit.js"
import { Person } from "../../../schema/Catalog/Person.js"
import { WorkBasic } from "../../../schema/Catalog/Work.js"
import { itemJsonSql } from "../works/WorkSql.js"

type Sql = SqlClient.SqlClient

/** Rows grouped by an owner key, keeping the query's order. */
export const groupBy = <Row, Out>(
  rows: ReadonlyArray<Row>,
  key: (row: Row) => string,
  map: (row: Row) => Out
): Map<string, Array<Out>> => {
  const out = new Map<string, Array<Out>>()
  for (const row of rows) {
    const k = key(row)
    const list = out.get(k)
    if (list === undefined) out.set(k, [map(row)])
    else list.push(map(row))
  }
  return out
}

// ---------------------------------------------------------------------------------------------
// A work at view=basic, nested in appearances and credits
// ---------------------------------------------------------------------------------------------

/**
 * A row that carries a nested work: its id (for keysets and grouping) and its view=basic JSON text.
 * The text is decoded as text here: it is the works list's own item, which the contract test checks;
 * `toWorkBasic` decodes it as a WorkBasic where a value is needed.
 */
export const WorkBasicColumns = { w_id: Schema.String, w_json: Schema.String } as const
export const WorkBasicRow = Schema.Struct(WorkBasicColumns)
export type WorkBasicRow = typeof WorkBasicRow.Type

/**
 * The columns of `WorkBasicRow`, from `works` aliased `w`. The JSON is the works list's own item
 * (works/WorkSql.ts), so a nested work is byte-for-byte the work the works list serves.
 */
export const workBasicColumns = (sql: Sql) => sql`w.id::text AS w_id, ${itemJsonSql(sql, "basic")} AS w_json`

const decodeWorkBasic = Schema.decodeUnknownSync(Schema.fromJsonString(WorkBasic))

/**
 * The nested work as a value: a character's appearances and a name's credits are encoded through
 * their list schema (one work per item, not the works list's hot path), so the text PostgreSQL
 * wrote is decoded as a WorkBasic rather than trusted as one.
 */
export const toWorkBasic = (row: WorkBasicRow): WorkBasic => decodeWorkBasic(row.w_json)

/**
 * The visibility of a work `w` (docs/api-contract.md, "Credentials, scopes and the content limit"):
 * live, and not nsfw for an `sfw` credential. Starts with AND so it can follow a join condition.
 */
export const workGate = (sql: Sql, nsfw: boolean) => nsfw ? sql`AND w.live` : sql`AND w.live AND NOT w.nsfw`

// ---------------------------------------------------------------------------------------------
// Credit names
// ---------------------------------------------------------------------------------------------

/**
 * A credit name with its person link. `p_*` columns are null unless the person is live and its
 * link public: a hidden link is served as no link (null `person_id`, no detail-face fields).
 */
export const CreditNameColumns = {
  ...Struct.pick(CreditNameBasic.fields, ["id", "display_name", "latin", "lang", "localized", "person_id"]),
  p_gender: Person.fields.gender,
  p_birth_year: Person.fields.birth_year,
  p_birth_month: Person.fields.birth_month,
  p_birth_day: Person.fields.birth_day
} as const
export const CreditNameRow = Schema.Struct(CreditNameColumns)
export type CreditNameRow = typeof CreditNameRow.Type

/** The columns of `CreditNameRow`; `FROM` must join `creditNamePersonJoin`. */
export const creditNameColumns = (sql: Sql) =>
  sql`cn.id::text AS id, cn.display_name, cn.latin, cn.lang, cn.localized, p.id::text AS person_id,
    p.gender AS p_gender, p.birth_year AS p_birth_year, p.birth_month AS p_birth_month, p.birth_day AS p_birth_day`

/** `credit_names cn` with its public person `p` (null columns when the link is not public). */
export const creditNameFrom = (sql: Sql) =>
  sql`credit_names cn LEFT JOIN persons p ON p.id = cn.person_id AND p.live AND p.is_public`

/**
 * Whether the credit name `alias` is visible (an `sfw` credential never sees what only nsfw works
 * contain). Live, and for `sfw`: a credit on a live sfw work, or none on a live nsfw work. A name
 * credited nowhere is visible; a suppressed credit (migrations/0026) counts as none.
 */
export const creditNameGate = (sql: Sql, nsfw: boolean, alias = "cn") => {
  const cn = sql(alias)
  if (nsfw) return sql`${cn}.live`
  // Scalar `LIMIT 1` probes rather than EXISTS: under OR the planner turns EXISTS into a hashed
  // subplan over every credit (measured: 200 ms for a page on 40k works, against < 1 ms this way).
  // The sfw probe goes first: most names have an sfw credit among their first index entries.
  return sql`${cn}.live AND (
    (SELECT true FROM credits gc JOIN works gw ON gw.id = gc.work_id AND gw.live AND NOT gw.nsfw
      WHERE gc.credit_name_id = ${cn}.id AND NOT gc.suppressed LIMIT 1) IS NOT NULL
    OR (SELECT true FROM credits gc JOIN works gw ON gw.id = gc.work_id AND gw.live AND gw.nsfw
      WHERE gc.credit_name_id = ${cn}.id AND NOT gc.suppressed LIMIT 1) IS NULL)`
}

export const toCreditNameBasic = (row: CreditNameRow): CreditNameBasic => ({
  object: "credit_name",
  id: row.id,
  display_name: row.display_name,
  latin: row.latin,
  lang: row.lang,
  localized: row.localized,
  person_id: row.person_id
})
