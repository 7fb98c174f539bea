/**
 * Catalog JSON that PostgreSQL writes, generated from the record schemas (schema/Catalog/*.ts).
 *
 * Why PostgreSQL writes it: a works page is answered as the JSON text the database built for each
 * item (`json_build_object`), spliced into the list envelope as it is, so the hot list path neither
 * parses nor re-encodes rows (works/WorkSql.ts, works/Works.ts). What that gives up is the encoder's
 * view of the shape: the members of each record are written in SQL text. So that text is generated
 * here from the schema itself:
 *
 * - `objectSql(Record, columns)`: `json_build_object('key', expr, ...)` with the record's members in
 *   the order of its property signatures (`fields`), which is the order the encoder writes them in.
 *   `columns` is the one declared member → SQL expression mapping of that record; its type requires
 *   exactly the record's members (a missing or an extra one is a compile error). Members that are a
 *   single string literal (`object: "work"`) are written from the schema and take no column. A
 *   nested record (the company of a work's company part) is one more `objectSql` as its column.
 * - `listJson(List)`: the list envelope (docs/api-contract.md, "Records and lists") as JSON text
 *   around items that already are JSON text, its members in the list schema's order, each encoded
 *   with its own schema, the items spliced in where `items` stands.
 *
 * Columns are SQL text from constants in the source, never from input: they go to `sql.literal`.
 */
import { Schema, SchemaAST } from "effect"

/** A record schema (`Schema.Struct` or `Schema.Class`): its members are its `fields`. */
export interface RecordSchema {
  readonly fields: Schema.Struct.Fields
}

/** The members of `F` that are a single string literal, written from the schema. */
type LiteralKeys<F extends Schema.Struct.Fields> = {
  [K in keyof F]: F[K] extends Schema.Literal<string> ? K : never
}[keyof F]

/** A record's columns: one SQL expression per member, its literal members excepted. */
export type Columns<S extends RecordSchema> = {
  readonly [K in Exclude<keyof S["fields"], LiteralKeys<S["fields"]>> & string]: string
}

/** `C` with every key the record does not have mapped to `never`, so an extra column fails to type-check. */
type Exactly<S extends RecordSchema, C> = C & { readonly [K in Exclude<keyof C, keyof Columns<S>>]: never }

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`

/** The string literal a member is fixed to, if it is one (`Schema.Literal("work")`). */
const literalOf = (field: Schema.Constraint): string | undefined => {
  const ast = field.ast
  return SchemaAST.isLiteral(ast) && typeof ast.literal === "string" ? ast.literal : undefined
}

/** The member names of a record, in the order the encoder writes them. */
export const memberKeys = (schema: RecordSchema): ReadonlyArray<string> => Object.keys(schema.fields)

/**
 * `json_build_object(...)` of `schema`'s members, in its order, from `columns` (SQL expressions of
 * the query it goes into). Throws at module load when a column is missing or extra, which the type
 * already rules out for a literal mapping.
 */
export const objectSql = <S extends RecordSchema, const C extends Columns<S>>(
  schema: S,
  columns: Exactly<S, C>
): string => {
  const given: Readonly<Record<string, string>> = columns
  const keys = memberKeys(schema)
  const args = keys.map((key) => {
    const literal = literalOf(schema.fields[key]!)
    const column = literal === undefined ? given[key] : quote(literal)
    if (column === undefined) throw new Error(`objectSql: no column for member \`${key}\``)
    return `${quote(key)}, ${column}`
  })
  const extra = Object.keys(given).filter((key) => !keys.includes(key) || literalOf(schema.fields[key]!) !== undefined)
  if (extra.length > 0) throw new Error(`objectSql: columns for no member: ${extra.join(", ")}`)
  return `json_build_object(${args.join(", ")})`
}

/** A list schema (`ListOf(...)`, schema/Catalog/Common.ts): a record with an `items` member. */
export interface ListSchema extends RecordSchema {
  readonly fields: Schema.Struct.Fields & { readonly items: Schema.Top }
  readonly Type: object
}

/** The members of a list other than its items and literals, each optional. */
export type ListMembers<S extends ListSchema> = {
  readonly [K in Exclude<keyof S["Type"], "items" | LiteralKeys<S["fields"]>>]?: S["Type"][K] | undefined
}

/**
 * The writer of `list`'s envelope: `(items, members)` → JSON text, `items` being JSON texts written
 * as they are and every other member present in `members` (or fixed by the schema, as `object`)
 * encoded with its own schema, in the list schema's member order.
 */
export const listJson = <S extends ListSchema>(list: S) => {
  const members = memberKeys(list).map((key) => {
    const field = list.fields[key]!
    const name = JSON.stringify(key)
    const literal = literalOf(field)
    const encode = Schema.encodeSync(field as Schema.ConstraintEncoder<unknown>)
    return { key, name, fixed: literal === undefined ? undefined : `${name}:${JSON.stringify(literal)}`, encode }
  })
  return (items: ReadonlyArray<string>, values: ListMembers<S>): string => {
    const given: Readonly<Record<string, unknown>> = values
    const out: Array<string> = []
    for (const member of members) {
      if (member.key === "items") out.push(`${member.name}:[${items.join(",")}]`)
      else if (member.fixed !== undefined) out.push(member.fixed)
      else {
        const value = given[member.key]
        if (value !== undefined) out.push(`${member.name}:${JSON.stringify(member.encode(value))}`)
      }
    }
    return `{${out.join(",")}}`
  }
}
