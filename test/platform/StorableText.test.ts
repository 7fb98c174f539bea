/**
 * No input reaches the database that it will refuse (schema/Text.ts): every string a request of
 * either interface can carry, in its path, query, headers or body, at any depth, is refused when it
 * holds U+0000 or an unpaired UTF-16 surrogate. The walk reads the endpoints from the API
 * definitions (schema/Api/CatalogApi.ts, schema/Api/IdentityApi.ts), so a field added later without
 * the check fails here. A node is judged by what it does, not by which checks it names: it is decoded
 * as a request decodes it (encoded side, transformations, checks), so a closed vocabulary or a
 * pattern that already excludes both passes as it is.
 */
import { describe, expect, it } from "@effect/vitest"
import { Result, Schema, SchemaAST } from "effect"
import { HttpApi } from "effect/http-api"
import { CatalogApi } from "../../schema/Api/CatalogApi.js"
import { IdentityApi } from "../../schema/Api/IdentityApi.js"
import { isBlankName, isStorableJsonValue, isStorableString } from "../../schema/Text.js"

const unstorable = ["\u0000", "\ud800", "\udc00"] as const

/** Refused by every string node on its own: the bare bad characters, alone and among others. */
const stringProbes: ReadonlyArray<string> = ["a\u0000", "\ud800", "\u0000", "\udc00", "x\udbffy", "a\udc00\ud800b"]

/** An `unknown` node (a `field_values` entry) must find them at any depth, keys included. */
const valueProbes: ReadonlyArray<unknown> = [
  ...stringProbes,
  ["ok", "\ud800"],
  { key: "a\u0000" },
  { "a\u0000": 1 },
  { deep: [{ deeper: ["x\udc00"] }] }
]

/**
 * Values some node of the interfaces accepts. Each one a node accepts is tried again with each bad
 * character at its start, middle and end: a pattern that admits the valid value but not the bare
 * probes (a `source:external_id` token, a URL) must still refuse it with a bad character inside.
 */
const samples: ReadonlyArray<string> = [
  "a",
  "abc",
  "A1",
  "1",
  "1042",
  "123456",
  "ja",
  "zh-Hans",
  "v17",
  "vndb:v17",
  "catalog.work.display_name",
  "https://example.com/a",
  "http://127.0.0.1:3000/callback",
  "/api/v1/ui/account",
  "user@example.com",
  "2019-07-26",
  "2025-06-01T09:30:00.000Z",
  "\"claim-1-2\"",
  "openid profile",
  "authorization_code",
  "Why I want to publish: I write visual novels."
]

const inserted = (sample: string, bad: string): ReadonlyArray<string> => {
  const middle = Math.floor(sample.length / 2)
  return [bad + sample, sample.slice(0, middle) + bad + sample.slice(middle), sample + bad]
}

const accepts = (schema: Schema.Decoder<unknown>, input: unknown): boolean =>
  Result.isSuccess(Schema.decodeUnknownResult(schema)(input))

/** The inputs this string node lets through that it should not, empty when it is covered. */
const leaks = (ast: SchemaAST.AST): Array<unknown> => {
  const schema = Schema.make<Schema.Decoder<unknown>>(ast)
  const probes: Array<unknown> = ast._tag === "String" || ast._tag === "TemplateLiteral"
    ? [...stringProbes]
    : [...valueProbes]
  const examples = ast.annotations?.examples
  const candidates = [...samples, ...(Array.isArray(examples) ? examples.filter((e) => typeof e === "string") : [])]
  for (const sample of candidates) {
    if (!accepts(schema, sample)) continue
    for (const bad of unstorable) probes.push(...inserted(sample, bad))
  }
  return probes.filter((probe) => accepts(schema, probe))
}

interface Part {
  readonly where: string
  readonly ast: SchemaAST.AST
}

/** Every part of a request of every endpoint of an API: path, query, headers and each body type. */
const requestParts = (api: HttpApi.Top): Array<Part> => {
  const out: Array<Part> = []
  HttpApi.reflect(api as any, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => {
      const name = `${endpoint.method} ${endpoint.path}`
      if (endpoint.params !== undefined) out.push({ where: `${name} path`, ast: endpoint.params.ast })
      if (endpoint.query !== undefined) out.push({ where: `${name} query`, ast: endpoint.query.ast })
      if (endpoint.headers !== undefined) out.push({ where: `${name} headers`, ast: endpoint.headers.ast })
      for (const [contentType, payload] of endpoint.payload) {
        for (const schema of payload.schemas) out.push({ where: `${name} body (${contentType})`, ast: schema.ast })
      }
    }
  })
  return out
}

interface Finding {
  readonly field: string
  readonly leaks: ReadonlyArray<unknown>
}

/**
 * Walks a request part down to its string and `unknown` nodes and tests each. A node with an
 * encoding is tested with it, as the request decodes it (a statement is checked before it is
 * trimmed); the members of a structure decoded from a string (a comma-separated list) are tested
 * as themselves, since they are what gets stored.
 */
