/**
 * The README's table of field keys is the field registry's (docs/writing.md, "Field keys"): the text
 * between its markers is what `npm run docs:fields` (scripts/fields-table.ts) renders from the list
 * `GET /v2/catalog/fields` serves, one row per key with its entity type, whether it is writable and a
 * summary of its value's JSON Schema.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { registeredFields } from "../../schema/Catalog/Fields.js"
import { fieldsTableBegin, fieldsTableEnd, renderFieldsTable, summarize, tableIn } from "../../scripts/fields-table.js"
import { fieldInfos } from "../../src/catalog/proposals/Proposals.js"

const readme = Fs.readFileSync(Path.resolve(import.meta.dirname, "../../README.md"), "utf8")

const occurrences = (text: string, part: string) => text.split(part).length - 1

describe("README, the table of field keys (docs/writing.md, \"Field keys\")", () => {
  it("stands between one pair of markers", () => {
    expect(occurrences(readme, fieldsTableBegin)).toBe(1)
    expect(occurrences(readme, fieldsTableEnd)).toBe(1)
    expect(tableIn(readme)).toBeDefined()
  })

  it("is the registry's: every key, in registry order, with its entity type, writability and value", () => {
    expect(
      tableIn(readme),
      "README.md's table of field keys differs from the field registry: run `npm run docs:fields` to regenerate it"
    ).toBe(renderFieldsTable())
  })

  it("has a row per registered key with its entity type and whether it is writable", () => {
    const rows = tableIn(readme)!.split("\n").filter((line) => line.startsWith("| `"))
    expect(rows.map((row) => row.split(" | ")[0]!.slice(3, -1))).toEqual(registeredFields.map((f) => f.key))
    for (const field of registeredFields) {
      expect(rows.find((row) => row.startsWith(`| \`${field.key}\` |`))).toContain(
        `| \`${field.entityType}\` | ${field.writable ? "yes" : "no"} |`
      )
    }
  })

  it("summarizes values from their JSON Schema: bounds, null, literals, list items, embedded records' ids", () => {
    const schemaOf = (key: string) => fieldInfos.find((f) => f.key === key)!.schema
    expect(summarize(schemaOf("catalog.work.display_name"))).toBe("string(1..512)")
    expect(summarize(schemaOf("catalog.work.length_minutes"))).toBe("integer 0..2147483647 | null")
    expect(summarize(schemaOf("catalog.work.development_status"))).toBe(
      "\"finished\" | \"in_development\" | \"cancelled\""
    )
    expect(summarize(schemaOf("catalog.work.tags"))).toBe("array(..500) of {tag: {id}, spoiler, score}")
    expect(summarize(schemaOf("catalog.character.measurements"))).toBe("{bust_cm, waist_cm, hips_cm, cup} | null")
  })
})
