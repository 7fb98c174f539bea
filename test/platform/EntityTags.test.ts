/**
 * Entity tags and their lists (src/platform/EntityTags.ts; RFC 9110 sections 8.8.3, 13.1.1 and
 * 13.1.2), with the RFC's own examples.
 */
import { describe, expect, it } from "@effect/vitest"
import { noneMatch } from "../../src/platform/Conditional.js"
import {
  ifMatchPasses,
  ifNoneMatchMatches,
  namesTag,
  parseEntityTag,
  parseEntityTagList,
  strongMatch,
  weakMatch
} from "../../src/platform/EntityTags.js"

const tag = (value: string) => {
  const parsed = parseEntityTag(value)
  expect(parsed, value).toBeDefined()
  return parsed!
}

describe("entity-tag (RFC 9110 section 8.8.3)", () => {
  it("the section's examples: \"xyzzy\", W/\"xyzzy\" and the empty tag", () => {
    expect(parseEntityTag("\"xyzzy\"")).toEqual({ weak: false, opaque: "\"xyzzy\"" })
    expect(parseEntityTag("W/\"xyzzy\"")).toEqual({ weak: true, opaque: "\"xyzzy\"" })
    expect(parseEntityTag("\"\"")).toEqual({ weak: false, opaque: "\"\"" })
  })

  it("what is not an entity-tag: no quotes, lower-case w/, a space or a quote inside, trailing text", () => {
    for (const value of ["xyzzy", "w/\"xyzzy\"", "\"xy zzy\"", "\"xy\"zzy\"", "\"xyzzy", "\"xyzzy\" x", "W/ \"x\""]) {
      expect(parseEntityTag(value), value).toBeUndefined()
    }
  })

  it("the comparison table of section 8.8.3.2", () => {
    const rows: ReadonlyArray<readonly [string, string, boolean, boolean]> = [
      ["W/\"1\"", "W/\"1\"", false, true],
      ["W/\"1\"", "W/\"2\"", false, false],
      ["W/\"1\"", "\"1\"", false, true],
      ["\"1\"", "\"1\"", true, true]
    ]
    for (const [a, b, strong, weak] of rows) {
      expect(strongMatch(tag(a), tag(b)), `${a} ${b} strong`).toBe(strong)
      expect(weakMatch(tag(a), tag(b)), `${a} ${b} weak`).toBe(weak)
    }
  })
})

describe("If-Match / If-None-Match lists (RFC 9110 sections 13.1.1 and 13.1.2)", () => {
  it("the examples of section 13.1.1: a tag, a list with whitespace, and *", () => {
    expect(parseEntityTagList("\"xyzzy\"")).toEqual({ _tag: "Tags", tags: [{ weak: false, opaque: "\"xyzzy\"" }] })
    expect(parseEntityTagList("\"xyzzy\", \"r2d2xxxx\", \"c3piozzzz\"")).toEqual({
      _tag: "Tags",
      tags: [
        { weak: false, opaque: "\"xyzzy\"" },
        { weak: false, opaque: "\"r2d2xxxx\"" },
        { weak: false, opaque: "\"c3piozzzz\"" }
      ]
    })
    expect(parseEntityTagList("*")).toEqual({ _tag: "Any" })
    expect(parseEntityTagList("  *  ")).toEqual({ _tag: "Any" })
  })

  it("the examples of section 13.1.2, weak tags included", () => {
    expect(parseEntityTagList("W/\"xyzzy\"")).toEqual({ _tag: "Tags", tags: [{ weak: true, opaque: "\"xyzzy\"" }] })
    expect(parseEntityTagList("W/\"xyzzy\", W/\"r2d2xxxx\", W/\"c3piozzzz\"")?._tag).toBe("Tags")
  })

  it("a comma inside quotes belongs to the tag; empty members and OWS are allowed (section 5.6.1)", () => {
    expect(parseEntityTagList("\"a,b\"")).toEqual({ _tag: "Tags", tags: [{ weak: false, opaque: "\"a,b\"" }] })
    expect(parseEntityTagList(" , \"a\" ,, \t W/\"b\" ,")).toEqual({
      _tag: "Tags",
      tags: [{ weak: false, opaque: "\"a\"" }, { weak: true, opaque: "\"b\"" }]
    })
    expect(ifMatchPasses("\"x\", \"a,b\"", "\"a,b\"")).toBe(true)
    // Split on commas, `"a,b"` would have been the two strings `"a` and `b"`.
    expect(ifMatchPasses("\"a,b\"", "\"a")).toBe(false)
  })

  it("a malformed value matches nothing: an unquoted tag, * next to tags, two tags without a comma", () => {
    for (const value of ["xyzzy", "\"xyzzy\", r2d2", "*, \"xyzzy\"", "\"a\" \"b\"", "\"unterminated", "W/xyzzy"]) {
      expect(parseEntityTagList(value), value).toBeUndefined()
      expect(ifMatchPasses(value, "\"xyzzy\""), value).toBe(false)
      expect(ifNoneMatchMatches(value, ["\"xyzzy\""]), value).toBe(false)
    }
  })

  it("If-Match compares strongly: a weak tag never passes; * passes", () => {
    expect(ifMatchPasses("\"xyzzy\"", "\"xyzzy\"")).toBe(true)
    expect(ifMatchPasses("\"r2d2xxxx\", \"xyzzy\"", "\"xyzzy\"")).toBe(true)
    expect(ifMatchPasses("W/\"xyzzy\"", "\"xyzzy\"")).toBe(false)
    expect(ifMatchPasses("\"xyzzy2\"", "\"xyzzy\"")).toBe(false)
    expect(ifMatchPasses("*", "\"xyzzy\"")).toBe(true)
  })

  it("If-None-Match compares weakly, against every tag of the representation; * matches", () => {
    expect(ifNoneMatchMatches("W/\"xyzzy\"", ["\"xyzzy\""])).toBe(true)
    expect(ifNoneMatchMatches("\"other\", \"xyzzy-gzip\"", ["\"xyzzy\"", "\"xyzzy-gzip\""])).toBe(true)
    expect(ifNoneMatchMatches("\"other\"", ["\"xyzzy\""])).toBe(false)
    expect(ifNoneMatchMatches("*", ["\"xyzzy\""])).toBe(true)
    expect(ifNoneMatchMatches(undefined, ["\"xyzzy\""])).toBe(false)
  })

  it("namesTag: a listed tag only, * names none (the gzip tag of a 304, Compression.ts)", () => {
    expect(namesTag("\"a\", W/\"b-gzip\"", "\"b-gzip\"")).toBe(true)
    expect(namesTag("*", "\"b-gzip\"")).toBe(false)
    // A tag that merely contains the other is not it.
    expect(namesTag("\"xb-gzip\"", "\"b-gzip\"")).toBe(false)
  })

  it("conditional reads: the identity or the gzip representation's tag is a 304", () => {
    expect(noneMatch("\"abc\"", "\"abc\"")).toBe(true)
    expect(noneMatch("W/\"abc-gzip\"", "\"abc\"")).toBe(true)
    expect(noneMatch("\"abd\"", "\"abc\"")).toBe(false)
  })
})
