/**
 * `Content-Type` parsing (src/platform/MediaType.ts; RFC 9110 section 8.3.1) and the one media type
 * the catalog takes a body in (docs/api-contract.md, "Errors: catalog problem documents").
 */
import { describe, expect, it } from "@effect/vitest"
import { jsonBodyType, parseMediaType } from "../../src/platform/MediaType.js"

describe("parseMediaType (RFC 9110 section 8.3.1)", () => {
  it("the RFC's equivalent forms of text/html with charset=utf-8 parse alike", () => {
    for (
      const value of [
        "text/html;charset=utf-8",
        "text/html;charset=UTF-8",
        "Text/HTML;Charset=\"utf-8\"",
        "text/html; charset=\"utf-8\""
      ]
    ) {
      const parsed = parseMediaType(value)
      expect(parsed, value).toBeDefined()
      expect(parsed!.type).toBe("text")
      expect(parsed!.subtype).toBe("html")
      expect(parsed!.parameters.map(([name, v]) => [name, v.toLowerCase()])).toEqual([["charset", "utf-8"]])
    }
  })

  it("OWS around `;`, empty parameters, quoted-pairs and several parameters", () => {
    expect(parseMediaType("  application/json  ;  ; charset=utf-8 ;")).toEqual({
      type: "application",
      subtype: "json",
      parameters: [["charset", "utf-8"]]
    })
    expect(parseMediaType("multipart/form-data; boundary=\"a;b\\\"c\"; x=1")).toEqual({
      type: "multipart",
      subtype: "form-data",
      parameters: [["boundary", "a;b\"c"], ["x", "1"]]
    })
  })

  it("what is not a media type is undefined", () => {
    for (
      const value of [
        "",
        "json",
        "application/",
        "/json",
        "application/json charset=utf-8",
        "application/json; charset",
        "application/json; charset=",
        "application/json; charset=\"utf-8",
        "application/json; =utf-8",
        "application/js on",
        "application/json, text/plain"
      ]
    ) expect(parseMediaType(value), JSON.stringify(value)).toBeUndefined()
  })
})

describe("jsonBodyType: application/json, optionally with charset=utf-8, only", () => {
  it("accepts application/json in any case, with or without charset=utf-8", () => {
    for (
      const value of [
        "application/json",
        "Application/JSON",
        "application/json; charset=utf-8",
        "application/json;charset=UTF-8",
        "application/json; charset=\"utf-8\""
      ]
    ) expect(jsonBodyType(value)._tag, value).toBe("Json")
  })

  it("refuses a missing, malformed or other media type, another charset or another parameter", () => {
    expect(jsonBodyType(undefined)._tag).toBe("Missing")
    expect(jsonBodyType("json")._tag).toBe("Malformed")
    for (
      const value of [
        "application/x-www-form-urlencoded",
        "text/plain",
        "text/plain;charset=UTF-8",
        "application/json; charset=latin1",
        "application/json; charset=utf-16",
        "application/json; charset=utf-8; charset=utf-8",
        "application/json; profile=x",
        "application/problem+json",
        "multipart/form-data; boundary=x"
      ]
    ) expect(jsonBodyType(value)._tag, value).toBe("Other")
  })
})
