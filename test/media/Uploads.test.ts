/**
 * Editor image uploads through real HTTP (docs/writing.md, "Editor images"; "Who may write" and "The
 * write runner" for the rules every write shares): each accepted format is stored re-encoded and
 * served byte for byte under the SHA-256 of the stored bytes; an EXIF-rotated photo comes back upright
 * and without its metadata; a decompression bomb, a body over 20 MiB (streamed), bytes that are no
 * image, a truncated image and bytes of another type than declared are refused, storing nothing; a
 * polyglot keeps none of its trailing payload; the same bytes, uploaded again or many times at once,
 * are stored once (a hundred at once too); a body past 20 MiB is refused without the built server's
 * resident memory growing by it; an uploaded cover is a `catalog.work.cover` a proposal may name (docs/writing.md,
 * "Field keys"), an uploaded screenshot is not.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import * as Http from "node:http"
import * as Os from "node:os"
import * as Path from "node:path"
import sharp from "sharp"
import type { Scope } from "../../schema/Annotations.js"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { startBuiltCatalog } from "../support/BuiltServer.js"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape } from "../support/Claims.js"
import { fetchBytes, picture, sha256, upload } from "../support/Media.js"
import {
  expectProblemCode,
  expectStatus,
  proposalKeys,
  propose,
  proposeAndMerge,
  type Reply
} from "../support/Proposals.js"
import { serverLayerOptions } from "../support/TestServers.js"

const scopes: ReadonlyArray<Scope> = ["catalog:read", "media:write"]
const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-media-"))

/** A fresh user of `site_a` and a key for them. */
const editor = (f: ClaimsFixtureShape) =>
  Effect.gen(function*() {
    const id = yield* f.makeUser([])
    return yield* f.makeKey("site_a", scopes, id)
  })

/** The resident memory of process `pid` in bytes (`VmRSS` of /proc/<pid>/status, Linux). */
const residentBytes = (pid: number) => {
  const line = Fs.readFileSync(`/proc/${pid}/status`, "utf8").split("\n").find((l) => l.startsWith("VmRSS:"))
  return Number(/(\d+)/u.exec(line ?? "")?.[1] ?? Number.NaN) * 1024
}

const imagesRows = (hash: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    return yield* sql<{ source: string; preset: string | null; size_bytes: string; width: number; height: number }>`
      SELECT source, preset, size_bytes::text AS size_bytes, width, height FROM images WHERE hash = ${hash}`.pipe(
      Effect.orDie
    )
  })

/** The stored bytes of an answer's `url` (absolute under the catalog's public URL), read from the test server. */
const fetchServed = (f: ClaimsFixtureShape, url: string) => fetchBytes(`${f.base}${new URL(url).pathname}`)

/** The CRC-32 of PNG chunks (RFC 2083 section 3.4). */
const crc32 = (bytes: Uint8Array) => {
  let crc = 0xffffffff
  for (const byte of bytes) {
    crc ^= byte
    for (let k = 0; k < 8; k++) crc = (crc >>> 1) ^ (0xedb88320 & -(crc & 1))
  }
  return (crc ^ 0xffffffff) >>> 0
}

/** A small PNG whose header claims `side` x `side` pixels: a decompression bomb's shape. */
const claimedSize = (png: Uint8Array, side: number) => {
  const out = Buffer.from(png)
  // Signature (8), IHDR length (4), "IHDR" (4), width (4), height (4), ...; the CRC covers type and data.
  out.writeUInt32BE(side, 16)
  out.writeUInt32BE(side, 20)
  out.writeUInt32BE(crc32(out.subarray(12, 29)), 29)
  return new Uint8Array(out)
}

/**
 * Streams `total` bytes of a PNG-looking body without declaring its length; the answer's status and
 * how much of the body had been sent when it came.
 */
const streamUpload = (base: string, key: string, total: number) =>
  Effect.promise(() =>
    new Promise<{ readonly status: number; readonly sent: number }>((resolve, reject) => {
      const url = new URL(`${base}/v2/media/images?preset=cover`)
      const request = Http.request({
        host: url.hostname,
        port: url.port,
        path: `${url.pathname}${url.search}`,
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "image/png" }
      })
      const chunk = Buffer.alloc(256 * 1024, 0x41)
      let sent = 0
      let answered = false
      request.on("response", (res) => {
        answered = true
        res.resume()
        resolve({ status: res.statusCode ?? 0, sent })
      })
      request.on("error", (error) => {
        if (!answered) reject(error)
      })
      const pump = () => {
        while (sent < total && !answered) {
          sent += chunk.length
          if (!request.write(chunk)) return void request.once("drain", pump)
        }
        if (!answered) request.end()
      }
      pump()
    })
  )

const expectFormatRefused = (res: Reply) => {
  const body = expectProblemCode(res, 422, "VALIDATION_FAILED")
  expect(body.errors).toEqual([{ reason: "INVALID_FORMAT", detail: expect.any(String), header: "Content-Type" }])
}

const Env = ClaimsFixtureLive({ works: 20, config: { SHIORI_DATA_DIR: dataDir } })

