/**
 * The media store's contract (docs/writing.md, "Editor images": where the bytes are kept), checked
 * against both of its layers (src/platform/MediaStore.ts): files in a temporary directory, and an
 * S3-compatible bucket (s3rver, test/support/S3Store.ts). Bytes come back byte for byte with their
 * content type; the same bytes again are deduplicated; the areas are separate namespaces; a removed
 * or never stored hash, or a name that is no hash, is none; many puts of the same bytes at once leave
 * one copy of them. Then what is the S3 layer's own: a store that refuses a request is
 * `MediaStoreUnavailable`, not "none"; and `SHIORI_MEDIA_STORE` with its settings picks the layer,
 * refusing to start on settings that are missing or half given.
 */
import { describe, expect, it } from "@effect/vitest"
import { Cause, ConfigProvider, Context, Effect, Exit, Layer, Option } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import {
  isMediaStoreUnavailable,
  type MediaArea,
  MediaStore,
  type StoredContentType,
  storedExtensions
} from "../../src/platform/MediaStore.js"
import { sha256 } from "../support/Media.js"
import { S3Store, S3StoreLive } from "../support/S3Store.js"

/** New bytes (no image: the store keeps whatever it is given) and their hash. */
const sample = (size = 2048) => {
  const bytes = new Uint8Array(Crypto.randomBytes(size))
  return { bytes, hash: sha256(bytes) }
}

/** Where a layer keeps a hash, looked at from outside the store. */
class Kept extends Context.Service<Kept, {
  /** The names under which `hash` of `area` is kept. */
  readonly names: (area: MediaArea, hash: string) => Effect.Effect<ReadonlyArray<string>>
  /** The one name bytes of `contentType` under `hash` in `area` should have. */
  readonly nameOf: (area: MediaArea, hash: string, contentType: StoredContentType) => string
}>()("test/Kept") {}

const filesRoot = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-media-store-"))

const FilesStore = Layer.merge(
  MediaStore.files(filesRoot),
  Layer.succeed(Kept, {
    names: (area, hash) =>
      Effect.sync(() => {
        const directory = area === "images"
          ? Path.join(filesRoot, hash.slice(0, 2))
          : Path.join(filesRoot, area, hash.slice(0, 2))
        return Fs.existsSync(directory) ? Fs.readdirSync(directory).filter((n) => n.startsWith(hash)).sort() : []
      }),
    nameOf: (_area, hash, contentType) => `${hash}.${storedExtensions[contentType]}`
  })
)

/** The bucket with a prefix, so that the keys show it: `<prefix><area>/<hash>`. */
const prefix = "shiori/"

const BucketStore = Layer.unwrap(
  Effect.gen(function*() {
    const s3 = yield* S3Store
    return Layer.merge(
      MediaStore.s3(s3.options(prefix)),
      Layer.succeed(Kept, {
        names: (area, hash) => s3.keys(`${prefix}${area}/${hash}`),
        nameOf: (area, hash) => `${prefix}${area}/${hash}`
      })
    )
  })
).pipe(Layer.provide(S3StoreLive))

