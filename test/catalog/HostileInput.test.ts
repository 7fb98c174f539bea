/**
 * Bad input never hurts (docs/api-contract.md, "Errors: catalog problem documents"): hostile query
 * strings and paths on the works
 * and search reads get a problem document (or, where the input is merely odd, a normal answer) and
 * never a 5xx: injection-looking queries, 10 KB values, invalid percent-encoding, NUL bytes, 25-digit
 * ids, negative limits, repeated and unknown parameters.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { problemCodeList } from "../../schema/Problem.js"
import { FieldError } from "../../schema/Problem.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
import { REQUEST_ID } from "../support/Problems.js"

const big = "x".repeat(10_240)
const bigDigits = "1".repeat(10_240)

/** Paths whose answer must be a 4xx problem document. */
const rejected: ReadonlyArray<string> = [
  // 10 KB values
  `/v2/catalog/works?q=${big}`,
  `/v2/catalog/search?q=${big}`,
  `/v2/catalog/works?cursor=cur_${big}`,
  `/v2/catalog/works?ids=${bigDigits}`,
  `/v2/catalog/works?ids=${Array.from({ length: 2000 }, (_, i) => i + 1).join(",")}`,
  `/v2/catalog/works?refs=vndb:${big}`,
  `/v2/catalog/works?include=${big}`,
  `/v2/catalog/works?sort=${big}`,
  `/v2/catalog/works?facets=${big}`,
  `/v2/catalog/works?site=${big}`,
  `/v2/catalog/works?limit=${bigDigits}`,
  `/v2/catalog/works?page=${bigDigits}`,
  `/v2/catalog/works/${bigDigits}`,
  `/v2/catalog/works/${bigDigits}/credits`,
  // NUL bytes and control characters
  "/v2/catalog/works?q=a%00b",
  "/v2/catalog/search?q=%00",
  "/v2/catalog/works?include=titles%00",
  "/v2/catalog/works?sort=id%00",
  "/v2/catalog/works?refs=vndb:v1%00",
  "/v2/catalog/works?refs=vndb:v1%0A",
  "/v2/catalog/works?ids=1%002",
  "/v2/catalog/works?olang=ja%00",
  "/v2/catalog/works/1%00",
  "/v2/catalog/works/1%00/covers",
  // 25-digit ids
  "/v2/catalog/works/1234567890123456789012345",
  "/v2/catalog/works/1234567890123456789012345/characters",
  "/v2/catalog/works?ids=1234567890123456789012345",
  "/v2/catalog/works?tag_id=1234567890123456789012345",
  // negative and non-numeric limits and pages
  "/v2/catalog/works?limit=-1",
  "/v2/catalog/works?limit=-99999999999999999999",
  "/v2/catalog/works?limit=1e400",
  "/v2/catalog/works?limit=NaN",
  "/v2/catalog/works?limit=",
  "/v2/catalog/works?limit=2.5",
  "/v2/catalog/works?page=-1",
  "/v2/catalog/works?page=1e400",
  "/v2/catalog/search?page=99999999999999999999",
  "/v2/catalog/works/1/covers?limit=-3",
  // repeated parameters
  "/v2/catalog/works?limit=1&limit=2",
  "/v2/catalog/works?q=a&q=b",
  "/v2/catalog/works?sort=id&sort=updated",
  "/v2/catalog/works?include=titles&include=tags",
  "/v2/catalog/works?ids=1&ids=2",
  "/v2/catalog/works?cursor=cur_a&cursor=cur_b",
  "/v2/catalog/works/1?view=full&view=basic",
  // malformed lists and tokens
  "/v2/catalog/works?ids=,,,",
  "/v2/catalog/works?ids=1,,2",
  "/v2/catalog/works?refs=:",
  "/v2/catalog/works?refs=vndb:",
  "/v2/catalog/works?facets=,",
  "/v2/catalog/works?include=",
  "/v2/catalog/works?cursor=cur_",
  "/v2/catalog/works?cursor=cur_%E2%9C%93",
  "/v2/catalog/works?sort=%E2%9C%93",
  "/v2/catalog/works?view=FULL",
  "/v2/catalog/works?include_total=yes",
  "/v2/catalog/works?content_rating=r18",
  // "//" is never collapsed (the router would collapse it in query values too): not a path of ours
  "/v2//catalog/works",
  "/v2/catalog//works?limit=5"
]