describe("editor image uploads (docs/writing.md, \"Editor images\")", () => {
  it.layer(Env, serverLayerOptions("240 seconds"))((it) => {
    it.effect("PNG, JPEG, WebP and AVIF are stored as WebP and served byte for byte under their hash", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const key = yield* editor(f)
        const formats = [["png", "image/png"], ["jpeg", "image/jpeg"], ["webp", "image/webp"], [
          "avif",
          "image/avif"
        ]] as const
        for (const [i, [format, contentType]] of formats.entries()) {
          const bytes = yield* picture(10 + i * 40, format)
          const body = expectStatus(
            yield* upload(f, key, bytes, contentType, i % 2 === 0 ? "cover" : "screenshot"),
            201
          )
          expect(body).toMatchObject({
            object: "edit_image",
            preset: i % 2 === 0 ? "cover" : "screenshot",
            width: 64,
            height: 48,
            sexual: null,
            violence: null,
            is_deduplicated: false
          })
          expect(body.thumbhash).toMatch(/^[A-Za-z0-9+/=]+$/u)
          expect(body.url).toMatch(new RegExp(`^https?://[^/]+/v2/media/images/${body.hash}$`, "u"))
          const served = yield* fetchServed(f, body.url)
          expect(served.status).toBe(200)
          expect(served.headers.get("content-type")).toBe("image/webp")
          expect(served.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
          expect(sha256(served.bytes)).toBe(body.hash)
          expect(served.bytes.length).toBe(body.size_bytes)
          expect((yield* Effect.promise(() => sharp(served.bytes).metadata())).format).toBe("webp")
          expect(yield* imagesRows(body.hash)).toEqual([{
            source: "upload",
            preset: body.preset,
            size_bytes: String(body.size_bytes),
            width: 64,
            height: 48
          }])
        }
        // An unknown hash is 404.
        expect((yield* fetchBytes(`${f.base}/v2/media/images/${"0".repeat(64)}`)).status).toBe(404)
      }))

    it.effect("an EXIF-rotated JPEG comes back upright, without EXIF or GPS", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const key = yield* editor(f)
        // 80x40 as stored, orientation 6 (rotate 90 degrees clockwise to view): upright it is 40x80.
        const bytes = yield* Effect.promise(() =>
          sharp({ create: { width: 80, height: 40, channels: 3, background: { r: 200, g: 10, b: 90 } } })
            .withMetadata({ orientation: 6 })
            .withExifMerge({ IFD3: { GPSLatitudeRef: "N", GPSLatitude: "35/1 39/1 0/1" } })
            .jpeg()
            .toBuffer()
        )
        const sent = yield* Effect.promise(() => sharp(bytes).metadata())
        expect(sent.orientation).toBe(6)
        expect(sent.exif).toBeDefined()
        const body = expectStatus(yield* upload(f, key, bytes, "image/jpeg"), 201)
        expect([body.width, body.height]).toEqual([40, 80])
        const stored = yield* fetchServed(f, body.url)
        const meta = yield* Effect.promise(() => sharp(stored.bytes).metadata())
        expect([meta.width, meta.height]).toEqual([40, 80])
        expect(meta.exif).toBeUndefined()
        expect(meta.orientation).toBeUndefined()
      }))

    it.effect("a decompression bomb, bytes that are no image and a truncated image are refused, storing nothing", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const key = yield* editor(f)
        const sql = yield* SqlClient.SqlClient
        const count = sql<{ n: number }>`SELECT count(*)::int AS n FROM images WHERE source = 'upload'`.pipe(
          Effect.map((rows) => rows[0]!.n),
          Effect.orDie
        )
        const before = yield* count
        const small = yield* picture(3, "png", 1, 1)
        const bomb = claimedSize(small, 30000)
        expect((yield* Effect.promise(() => sharp(bomb, { limitInputPixels: false }).metadata())).width).toBe(30000)
        expectFormatRefused(yield* upload(f, key, bomb, "image/png"))
        expectFormatRefused(yield* upload(f, key, new TextEncoder().encode("<html>not an image</html>"), "image/png"))
        const whole = yield* picture(4, "png", 300, 300)
        expectFormatRefused(yield* upload(f, key, whole.subarray(0, Math.floor(whole.length / 2)), "image/png"))
        expect(yield* count).toBe(before)
      }))

    it.effect("bytes of another type than declared, and an undeclared type, are 422", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const key = yield* editor(f)
        expectFormatRefused(yield* upload(f, key, yield* picture(5, "png"), "image/jpeg"))
        const other = expectProblemCode(
          yield* upload(f, key, yield* picture(6, "png"), "text/plain"),
          422,
          "VALIDATION_FAILED"
        )
        expect(other.errors).toEqual([{
          reason: "UNKNOWN_VALUE",
          detail: expect.any(String),
          header: "Content-Type",
          params: { allowed: ["image/jpeg", "image/png", "image/webp", "image/avif", "image/gif"] }
        }])
      }))

    it.effect("a body over 20 MiB, streamed without a declared length, is 413 while it is read", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const key = yield* editor(f)
        expect((yield* streamUpload(f.base, key, 21 * 1024 * 1024)).status).toBe(413)
      }))

    it.effect("a polyglot keeps none of its trailing payload", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const key = yield* editor(f)
        const jpeg = yield* picture(7, "jpeg")
        const payload = Buffer.from("PK\u0003\u0004<html><script>alert(1)</script></html>")
        const body = expectStatus(yield* upload(f, key, Buffer.concat([jpeg, payload]), "image/jpeg"), 201)
        const stored = Buffer.from((yield* fetchServed(f, body.url)).bytes)
        expect(stored.includes("<script>")).toBe(false)
        expect(stored.includes("PK\u0003\u0004")).toBe(false)
        // A RIFF file (WebP) says its own length: nothing follows it.
        expect(stored.subarray(0, 4).toString("latin1")).toBe("RIFF")
        expect(stored.readUInt32LE(4) + 8).toBe(stored.length)
      }))

    it.effect("the same bytes again are deduplicated, and a hundred identical uploads at once store them once", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const key = yield* editor(f)
        const bytes = yield* picture(8, "png")
        const first = expectStatus(yield* upload(f, key, bytes, "image/png"), 201)
        const again = yield* upload(f, key, bytes, "image/png")
        expect(expectStatus(again, 200)).toEqual({ ...first, is_deduplicated: true })
        expect(yield* imagesRows(first.hash)).toHaveLength(1)

        const other = yield* picture(9, "png")
        const replies = yield* Effect.all(
          Array.from({ length: 100 }, () => upload(f, key, other, "image/png")),
          { concurrency: "unbounded" }
        )
        const statuses = replies.map((r) => r.status)
        expect(statuses.filter((s) => s === 201)).toHaveLength(1)
        expect(statuses.filter((s) => s === 200)).toHaveLength(99)
        expect(replies.filter((r) => r.body.is_deduplicated === true)).toHaveLength(99)
        const hashes = new Set(replies.map((r) => r.body.hash))
        expect(hashes.size).toBe(1)
        const [hash] = [...hashes]
        expect(yield* imagesRows(hash!)).toHaveLength(1)
        const files = Fs.readdirSync(Path.join(dataDir, "media", hash!.slice(0, 2))).filter((n) => n.startsWith(hash!))
        expect(files).toEqual([`${hash}.webp`])
      }))

    it.effect("a body past 20 MiB is refused while it streams: the built server's resident memory does not grow by the body", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const key = yield* editor(f)
        const databaseUrl = Redacted.value(yield* DatabaseUrl)
        const server = yield* startBuiltCatalog(databaseUrl, {
          SHIORI_DATA_DIR: Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-media-rss-"))
        })
        const rss = () => residentBytes(server.child.pid!)
        // Warm the paths first (an accepted upload, a refused one), so what is measured is the body.
        expect((yield* upload({ ...f, base: server.base }, key, yield* picture(31, "jpeg"), "image/jpeg")).status)
          .toBe(201)
        expect((yield* streamUpload(server.base, key, 21 * 1024 * 1024)).status).toBe(413)
        // A server that buffered whole bodies would hold 200 MiB more; reading in chunks and stopping at
        // the 20 MiB limit holds at most that limit (already reached while warming), so RSS stays put.
        const before = rss()
        const large = yield* streamUpload(server.base, key, 200 * 1024 * 1024)
        const after = rss()
        expect(large.status).toBe(413)
        expect(after - before, `RSS ${before} -> ${after} bytes`).toBeLessThan(48 * 1024 * 1024)
        // The refusal came while the body was still being sent: far from all of it was read.
        expect(large.sent).toBeLessThan(100 * 1024 * 1024)
      }).pipe(Effect.scoped))

    it.effect("a proposal naming an uploaded cover merges, and the work shows it first; a screenshot is no cover", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const key = yield* editor(f)
        const keys = yield* proposalKeys(f)
        const cover = expectStatus(yield* upload(f, key, yield* picture(11, "jpeg", 60, 90), "image/jpeg"), 201)
        const shot = expectStatus(
          yield* upload(f, key, yield* picture(12, "png", 90, 60), "image/png", "screenshot"),
          201
        )
        const work = f.works[f.works.length - 1]!
        const refused = yield* propose(f, keys.site, {
          entity_type: "catalog.work",
          entity_id: work,
          patch: { "catalog.work.cover": shot.hash }
        })
        const problem = expectProblemCode(refused, 422, "VALIDATION_FAILED")
        expect(problem.errors).toMatchObject([{ reason: "UNKNOWN_REFERENCE", pointer: "/patch/catalog.work.cover" }])
        yield* proposeAndMerge(f, keys, { type: "catalog.work", id: work }, { "catalog.work.cover": cover.hash })
        const read = expectStatus(
          yield* f.call("GET", `/v2/catalog/works/${work}?include=covers`, { key: keys.site }),
          200
        )
        expect(read.covers[0]).toMatchObject({ hash: cover.hash, url: cover.url, width: 60, height: 90 })
      }))
  })
})
