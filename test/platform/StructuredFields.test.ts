/**
 * Structured field serialization (src/platform/StructuredFields.ts; RFC 9651) and the RateLimit
 * fields written with it (docs/writing.md, "Limits"), byte for byte as they have always been sent.
 */
import { describe, expect, it } from "@effect/vitest"
import { rateLimitField, rateLimitPolicyField } from "../../src/platform/RateLimiter.js"
import {
  serializeBareItem,
  serializeDictionary,
  serializeItem,
  serializeList,
  Token
} from "../../src/platform/StructuredFields.js"

describe("RFC 9651 serialization", () => {
  it("sf-integer (section 4.1.4), within 15 digits", () => {
    expect(serializeBareItem(42)).toBe("42")
    expect(serializeBareItem(-42)).toBe("-42")
    expect(serializeBareItem(0)).toBe("0")
    expect(serializeBareItem(999_999_999_999_999)).toBe("999999999999999")
    expect(() => serializeBareItem(1_000_000_000_000_000)).toThrow()
  })

  it("sf-decimal (section 4.1.5): at most three fractional digits, rounded half to even, at least one", () => {
    expect(serializeBareItem(4.5)).toBe("4.5")
    expect(serializeBareItem(-1.25)).toBe("-1.25")
    expect(serializeBareItem(0.0005)).toBe("0.0")
    expect(serializeBareItem(0.0015)).toBe("0.002")
    expect(serializeBareItem(1.12345)).toBe("1.123")
    expect(() => serializeBareItem(Number.NaN)).toThrow()
  })

  it("sf-string (section 4.1.6): DQUOTE and backslash escaped; non-ASCII refused", () => {
    expect(serializeBareItem("hello world")).toBe("\"hello world\"")
    expect(serializeBareItem("say \"hi\"")).toBe("\"say \\\"hi\\\"\"")
    expect(serializeBareItem("a\\b")).toBe("\"a\\\\b\"")
    expect(serializeBareItem("")).toBe("\"\"")
    expect(() => serializeBareItem("caf\u00e9")).toThrow()
    expect(() => serializeBareItem("line\nbreak")).toThrow()
  })

  it("sf-token, sf-boolean and byte sequences (sections 4.1.7 to 4.1.9)", () => {
    expect(serializeBareItem(new Token("foo123/456"))).toBe("foo123/456")
    expect(() => serializeBareItem(new Token("1abc"))).toThrow()
    expect(serializeBareItem(true)).toBe("?1")
    expect(serializeBareItem(false)).toBe("?0")
    expect(serializeBareItem(new TextEncoder().encode("pretend this is binary content."))).toBe(
      ":cHJldGVuZCB0aGlzIGlzIGJpbmFyeSBjb250ZW50Lg==:"
    )
  })

  it("parameters (section 4.1.1.2): in order, a true value written as the key alone; keys checked", () => {
    expect(serializeItem({ value: new Token("abc"), params: { a: 1, b: true, c: "x" } })).toBe("abc;a=1;b;c=\"x\"")
    expect(() => serializeItem({ value: 1, params: { Upper: 1 } })).toThrow()
  })

  it("lists (section 4.1.1) and dictionaries (section 4.1.2), as in the RFC's examples", () => {
    expect(serializeList([{ value: new Token("sugar") }, { value: new Token("tea") }, { value: new Token("rum") }]))
      .toBe("sugar, tea, rum")
    expect(serializeList([{ value: new Token("abc"), params: { a: 1, b: 2 } }, { value: new Token("def") }]))
      .toBe("abc;a=1;b=2, def")
    expect(serializeDictionary({ en: { value: "Applepie" }, da: { value: new Token("x") } }))
      .toBe("en=\"Applepie\", da=x")
    expect(
      serializeDictionary({
        a: { value: false },
        b: { value: true },
        c: { value: true, params: { foo: new Token("bar") } }
      })
    )
      .toBe("a=?0, b, c;foo=bar")
  })
})

describe("the RateLimit fields, byte for byte as before (docs/writing.md, \"Limits\")", () => {
  it("the request budget's policy and state", () => {
    expect(rateLimitPolicyField("requests", 600, 30)).toBe("\"requests\";q=600;w=30")
    expect(rateLimitField("requests", 599, 1)).toBe("\"requests\";r=599;t=1")
    expect(rateLimitField("requests", 0, 0)).toBe("\"requests\";r=0;t=0")
  })

  it("a spent daily quota", () => {
    expect(rateLimitPolicyField("claims", 1000, 86400)).toBe("\"claims\";q=1000;w=86400")
    expect(rateLimitField("decisions", 0, 3600)).toBe("\"decisions\";r=0;t=3600")
  })
})
