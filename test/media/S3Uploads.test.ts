/**
 * Editor images kept in an S3-compatible bucket, through real HTTP (docs/writing.md, "Editor images":
 * where the bytes are kept): the catalog started with `SHIORI_MEDIA_STORE=s3` pointed at s3rver
 * (test/support/S3Store.ts) stores an upload as the object `images/<hash>` of the bucket, with its
 * `Content-Type`, and nothing under the data directory; it serves it back byte for byte, immutable.
 * With the store gone, a read and an upload are 503 `SERVICE_UNAVAILABLE` with `Retry-After`, and the
 * upload records nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import sharp from "sharp"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape } from "../support/Claims.js"
import { expectProblemCode, expectStatus, type Reply } from "../support/Proposals.js"
import { S3Store, S3StoreLive } from "../support/S3Store.js"
import { serverLayerOptions } from "../support/TestServers.js"

const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-media-s3-"))

const sha256 = (bytes: Uint8Array) => Crypto.createHash("sha256").update(bytes).digest("hex")

/** `POST /v2/media/images?preset=cover` of a fresh picture (its colour from `seed`) by a new editor. */
const upload = (f: ClaimsFixtureShape, seed: number): Effect.Effect<Reply> =>
  Effect.gen(function*() {
    const key = yield* f.makeKey("site_a", ["catalog:read", "media:write"], yield* f.makeUser([]))
    const png = yield* Effect.promise(() =>
      sharp({ create: { width: 40, height: 30, channels: 3, background: { r: seed, g: 90, b: 200 - seed } } })
        .png()
        .toBuffer()
    )
    return yield* Effect.promise(async () => {
      const res = await fetch(`${f.base}/v2/media/images?preset=cover`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "image/png",
          "idempotency-key": `s3-upload-${seed}`
        },
        body: png
      })
      const text = await res.text()
      return { status: res.status, headers: res.headers, body: text === "" ? null : JSON.parse(text) }
    })
  })

/** `GET` of `path` on the catalog: status, headers and the body's bytes. */
const fetchBytes = (f: ClaimsFixtureShape, path: string) =>
  Effect.promise(async () => {
    const res = await fetch(`${f.base}${path}`)
    return { status: res.status, headers: res.headers, bytes: new Uint8Array(await res.arrayBuffer()) }
  })

const Env = Layer.unwrap(
  Effect.gen(function*() {
    const s3 = yield* S3Store
    return ClaimsFixtureLive({ works: 1, config: { ...s3.settings, SHIORI_DATA_DIR: dataDir } })
  })
).pipe(Layer.provideMerge(S3StoreLive))

describe("editor images in an S3-compatible bucket (docs/writing.md, \"Editor images\")", () => {
  it.layer(Env, serverLayerOptions())((it) => {
    it.effect("an upload is the bucket's object images/<hash>, served back byte for byte", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const s3 = yield* S3Store
        const body = expectStatus(yield* upload(f, 10), 201)
        expect(body).toMatchObject({ object: "edit_image", width: 40, height: 30, is_deduplicated: false })

        const served = yield* fetchBytes(f, `/v2/media/images/${body.hash}`)
        expect(served.status).toBe(200)
        expect(served.headers.get("content-type")).toBe("image/webp")
        expect(served.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
        expect(sha256(served.bytes)).toBe(body.hash)
        expect(served.bytes.length).toBe(body.size_bytes)

        expect(yield* s3.keys()).toEqual([`images/${body.hash}`])
        const object = yield* s3.object(`images/${body.hash}`)
        expect(Option.map(object, (o) => [sha256(o.bytes), o.contentType])).toEqual(
          Option.some([body.hash, "image/webp"])
        )
        expect(Fs.existsSync(Path.join(dataDir, "media"))).toBe(false)
        expect((yield* fetchBytes(f, `/v2/media/images/${"0".repeat(64)}`)).status).toBe(404)
      }))

    it.effect("with the store gone, a read and an upload are 503 with Retry-After, and nothing is recorded", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const s3 = yield* S3Store
        const sql = yield* SqlClient.SqlClient
        const [kept] = yield* s3.keys("images/")
        const hash = kept!.slice("images/".length)
        const uploads = sql<{ n: number }>`SELECT count(*)::int AS n FROM images WHERE source = 'upload'`.pipe(
          Effect.map((rows) => rows[0]!.n),
          Effect.orDie
        )
        const before = yield* uploads
        yield* s3.stop

        const read = yield* fetchBytes(f, `/v2/media/images/${hash}`)
        expect(read.status).toBe(503)
        expect(read.headers.get("content-type")).toBe("application/problem+json")
        expect(read.headers.get("retry-after")).toBe("5")
        expect(JSON.parse(new TextDecoder().decode(read.bytes)).code).toBe("SERVICE_UNAVAILABLE")

        const refused = yield* upload(f, 20)
        expectProblemCode(refused, 503, "SERVICE_UNAVAILABLE")
        expect(refused.headers.get("retry-after")).toBe("5")
        expect(yield* uploads).toBe(before)
      }))
  })
})
