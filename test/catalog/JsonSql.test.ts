/**
 * The JSON PostgreSQL builds for the catalog is generated from the record schemas
 * (src/catalog/shared/JsonSql.ts): every object the works SQL writes has exactly its record's
 * members, in the record's order (the order the encoder writes, docs/api-contract.md, "Records and
 * lists"), and a mapping that misses or adds a member does not compile. The list envelope of the
 * works reads is written from the list schema the same way.
 */
import { describe, expect, it } from "@effect/vitest"
import { Schema, SchemaAST } from "effect"
import { RosterCharacter } from "../../schema/Catalog/Character.js"
import { Cover, EntityName, Intro, ListOf, Ref, WorkLink } from "../../schema/Catalog/Common.js"
import { CompanyBasic } from "../../schema/Catalog/Company.js"
import { CreditEntry, CreditGroup } from "../../schema/Catalog/Credit.js"
import { EngineRef } from "../../schema/Catalog/Engine.js"
import { WorkPlaytime } from "../../schema/Catalog/Playtime.js"
import { TagBasic, WorkTag } from "../../schema/Catalog/Tag.js"
import { ListWork, Rating, Work, WorkBasic, WorkCompany, WorkFull, WorkTitle } from "../../schema/Catalog/Work.js"
import { listJson, objectSql } from "../../src/catalog/shared/JsonSql.js"
import { coverJson, itemJsonSql, partWhereSql, rosterJson, type WorkPart } from "../../src/catalog/works/WorkSql.js"

/** The schema's property signatures, in order: what the encoder writes. */
const schemaKeys = (schema: Schema.Top): Array<string> => {
  const ast = schema.ast
  if (!SchemaAST.isObjects(ast)) throw new Error(`not a record: ${ast._tag}`)
  return ast.propertySignatures.map((p) => String(p.name))
}

/**
 * A stand-in for the sql client that writes a fragment as its SQL text (values inline): enough to
 * read the JSON objects a statement builds, without a database.
 */
const asText: any = Object.assign(
  (strings: TemplateStringsArray, ...values: Array<unknown>) =>
    strings.reduce((out, s, i) => out + s + (i < values.length ? String(values[i]) : ""), ""),
  { literal: (text: string) => text }
)

/** The member names of every `json_build_object(...)` in `sql`, in order of appearance (outer first). */
const objectsIn = (sql: string): Array<Array<string>> => {
  const out: Array<Array<string>> = []
  const open = "json_build_object("
  for (let at = sql.indexOf(open); at >= 0; at = sql.indexOf(open, at + 1)) {
    const args: Array<string> = []
    let depth = 0
    let quoted = false
    let from = at + open.length
    for (let i = from; i < sql.length; i++) {
      const ch = sql[i]
      if (quoted) {
        if (ch === "'" && sql[i + 1] === "'") i++
        else if (ch === "'") quoted = false
      } else if (ch === "'") quoted = true
      else if (ch === "(" || ch === "[") depth++
      else if ((ch === ")" || ch === "]") && depth > 0) depth--
      else if (ch === ")" || (ch === "," && depth === 0)) {
        args.push(sql.slice(from, i).trim())
        from = i + 1
        if (ch === ")") break
      }
    }
    const keys = args.filter((_, i) => i % 2 === 0)
    for (const key of keys) expect(key).toMatch(/^'[a-z_]+'$/)
    out.push(keys.map((key) => key.slice(1, -1)))
  }
  return out
}

/** Each part's records: the element, then the records nested in it. */
const partRecords: Record<WorkPart, ReadonlyArray<Schema.Top>> = {
  titles: [WorkTitle],
  refs: [Ref],
  intros: [Intro],
  covers: [Cover],
  companies: [WorkCompany, CompanyBasic],
  ratings: [Rating],
  tags: [WorkTag, TagBasic],
  credits: [CreditGroup, CreditEntry],
  playtime: [WorkPlaytime],
  aliases: [EntityName],
  links: [WorkLink]
}

