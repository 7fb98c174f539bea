/**
 * Editor images (docs/writing.md, "Editor images"): an upload's bytes go through the image pipeline
 * (src/platform/Images.ts: pixel cap before decoding, upright, metadata stripped, fitted within the
 * preset's box, re-encoded as WebP), are kept by the SHA-256 of the stored bytes (MediaStore) and
 * recorded in `images` (migrations/0002) with `source` `upload`, so a proposal may name them.
 *
 * Decoding holds a libuv pool thread and a core (Images.ts), so at most `CATALOG_IMAGE_CONCURRENCY`
 * uploads of this process decode at once (default: the cores but one, at least one); the others wait.
 */
import { Config, Context, Effect, Layer, Schema, Semaphore } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import * as Os from "node:os"
import { UPLOAD_PATH } from "../../../schema/Api/MediaApi.js"
import { EditImage, type ImagePresetName } from "../../../schema/Catalog/EditImage.js"
import { ValidationFailed } from "../../../schema/Problem.js"
import { ServerConfig } from "../../platform/Config.js"
import { ImagePresets, processImage, thumbhashOf } from "../../platform/Images.js"
import { MediaStore } from "../../platform/MediaStore.js"
import { jsonAnswer } from "../writes/Writes.js"

/** The `Content-Type` an upload of each format sharp reads must be declared as. */
const declaredAs: Readonly<Record<string, string>> = {
  jpeg: "image/jpeg",
  png: "image/png",
  webp: "image/webp",
  avif: "image/avif",
  heif: "image/avif",
  gif: "image/gif"
}

const refusedFormat = (detail: string) =>
  new ValidationFailed({
    detail: "The body is not an image of its declared type.",
    errors: [{ reason: "INVALID_FORMAT", detail, header: "Content-Type" }]
  })

export class Media extends Context.Service<Media>()("catalog/Media", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const store = yield* MediaStore
    const { catalogPublicUrl } = yield* ServerConfig
    const permits = yield* Config.schema(
      Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { message: "CATALOG_IMAGE_CONCURRENCY must be at least 1" })),
      "CATALOG_IMAGE_CONCURRENCY"
    ).pipe(Config.withDefault(Math.max(1, Os.availableParallelism() - 1)))
    const decoding = yield* Semaphore.make(permits)

    /** The upload's fingerprint for the write runner: the preset, the declared type and the body's digest. */
    const fingerprint = (preset: ImagePresetName, contentType: string, body: Uint8Array) => ({
      preset,
      content_type: contentType,
      sha256: Crypto.createHash("sha256").update(body).digest("hex")
    })

    /**
     * The write of one upload (run by the write runner): decodes `body` as `preset`, refusing bytes
     * that are not an image of the declared `contentType`, keeps the stored bytes and records them.
     */
    const upload = (preset: ImagePresetName, contentType: string, body: Uint8Array) =>
      Effect.gen(function*() {
        const image = yield* decoding.withPermits(1)(processImage(body, ImagePresets[preset])).pipe(
          Effect.catchTag("ImageRejected", () =>
            Effect.fail(refusedFormat("The body is not a JPEG, PNG, WebP, AVIF or GIF image that can be decoded.")))
        )
        if (declaredAs[image.sourceFormat] !== contentType) {
          return yield* refusedFormat(`The body is ${image.sourceFormat}, not ${contentType}.`)
        }
        const thumbhash = yield* thumbhashOf(image.bytes).pipe(Effect.orDie)
        const url = `${catalogPublicUrl}${UPLOAD_PATH}/${image.sha256}`
        yield* store.put("images", image.sha256, image.bytes, image.contentType)
        // One row per hash: of two identical uploads at once, the second waits for the first's row and
        // then inserts none, so the bytes are recorded once and the second answers deduplicated.
        const inserted = yield* sql<{ hash: string }>`
          INSERT INTO images (hash, url, width, height, thumbhash, source, preset, size_bytes)
          VALUES (${image.sha256}, ${url}, ${image.width}, ${image.height}, ${thumbhash}, 'upload', ${preset},
                  ${image.bytes.length})
          ON CONFLICT (hash) DO NOTHING
          RETURNING hash`.pipe(Effect.orDie)
        const deduplicated = inserted.length === 0
        return yield* jsonAnswer(EditImage, {
          object: "edit_image",
          preset,
          url,
          hash: image.sha256,
          width: image.width,
          height: image.height,
          thumbhash,
          sexual: null,
          violence: null,
          size_bytes: image.bytes.length,
          is_deduplicated: deduplicated
        }, { status: deduplicated ? 200 : 201 })
      })

    /** The stored bytes of an uploaded image. */
    const find = (hash: string) => store.get("images", hash)

    return { upload, fingerprint, find } as const
  })
}) {
  /** Over the `MediaStore` provided to the app (src/App.ts). */
  static readonly layer = Layer.effect(this, this.make)
}
