/**
 * Response compression of the catalog (src/platform/Compression.ts; RFC 9110 sections 8.4, 12.5.3
 * and 15.4.5; docs/api-contract.md, "Caching, ETags and freshness"): large JSON answers are
 * gzip-encoded for clients that accept it, computed or replayed from a stored answer alike,
 * with `Vary: Accept-Encoding` and an ETag of their own; small answers and clients that do not
 * accept gzip get the identity body.
 *
 * Requests go through `node:http` rather than fetch, which would negotiate and decode for us.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import * as Zlib from "node:zlib"
import { acceptsGzip, gzipEtag, IN_PLACE_MAX_BYTES } from "../../src/platform/Compression.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
import { serverLayerOptions } from "../support/TestServers.js"

interface RawResponse {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  /** The bytes as they came over the wire. */
  readonly wire: Buffer
  /** The body after undoing `Content-Encoding`. */
  readonly text: string
}

const get = (url: string, headers: Record<string, string>) =>
  Effect.promise(() =>
    new Promise<RawResponse>((resolve, reject) => {
      Http.get(url, { headers }, (res) => {
        const chunks: Array<Buffer> = []
        res.on("data", (chunk: Buffer) => chunks.push(chunk))
        res.on("end", () => {
          const wire = Buffer.concat(chunks)
          const encoding = res.headers["content-encoding"]
          const text = (encoding === "gzip" ? Zlib.gunzipSync(wire) : wire).toString("utf8")
          resolve({ status: res.statusCode!, headers: res.headers, wire, text })
        })
      }).on("error", reject)
    })
  )

describe("compression (RFC 9110 12.5.3): Accept-Encoding", () => {
  it("gzip is chosen when named with a non-zero weight, or allowed by * and not refused by name", () => {
    for (const header of ["gzip", "GZIP", "x-gzip", "br, gzip;q=0.5", "gzip, deflate, br", "*", "deflate, *;q=0.1"]) {
      expect(acceptsGzip(header), header).toBe(true)
    }
    for (
      const header of [undefined, "", "identity", "br", "deflate", "gzip;q=0", "gzip;q=0.000", "*;q=0", "gzip;q=0, *"]
    ) {
      expect(acceptsGzip(header), String(header)).toBe(false)
    }
  })

  it("the gzip representation's strong ETag is the identity tag marked -gzip (docs/api-contract.md, \"Caching, ETags and freshness\")", () => {
    expect(gzipEtag("\"abc\"")).toBe("\"abc-gzip\"")
    expect(gzipEtag("W/\"abc\"")).toBe("W/\"abc-gzip\"")
  })
})