const findLeaks = (part: Part): Array<Finding> => {
  const out: Array<Finding> = []
  // Only a suspended schema can refer back to itself; shared nodes elsewhere are walked at each place.
  const suspended = new Set<SchemaAST.AST>()
  const walk = (ast: SchemaAST.AST, path: string): void => {
    switch (ast._tag) {
      case "String":
      case "TemplateLiteral":
      case "Unknown":
      case "Any": {
        const leaked = leaks(ast)
        if (leaked.length > 0) out.push({ field: `${part.where} ${path || "/"}`, leaks: leaked })
        return
      }
      case "Objects":
        for (const property of ast.propertySignatures) walk(property.type, `${path}/${String(property.name)}`)
        for (const index of ast.indexSignatures) {
          walk(index.parameter, `${path}/{key}`)
          walk(index.type, `${path}/{value}`)
        }
        return
      case "Arrays":
        ast.elements.forEach((element, i) => walk(element, `${path}/${i}`))
        for (const rest of ast.rest) walk(rest, `${path}/{item}`)
        return
      case "Union":
        for (const member of ast.types) walk(member, path)
        return
      case "Suspend":
        if (suspended.has(ast)) return
        suspended.add(ast)
        return walk(ast.thunk(), path)
      case "Declaration":
        // A class: its fields are its type parameter.
        for (const parameter of ast.typeParameters) walk(parameter, path)
        return
      default:
        // Literals, enums, numbers, booleans, null: nothing free-form to store.
        return
    }
  }
  walk(part.ast, "")
  return out
}

const describeLeaks = (findings: ReadonlyArray<Finding>) =>
  findings.map(({ field, leaks }) => `${field} accepts ${JSON.stringify(leaks.slice(0, 3))}`)

describe("storable text (schema/Text.ts)", () => {
  it("the check refuses NUL and unpaired surrogates anywhere, and keeps every real character", () => {
    for (const bad of ["\u0000", "a\u0000b", "\ud800", "\udc00", "a\ud800b", "\udc00\ud800", "\ud83d"]) {
      expect({ bad, storable: isStorableString(bad) }).toEqual({ bad, storable: false })
    }
    for (const good of ["", "plain", "\u{1F4D6} book", "\ud83d\ude00", "日本語", "\u200b", "\ufffd", "tab\tline\n"]) {
      expect({ good, storable: isStorableString(good) }).toEqual({ good, storable: true })
    }
    expect(isStorableJsonValue({ a: [1, null, true, { b: "ok" }] })).toBe(true)
    expect(isStorableJsonValue({ a: [1, { b: "x\ud800" }] })).toBe(false)
    expect(isStorableJsonValue({ "\u0000": "ok" })).toBe(false)
    // Nesting far deeper than a call stack allows is walked, not overflowed.
    let deep: unknown = "\u0000"
    for (let i = 0; i < 200_000; i++) deep = [deep]
    expect(isStorableJsonValue(deep)).toBe(false)
    // So is an array far longer than a call's arguments may be.
    expect(isStorableJsonValue([...Array.from({ length: 1_000_000 }, () => 0), "\ud800"])).toBe(false)
  })

  it("a name of only whitespace or zero-width characters is blank; one visible character is enough", () => {
    for (const blank of ["", " ", "\t\n", "\u3000", "\u200b", "\u200c\u200d", "\u2060", "\ufeff", " \u200b\ufeff "]) {
      expect({ blank, isBlank: isBlankName(blank) }).toEqual({ blank, isBlank: true })
    }
    for (const name of ["a", " a ", "\u200bx", "\u{1F4D6}", "日本"]) {
      expect({ name, isBlank: isBlankName(name) }).toEqual({ name, isBlank: false })
    }
  })

  for (const [name, api] of [["catalog", CatalogApi], ["identity", IdentityApi]] as const) {
    it(`${name}: every string of every request refuses NUL and unpaired surrogates`, () => {
      const parts = requestParts(api as unknown as HttpApi.Top)
      // The walk reaches the interface (not an empty definition).
      expect(parts.length).toBeGreaterThan(10)
      expect(describeLeaks(parts.flatMap(findLeaks))).toEqual([])
    })
  }

  it("the walk finds a string without the check (it is not vacuous)", () => {
    const part: Part = {
      where: "POST /example body",
      ast: Schema.Struct({
        ok: Schema.String.check(Schema.isPattern(/^[0-9]+$/u)),
        url: Schema.String.check(Schema.isPattern(/^https?:\/\/\S+$/u)),
        values: Schema.Record(Schema.String, Schema.Unknown),
        names: Schema.Array(Schema.String)
      }).ast
    }
    expect(findLeaks(part).map((finding) => finding.field)).toEqual([
      "POST /example body /url",
      "POST /example body /values/{key}",
      "POST /example body /values/{value}",
      "POST /example body /names/{item}"
    ])
  })
})