/** Paths whose input is odd but harmless: an ordinary 2xx answer (or a 4xx problem) is fine. */
const tolerated: ReadonlyArray<string> = [
  // injection-looking queries are just text to search for
  `/v2/catalog/works?q=${encodeURIComponent("'; DROP TABLE works; --")}`,
  `/v2/catalog/search?q=${encodeURIComponent("%' OR 1=1 --")}`,
  `/v2/catalog/search?q=${encodeURIComponent("_%_%\\")}`,
  `/v2/catalog/search?q=${encodeURIComponent(".*[(?<=)]{1,}$^")}`,
  `/v2/catalog/search?q=${encodeURIComponent("\" OR \"\"=\"")}&page=1`,
  `/v2/catalog/search?q=${encodeURIComponent("<script>alert(1)</script>")}&facets=olang,tag_id`,
  `/v2/catalog/search?q=${encodeURIComponent("\u202Eevil\u200B\uFEFF")}`,
  `/v2/catalog/search?q=${encodeURIComponent("😀🎮")}`,
  `/v2/catalog/search?q=${encodeURIComponent("   ")}`,
  `/v2/catalog/search?q=${"の".repeat(256)}`,
  `/v2/catalog/works?refs=${encodeURIComponent("vndb:' OR 1=1 --")}`,
  `/v2/catalog/works?refs=${encodeURIComponent("vndb:a:b:c")}`,
  // invalid percent-encoding
  "/v2/catalog/works?q=%E0%A4%A",
  "/v2/catalog/search?q=%zz",
  "/v2/catalog/search?q=%",
  "/v2/catalog/search?q=%FF%FE",
  "/v2/catalog/works?ids=%FF",
  "/v2/catalog/works/%zz",
  "/v2/catalog/works/%E0%A4%A",
  "/v2/catalog/works/%FF/intros",
  // 20 digits: a valid id that no row can have
  "/v2/catalog/works/99999999999999999999",
  "/v2/catalog/works?ids=99999999999999999999,00000000000000000001",
  "/v2/catalog/works?tag_id=99999999999999999999&include_total=true",
  // numeric spellings the number parser accepts
  "/v2/catalog/works?limit=0x10",
  "/v2/catalog/works?limit=%201e1%20",
  // unknown parameters are ignored
  "/v2/catalog/works?foo=bar",
  "/v2/catalog/works?__proto__=x&constructor=1&toString=2",
  `/v2/catalog/works?${big}=1`,
  "/v2/catalog/works/1?unknown=1"
]

const check = (path: string, mustReject: boolean, headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const c = yield* Catalog
    const res = yield* Effect.promise(() =>
      fetch(`${c.base}${path}`, { headers: { authorization: `Bearer ${c.nsfwKey}`, ...headers } })
    )
    const text = yield* Effect.promise(() => res.text())
    const label = `${path.slice(0, 120)} -> ${res.status} ${text.slice(0, 300)}`
    expect(res.status, label).toBeLessThan(500)
    if (mustReject) expect(res.status, label).toBeGreaterThanOrEqual(400)
    if (res.status >= 400) {
      expect(res.headers.get("content-type"), label).toBe("application/problem+json")
      const body = JSON.parse(text)
      expect(body.status, label).toBe(res.status)
      expect(problemCodeList, label).toContain(body.code)
      expect(body.request_id, label).toMatch(REQUEST_ID)
      expect(res.headers.get("x-request-id"), label).toBe(body.request_id)
      expect(typeof body.instance, label).toBe("string")
      expect(Array.isArray(body.errors), label).toBe(true)
      for (const error of body.errors) expect(Schema.is(FieldError)(error), label).toBe(true)
    } else if (res.status === 200) {
      const body = JSON.parse(text)
      expect(body.object === "list" || body.object === "work", label).toBe(true)
    }
  })

describe("hostile input (docs/api-contract.md, \"Errors: catalog problem documents\")", () => {
  it.layer(SeededCatalogLive({ works: 60, seed: 5 }), { timeout: "300 seconds" })((it) => {
    it.effect("malformed, oversized, NUL-bearing, repeated and out-of-range parameters are 4xx problems", () =>
      Effect.forEach(rejected, (path) => check(path, true), { discard: true }))

    it.effect("injection-looking, badly encoded and unknown input never causes a 5xx", () =>
      Effect.gen(function*() {
        yield* Effect.forEach(tolerated, (path) => check(path, false), { discard: true })
        // Nothing was dropped or altered: the catalog still answers.
        const c = yield* Catalog
        const res = yield* c.get("/v2/catalog/works?limit=5&include_total=true")
        expect(res.status).toBe(200)
        expect(res.body.total).toBeGreaterThan(0)
      }))

    it.effect("hostile headers on the conditional read are harmless", () =>
      Effect.forEach(
        [{ "if-none-match": big }, { "if-none-match": "*" }, { "if-none-match": "\"a\", W/\"b\", ,," }],
        (headers) => check("/v2/catalog/works/1", false, headers),
        { discard: true }
      ))
  })
})