const contract = (name: string, layer: Layer.Layer<MediaStore | Kept>) =>
  describe(name, () => {
    it.layer(layer, { timeout: "60 seconds", excludeTestServices: true })((it) => {
      it.effect("bytes come back byte for byte with their content type", () =>
        Effect.gen(function*() {
          const store = yield* MediaStore
          const kept = yield* Kept
          const webp = sample()
          const png = sample(70_000)
          expect(yield* store.put("images", webp.hash, webp.bytes, "image/webp")).toEqual({ deduplicated: false })
          expect(yield* store.put("images", png.hash, png.bytes, "image/png")).toEqual({ deduplicated: false })
          expect(yield* store.get("images", webp.hash)).toEqual(
            Option.some({ bytes: webp.bytes, contentType: "image/webp" })
          )
          expect(yield* store.get("images", png.hash)).toEqual(
            Option.some({ bytes: png.bytes, contentType: "image/png" })
          )
          expect(yield* kept.names("images", png.hash)).toEqual([kept.nameOf("images", png.hash, "image/png")])
        }))

      it.effect("the same bytes again are deduplicated", () =>
        Effect.gen(function*() {
          const store = yield* MediaStore
          const { bytes, hash } = sample()
          expect(yield* store.put("images", hash, bytes, "image/webp")).toEqual({ deduplicated: false })
          expect(yield* store.put("images", hash, bytes, "image/webp")).toEqual({ deduplicated: true })
          expect(yield* store.get("images", hash)).toEqual(Option.some({ bytes, contentType: "image/webp" }))
        }))

      it.effect("images and avatars are separate namespaces", () =>
        Effect.gen(function*() {
          const store = yield* MediaStore
          const kept = yield* Kept
          const { bytes, hash } = sample()
          expect(yield* store.put("images", hash, bytes, "image/webp")).toEqual({ deduplicated: false })
          expect(yield* store.get("avatars", hash)).toEqual(Option.none())
          // The same hash in the other area is a new object, not a duplicate of the first.
          expect(yield* store.put("avatars", hash, bytes, "image/png")).toEqual({ deduplicated: false })
          expect(yield* store.get("avatars", hash)).toEqual(Option.some({ bytes, contentType: "image/png" }))
          expect(yield* kept.names("avatars", hash)).toEqual([kept.nameOf("avatars", hash, "image/png")])

          yield* store.remove("images", hash)
          expect(yield* store.get("images", hash)).toEqual(Option.none())
          expect(yield* store.get("avatars", hash)).toEqual(Option.some({ bytes, contentType: "image/png" }))
          yield* store.remove("avatars", hash)
          expect(yield* store.get("avatars", hash)).toEqual(Option.none())
        }))

      it.effect("removed bytes are gone; removing what is not kept does nothing", () =>
        Effect.gen(function*() {
          const store = yield* MediaStore
          const kept = yield* Kept
          const { bytes, hash } = sample()
          yield* store.put("images", hash, bytes, "image/webp")
          yield* store.remove("images", hash)
          expect(yield* store.get("images", hash)).toEqual(Option.none())
          expect(yield* kept.names("images", hash)).toEqual([])
          yield* store.remove("images", hash)
          yield* store.remove("images", "not-a-hash")
          // Gone means gone: the same bytes are new again.
          expect(yield* store.put("images", hash, bytes, "image/webp")).toEqual({ deduplicated: false })
        }))

      it.effect("a hash never stored, and a name that is no hash, are none", () =>
        Effect.gen(function*() {
          const store = yield* MediaStore
          const { bytes, hash } = sample()
          expect(yield* store.get("images", hash)).toEqual(Option.none())
          yield* store.put("images", hash, bytes, "image/webp")
          for (const name of [hash.toUpperCase(), hash.slice(1), `${hash}0`, `../${hash.slice(3)}`, "", "images"]) {
            expect(yield* store.get("images", name)).toEqual(Option.none())
          }
        }))

      it.effect("50 puts of the same bytes at once leave one copy, with those bytes", () =>
        Effect.gen(function*() {
          const store = yield* MediaStore
          const kept = yield* Kept
          const { bytes, hash } = sample(300_000)
          const answers = yield* Effect.all(
            Array.from({ length: 50 }, () => store.put("images", hash, bytes, "image/webp")),
            { concurrency: "unbounded" }
          )
          expect(answers.some((answer) => !answer.deduplicated)).toBe(true)
          expect(yield* kept.names("images", hash)).toEqual([kept.nameOf("images", hash, "image/webp")])
          const stored = yield* store.get("images", hash)
          expect(Option.map(stored, (s) => sha256(s.bytes))).toEqual(Option.some(hash))
          expect(yield* store.put("images", hash, bytes, "image/webp")).toEqual({ deduplicated: true })
        }))
    })
  })

contract("media store: files", FilesStore)
contract("media store: S3-compatible bucket", BucketStore)

/** `MediaStore.layer` built on exactly `env`. */
const configured = (env: Record<string, string>) =>
  Layer.build(MediaStore.layer).pipe(
    Effect.map((context) => Context.get(context, MediaStore)),
    Effect.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env })))
  )

/** The failure of `effect`, as text, which must be a failure (not a defect, nor a success). */
const failureText = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    expect(Exit.isFailure(exit)).toBe(true)
    const error = Exit.isFailure(exit) ? Cause.findErrorOption(exit.cause) : Option.none()
    expect(Option.isSome(error)).toBe(true)
    return String(Option.getOrUndefined(error))
  })

/** The defect `effect` dies with. */
const defectOf = <A, E>(effect: Effect.Effect<A, E>) =>
  Effect.map(Effect.exit(effect), (exit) => {
    expect(Exit.isFailure(exit)).toBe(true)
    return Exit.isFailure(exit) ? Cause.squash(exit.cause) : undefined
  })

