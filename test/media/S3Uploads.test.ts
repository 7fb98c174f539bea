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
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape } from "../support/Claims.js"
import { fetchBytes, picture, sha256, upload } from "../support/Media.js"
import { expectProblemCode, expectStatus } from "../support/Proposals.js"
import { S3Store, S3StoreLive } from "../support/S3Store.js"
import { serverLayerOptions } from "../support/TestServers.js"

const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-media-s3-"))

/** A cover upload of a fresh PNG picture (`seed`) by a new editor. */
const uploadPicture = (f: ClaimsFixtureShape, seed: number) =>
  Effect.gen(function*() {
    const key = yield* f.makeKey("site_a", ["catalog:read", "media:write"], yield* f.makeUser([]))
    return yield* upload(f, key, yield* picture(seed, "png", 40, 30), "image/png")
  })

/** `GET /v2/media/images/{hash}` on the catalog. */
const served = (f: ClaimsFixtureShape, hash: string) => fetchBytes(`${f.base}/v2/media/images/${hash}`)

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
        const body = expectStatus(yield* uploadPicture(f, 10), 201)
        expect(body).toMatchObject({ object: "edit_image", width: 40, height: 30, is_deduplicated: false })

        const image = yield* served(f, body.hash)
        expect(image.status).toBe(200)
        expect(image.headers.get("content-type")).toBe("image/webp")
        expect(image.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
        expect(sha256(image.bytes)).toBe(body.hash)
        expect(image.bytes.length).toBe(body.size_bytes)

        expect(yield* s3.keys()).toEqual([`images/${body.hash}`])
        const object = yield* s3.object(`images/${body.hash}`)
        expect(Option.map(object, (o) => [sha256(o.bytes), o.contentType])).toEqual(
          Option.some([body.hash, "image/webp"])
        )
        expect(Fs.existsSync(Path.join(dataDir, "media"))).toBe(false)
        expect((yield* served(f, "0".repeat(64))).status).toBe(404)
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

        const read = yield* served(f, hash)
        expect(read.status).toBe(503)
        expect(read.headers.get("content-type")).toBe("application/problem+json")
        expect(read.headers.get("retry-after")).toBe("5")
        expect(JSON.parse(new TextDecoder().decode(read.bytes)).code).toBe("SERVICE_UNAVAILABLE")

        const refused = yield* uploadPicture(f, 20)
        expectProblemCode(refused, 503, "SERVICE_UNAVAILABLE")
        expect(refused.headers.get("retry-after")).toBe("5")
        expect(yield* uploads).toBe(before)
      }))
  })
})