const Sample = Schema.Struct({
  object: Schema.Literal("sample"),
  id: Schema.String,
  name: Schema.NullOr(Schema.String)
})

describe("JSON built by PostgreSQL follows the record schemas (src/catalog/shared/JsonSql.ts)", () => {
  it("objectSql writes the record's members in its order, literal members from the schema", () => {
    expect(objectSql(Sample, { name: "s.name", id: "s.id::text" })).toBe(
      "json_build_object('object', 'sample', 'id', s.id::text, 'name', s.name)"
    )
  })

  it("a mapping that misses, adds or overrides a member is a type error (and refused at load)", () => {
    // @ts-expect-error `name` has no column
    expect(() => objectSql(Sample, { id: "s.id::text" })).toThrow("no column for member `name`")
    // @ts-expect-error `title` is no member of Sample
    expect(() => objectSql(Sample, { id: "s.id::text", name: "s.name", title: "s.title" })).toThrow("title")
    // @ts-expect-error `object` is fixed by the schema's literal
    expect(() => objectSql(Sample, { object: "'other'", id: "s.id::text", name: "s.name" })).toThrow("object")
  })

  it("every object the works SQL builds has its record's members in the record's order", () => {
    const fullItemKeys = schemaKeys(WorkFull).filter((key) => key !== "aliases" && key !== "links")
    expect(objectsIn(itemJsonSql(asText, "basic") as unknown as string)).toEqual([schemaKeys(WorkBasic)])
    expect(objectsIn(itemJsonSql(asText, "full") as unknown as string)).toEqual([
      fullItemKeys,
      schemaKeys(EngineRef)
    ])
    expect(objectsIn(coverJson)).toEqual([schemaKeys(Cover)])
    expect(objectsIn(rosterJson)).toEqual([schemaKeys(RosterCharacter)])
    for (const [part, records] of Object.entries(partRecords)) {
      for (const nsfw of [false, true]) {
        const sql = partWhereSql(asText, part as WorkPart, asText`= ANY('{1}'::bigint[])`, nsfw) as unknown as string
        expect(objectsIn(sql), part).toEqual(records.map(schemaKeys))
      }
    }
    // Every member of a work that is not in its view=full item is a part, or the detail's roster.
    const parts = schemaKeys(Work).filter((key) => !fullItemKeys.includes(key) && key !== "characters")
    expect(parts.sort()).toEqual(Object.keys(partRecords).sort())
  })

  it("the works list envelope is written in the list schema's order, around items as they are", () => {
    const envelope = listJson(ListWork)
    const text = envelope(["{\"id\" : \"1\"}", "{\"id\" : \"2\"}"], {
      missing: ["9"],
      next_cursor: "cur_x",
      total: 2,
      total_relation: "eq",
      facets: { olang: [] }
    })
    expect(text).toBe(
      "{\"object\":\"list\",\"items\":[{\"id\" : \"1\"},{\"id\" : \"2\"}],\"next_cursor\":\"cur_x\",\"total\":2," +
        "\"total_relation\":\"eq\",\"facets\":{\"olang\":[]},\"missing\":[\"9\"]}"
    )
    expect(Object.keys(JSON.parse(text))).toEqual(schemaKeys(ListWork))
    expect(envelope([], {})).toBe("{\"object\":\"list\",\"items\":[]}")
  })

  it("each member of the envelope is encoded with its own schema", () => {
    const envelope = listJson(ListOf(Sample, "ListSample"))
    const facets = { olang: [{ count: 3, display_name: "Japanese", value: "ja" }] }
    expect(envelope([], { facets })).toBe(
      "{\"object\":\"list\",\"items\":[],\"facets\":{\"olang\":[{\"value\":\"ja\",\"display_name\":\"Japanese\",\"count\":3}]}}"
    )
    expect(() => envelope([], { total: -1 })).toThrow()
    // @ts-expect-error the items are the first argument, as JSON texts
    envelope([], { items: [] })
  })
})
