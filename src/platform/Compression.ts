/**
 * Response compression for the catalog (RFC 9110 sections 8.4 and 12.5.3): a JSON answer of at
 * least `MIN_COMPRESSED_BYTES` goes out gzip-encoded to a client whose `Accept-Encoding` allows it,
 * with `Vary: Accept-Encoding` on both representations. A list page of 100 works with includes is
 * 157 KB of JSON and 26 KB compressed, which is what a mirror or a busy site pays
 * for in bandwidth and in time on the wire.
 *
 * The gzip representation has its own strong ETag (the identity tag with `-gzip` before its closing
 * quote), and `If-None-Match` with either tag is a 304: both are the same content.
 *
 * The identity provider does not compress: its answers are small, and a compressed body that holds
 * a secret next to reflected input is what BREACH-style attacks measure.
 *
 * Why not effect's `HttpMiddleware.compression`: it prefers brotli (the answers would change
 * encoding), and a compressed answer keeps the identity representation's ETag, where RFC 9110
 * section 8.8.3 wants a strong tag per representation.
 */
import { Effect } from "effect"
import { HttpBody, HttpEffect, type HttpServerRequest, HttpServerResponse } from "effect/http"
import * as Zlib from "node:zlib"
import { namesTag } from "./EntityTags.js"

/** Smaller bodies fit in a packet or two either way; compressing them costs more than it saves. */
export const MIN_COMPRESSED_BYTES = 1024

/** zlib level 6, its default: about 6x smaller on our list pages. */
const LEVEL = 6

/**
 * Whether an `Accept-Encoding` value (RFC 9110 section 12.5.3) allows gzip: `gzip` or `x-gzip` with
 * a non-zero weight, or `*` with a non-zero weight when gzip is not named.
 */
export const acceptsGzip = (header: string | undefined): boolean => {
  if (header === undefined || header === "") return false
  let star = false
  for (const part of header.split(",")) {
    const [name = "", ...params] = part.split(";")
    const coding = name.trim().toLowerCase()
    let weight = 1
    for (const param of params) {
      const [key, value] = param.split("=")
      if (key?.trim().toLowerCase() === "q") weight = Number(value?.trim())
    }
    const allowed = Number.isFinite(weight) && weight > 0
    if (coding === "gzip" || coding === "x-gzip") return allowed
    if (coding === "*") star = allowed
  }
  return star
}

/** The ETag of the gzip representation of the body tagged `etag`. */
export const gzipEtag = (etag: string): string => etag.endsWith("\"") ? `${etag.slice(0, -1)}-gzip"` : etag

/**
 * Up to this size a body is compressed in place: measured on this machine kind, 32 KB of our JSON
 * takes 0.13 ms, less than the thread pool's hand-off costs in CPU (about 0.04 ms a call) and far
 * less than it adds to a sequential client's round trip. Larger bodies go to the thread pool, so
 * the event loop is never held for long.
 */
export const IN_PLACE_MAX_BYTES = 32 * 1024

/** gzip: in place for small bodies, on the thread pool for larger ones. */
export const gzip = (bytes: Uint8Array): Effect.Effect<Buffer> =>
  bytes.length <= IN_PLACE_MAX_BYTES
    ? Effect.sync(() => Zlib.gzipSync(bytes, { level: LEVEL }))
    : Effect.callback<Buffer>((resume) =>
      Zlib.gzip(bytes, { level: LEVEL }, (error, result) =>
        resume(error === null ? Effect.succeed(result) : Effect.die(error)))
    )

export const VARY = "accept-encoding"

/**
 * The gzip form of each body compressed here, for as long as the body itself is kept: a stored
 * answer (catalog/shared/Replay.ts) is sent as the same bytes every time, so it is compressed once.
 * A body made for one response is collected with its entry.
 */
const compressedBodies = new WeakMap<Uint8Array, Buffer>()

const gzipOnce = (bytes: Uint8Array): Effect.Effect<Buffer> =>
  Effect.suspend(() => {
    const known = compressedBodies.get(bytes)
    if (known !== undefined) return Effect.succeed(known)
    return Effect.map(gzip(bytes), (compressed) => {
      compressedBodies.set(bytes, compressed)
      return compressed
    })
  })

const compressible = (response: HttpServerResponse.HttpServerResponse) =>
  response.status === 200 && response.body._tag === "Uint8Array" &&
  response.body.contentLength >= MIN_COMPRESSED_BYTES && response.headers["content-encoding"] === undefined

/**
 * Compresses what the stack answers: a 200 with a body of at least `MIN_COMPRESSED_BYTES` gets
 * `Vary: Accept-Encoding`, and is gzip-encoded when the client accepts it. A 304 for a gzip client
 * that sent the gzip representation's tag names that tag (RFC 9110 section 15.4.5).
 */
export const withCompression = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  HttpEffect.withPreResponseHandler(app, (request, response) => {
    if (response.status === 304 && response.headers.etag !== undefined) {
      // The tag may already be the gzip representation's (Conditional.ts names it so).
      const tag = response.headers.etag.endsWith("-gzip\"") ? response.headers.etag : gzipEtag(response.headers.etag)
      const named = acceptsGzip(request.headers["accept-encoding"]) &&
        namesTag(request.headers["if-none-match"], tag)
      return Effect.succeed(
        HttpServerResponse.setHeaders(response, { vary: VARY, ...(named ? { etag: tag } : {}) })
      )
    }
    if (!compressible(response) || request.method === "HEAD") return Effect.succeed(response)
    const body = response.body as HttpBody.Uint8Array
    const varied = HttpServerResponse.setHeader(response, "vary", VARY)
    if (!acceptsGzip(request.headers["accept-encoding"])) return Effect.succeed(varied)
    const etag = response.headers.etag
    return Effect.map(gzipOnce(body.body), (compressed) =>
      HttpServerResponse.setHeaders(
        HttpServerResponse.setBody(varied, HttpBody.uint8Array(compressed, body.contentType)),
        { "content-encoding": "gzip", ...(etag === undefined ? {} : { etag: gzipEtag(etag) }) }
      ))
  })