describe("media store: the S3 layer's own", () => {
  it.layer(S3StoreLive, { timeout: "60 seconds", excludeTestServices: true })((it) => {
    it.effect("a bucket that is missing, or credentials the store refuses, are MediaStoreUnavailable, not none", () =>
      Effect.gen(function*() {
        const s3 = yield* S3Store
        const { bytes, hash } = sample()
        const kept = yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* Layer.build(MediaStore.s3(s3.options())).pipe(
            Effect.map((context) => Context.get(context, MediaStore))
          )
          yield* store.put("images", hash, bytes, "image/webp")
          return yield* store.get("images", hash)
        }))
        expect(Option.isSome(kept)).toBe(true)

        const refusing = [
          { ...s3.options(), bucket: "no-such-bucket" },
          { ...s3.options(), credentials: { ...s3.options().credentials!, accessKeyId: "SOMEONE-ELSE" } }
        ]
        for (const options of refusing) {
          yield* Effect.scoped(Effect.gen(function*() {
            const store = yield* Layer.build(MediaStore.s3(options)).pipe(
              Effect.map((context) => Context.get(context, MediaStore))
            )
            for (
              const operation of [
                store.get("images", hash),
                store.put("images", hash, bytes, "image/webp"),
                store.remove("images", hash)
              ]
            ) {
              const defect = yield* defectOf(operation)
              expect(isMediaStoreUnavailable(defect), String(defect)).toBe(true)
            }
          }))
        }
      }))

    it.effect("SHIORI_MEDIA_STORE=s3 with its settings keeps media in the bucket", () =>
      Effect.gen(function*() {
        const s3 = yield* S3Store
        const { bytes, hash } = sample()
        yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* configured({ ...s3.settings, SHIORI_MEDIA_S3_PREFIX: "configured/" })
          expect(yield* store.put("images", hash, bytes, "image/png")).toEqual({ deduplicated: false })
        }))
        expect(yield* s3.keys("configured/")).toEqual([`configured/images/${hash}`])
        expect(yield* s3.object(`configured/images/${hash}`)).toEqual(
          Option.some({ bytes, contentType: "image/png" })
        )
      }))

    it.effect("the files store is the default, under SHIORI_DATA_DIR/media", () =>
      Effect.gen(function*() {
        const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-media-default-"))
        const { bytes, hash } = sample()
        yield* Effect.scoped(Effect.gen(function*() {
          const store = yield* configured({ SHIORI_DATA_DIR: dataDir })
          yield* store.put("images", hash, bytes, "image/webp")
        }))
        expect(Fs.readdirSync(Path.join(dataDir, "media", hash.slice(0, 2)))).toEqual([`${hash}.webp`])
      }))

    it.effect("missing or half-given S3 settings stop the start with a configuration error naming them", () =>
      Effect.gen(function*() {
        const s3 = yield* S3Store
        const { SHIORI_MEDIA_S3_BUCKET: _bucket, ...noBucket } = s3.settings
        expect(yield* failureText(Effect.scoped(configured(noBucket)))).toContain(
          "SHIORI_MEDIA_S3_BUCKET must be set when SHIORI_MEDIA_STORE is s3"
        )
        const { SHIORI_MEDIA_S3_SECRET_ACCESS_KEY: _secret, ...noSecret } = s3.settings
        expect(yield* failureText(Effect.scoped(configured(noSecret)))).toContain(
          "SHIORI_MEDIA_S3_SECRET_ACCESS_KEY must be set with SHIORI_MEDIA_S3_ACCESS_KEY_ID"
        )
        const { SHIORI_MEDIA_S3_ACCESS_KEY_ID: _id, ...noId } = s3.settings
        expect(yield* failureText(Effect.scoped(configured(noId)))).toContain(
          "SHIORI_MEDIA_S3_ACCESS_KEY_ID must be set with SHIORI_MEDIA_S3_SECRET_ACCESS_KEY"
        )
        expect(
          yield* failureText(Effect.scoped(configured({ ...s3.settings, SHIORI_MEDIA_S3_ENDPOINT: "not a url" })))
        ).toContain("SHIORI_MEDIA_S3_ENDPOINT")
        expect(
          yield* failureText(Effect.scoped(configured({ ...s3.settings, SHIORI_MEDIA_STORE: "tape" })))
        ).toContain("SHIORI_MEDIA_STORE")
      }))
  })
})