describe("compressed catalog answers (RFC 9110 8.4, 12.5.3)", () => {
  it.layer(SeededCatalogLive({ works: 120, seed: 23 }), serverLayerOptions("180 seconds"))((it) => {
    it.effect("a large list page: gzip for a gzip client, computed or replayed from its stored answer, identity otherwise", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const url = `${catalog.base}/v2/catalog/works?limit=50&include=titles,covers,companies`
        const auth = { authorization: `Bearer ${catalog.nsfwKey}` }
        const plain = yield* get(url, auth)
        expect(plain.status).toBe(200)
        expect(plain.headers["content-encoding"]).toBeUndefined()
        expect(plain.headers.vary).toBe("accept-encoding")
        // Compressed on the thread pool (larger than what is compressed in place).
        expect(plain.wire.length).toBeGreaterThan(IN_PLACE_MAX_BYTES)
        // The plain request stored the answer: the gzip ones replay it, compressed by the stack (once).
        for (let i = 0; i < 3; i++) {
          const zipped = yield* get(url, { ...auth, "accept-encoding": "gzip, deflate, br" })
          expect(zipped.status).toBe(200)
          expect(zipped.headers["content-encoding"]).toBe("gzip")
          expect(zipped.headers.vary).toBe("accept-encoding")
          expect(zipped.headers["content-type"]).toBe("application/json")
          expect(Number(zipped.headers["content-length"])).toBe(zipped.wire.length)
          expect(zipped.wire.length).toBeLessThan(plain.wire.length / 3)
          expect(zipped.text).toBe(plain.text)
        }
        const refused = yield* get(url, { ...auth, "accept-encoding": "gzip;q=0" })
        expect(refused.headers["content-encoding"]).toBeUndefined()
        expect(refused.text).toBe(plain.text)
      }))

    it.effect("answers the stack encodes from a schema (the change feed) are compressed too", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const url = `${catalog.base}/v2/catalog/changes?limit=100`
        const auth = { authorization: `Bearer ${catalog.nsfwKey}` }
        const plain = yield* get(url, auth)
        const zipped = yield* get(url, { ...auth, "accept-encoding": "gzip" })
        expect(plain.status).toBe(200)
        // Compressed in place (small enough not to go to the thread pool).
        expect(plain.wire.length).toBeGreaterThan(1024)
        expect(plain.wire.length).toBeLessThanOrEqual(IN_PLACE_MAX_BYTES)
        expect(zipped.headers["content-encoding"]).toBe("gzip")
        expect(zipped.headers.vary).toBe("accept-encoding")
        expect(Number(zipped.headers["content-length"])).toBe(zipped.wire.length)
        expect(zipped.text).toBe(plain.text)
      }))

    it.effect("a work's ETag differs per representation and either one makes a 304 (RFC 9110 13.1.2, 15.4.5)", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const url = `${catalog.base}/v2/catalog/works/5?include=titles,covers,companies,tags,credits,ratings`
        const auth = { authorization: `Bearer ${catalog.nsfwKey}` }
        const plain = yield* get(url, auth)
        expect(plain.wire.length).toBeGreaterThan(1024)
        const etag = plain.headers.etag!
        expect(etag).toMatch(/^"[A-Za-z0-9_-]+"$/)
        for (let i = 0; i < 2; i++) {
          const zipped = yield* get(url, { ...auth, "accept-encoding": "gzip" })
          expect(zipped.headers.etag).toBe(gzipEtag(etag))
          expect(zipped.text).toBe(plain.text)
        }
        // The 304 names the tag of the representation a 200 would have carried.
        for (const header of [etag, gzipEtag(etag), `W/${gzipEtag(etag)}`]) {
          const notModified = yield* get(url, { ...auth, "accept-encoding": "gzip", "if-none-match": header })
          expect(notModified.status).toBe(304)
          expect(notModified.wire.length).toBe(0)
          expect(notModified.headers.etag).toBe(gzipEtag(etag))
          expect(notModified.headers.vary).toBe("accept-encoding")
        }
        const identity304 = yield* get(url, { ...auth, "if-none-match": gzipEtag(etag) })
        expect(identity304.status).toBe(304)
        expect(identity304.headers.etag).toBe(etag)
      }))

    it.effect("a record read the middleware compresses (a character) has the same two ETags and 304s (docs/api-contract.md, \"Caching, ETags and freshness\")", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const auth = { authorization: `Bearer ${catalog.nsfwKey}` }
        const query = "view=full&include=aliases,intros,refs,traits,image,figure"
        let url: string | undefined
        let plain: RawResponse | undefined
        for (let id = 1; id <= 40 && url === undefined; id++) {
          const candidate = `${catalog.base}/v2/catalog/characters/${id}?${query}`
          const res = yield* get(candidate, auth)
          if (res.status === 200 && res.wire.length >= 1024) [url, plain] = [candidate, res]
        }
        expect(url, "a character answer of at least 1 KB").toBeDefined()
        const etag = plain!.headers.etag!
        expect(plain!.headers.vary).toBe("accept-encoding")
        const zipped = yield* get(url!, { ...auth, "accept-encoding": "gzip" })
        expect(zipped.headers["content-encoding"]).toBe("gzip")
        expect(zipped.headers.etag).toBe(gzipEtag(etag))
        expect(zipped.text).toBe(plain!.text)
        const gzip304 = yield* get(url!, { ...auth, "accept-encoding": "gzip", "if-none-match": gzipEtag(etag) })
        expect(gzip304.status).toBe(304)
        expect(gzip304.headers.etag).toBe(gzipEtag(etag))
        const identity304 = yield* get(url!, { ...auth, "if-none-match": gzipEtag(etag) })
        expect(identity304.status).toBe(304)
        expect(identity304.headers.etag).toBe(etag)
      }))

    it.effect("small answers and problem documents are never compressed", () =>
      Effect.gen(function*() {
        const catalog = yield* Catalog
        const headers = { authorization: `Bearer ${catalog.nsfwKey}`, "accept-encoding": "gzip" }
        for (const path of ["/healthz", "/v2/catalog/works?limit=1", "/v2/catalog/works?limit=-1"]) {
          const res = yield* get(`${catalog.base}${path}`, headers)
          expect(res.wire.length, path).toBeLessThan(1024)
          expect(res.headers["content-encoding"], path).toBeUndefined()
        }
      }))
  })
})
