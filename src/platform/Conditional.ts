/**
 * Conditional reads (docs/api-contract.md, "Caching, ETags and freshness"): single-record GETs send
 * a strong `ETag` (a digest of the encoded body) and answer `304 Not Modified` when `If-None-Match`
 * names it (RFC 9110 13.1.2).
 */
import { Effect, Schema } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import * as Crypto from "node:crypto"
import { acceptsGzip, gzipEtag, MIN_COMPRESSED_BYTES } from "./Compression.js"
import { ifNoneMatchMatches } from "./EntityTags.js"

export const etagOf = (json: string): string =>
  `"${Crypto.createHash("sha256").update(json).digest("base64url").slice(0, 27)}"`

/**
 * True when an `If-None-Match` value (a list, or `*`) matches `etag` or the tag of its gzip
 * representation (Compression.ts), by weak comparison (RFC 9110 section 13.1.2; parsed by
 * EntityTags.ts).
 */
export const noneMatch = (header: string | undefined, etag: string): boolean =>
  ifNoneMatchMatches(header, [etag, gzipEtag(etag)])

/** A body encoded once with its strong ETag (cacheable as it is). */
export interface Tagged {
  readonly json: string
  readonly etag: string
}

/** Encodes `value` with `schema`, and its ETag. */
export const tagged = <A, I>(schema: Schema.Codec<A, I>, value: A): Effect.Effect<Tagged> =>
  Effect.map(Schema.encodeEffect(schema)(value).pipe(Effect.orDie), (encoded) => {
    const json = JSON.stringify(encoded)
    return { json, etag: etagOf(json) }
  })

/**
 * 200 with the ETag, or 304 when the client's copy (`If-None-Match`) is current. `bytes`: the body
 * already encoded as UTF-8, when the caller has it (it is sent as it is, not encoded again).
 *
 * A 304 names the tag the 200 would have carried (RFC 9110 section 15.4.5): the gzip
 * representation's for a client that accepts gzip when the body is large enough to be compressed
 * (Compression.ts), whichever of the two tags (or `*`) the client sent.
 */
export const conditional = (body: Tagged, bytes?: Uint8Array) =>
  Effect.map(HttpServerRequest.HttpServerRequest, (request) => {
    if (noneMatch(request.headers["if-none-match"], body.etag)) {
      const size = bytes === undefined ? Buffer.byteLength(body.json) : bytes.length
      const compressed = size >= MIN_COMPRESSED_BYTES && acceptsGzip(request.headers["accept-encoding"])
      return HttpServerResponse.empty({
        status: 304,
        headers: { etag: compressed ? gzipEtag(body.etag) : body.etag }
      })
    }
    const options = { contentType: "application/json", headers: { etag: body.etag } }
    return bytes === undefined
      ? HttpServerResponse.text(body.json, options)
      : HttpServerResponse.uint8Array(bytes, options)
  })

/**
 * Encodes `value` with `schema` and answers 200 with an ETag, or 304 when the client's copy is
 * current. Handlers return this instead of the bare value.
 */
export const conditionalJson = <A, I>(schema: Schema.Codec<A, I>, value: A) =>
  Effect.flatMap(tagged(schema, value), conditional)
