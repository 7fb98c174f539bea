/**
 * An image an editor uploaded (docs/writing.md, "Editor images"): the stored, re-encoded copy, named
 * by the SHA-256 of its bytes, which a proposal may then name (`catalog.work.cover`).
 */
import { Schema } from "effect"
import { ImageHash, Pixels, Sexual, Thumbhash, Url, Violence } from "./Common.js"

export const ImagePresetName = Schema.Literals(["cover", "screenshot"]).annotate({
  description: "`cover` keeps the whole picture within 1024x1536, `screenshot` within 1920x1080."
})
export type ImagePresetName = typeof ImagePresetName.Type

export const EditImage = Schema.Struct({
  object: Schema.Literal("edit_image"),
  preset: ImagePresetName,
  url: Url(512).annotate({ description: "Absolute URL of the stored image (`GET /v2/media/images/{hash}`)." }),
  hash: ImageHash.annotate({ description: "SHA-256 of the stored bytes, 64 lowercase hex digits." }),
  width: Pixels,
  height: Pixels,
  thumbhash: Thumbhash,
  sexual: Schema.NullOr(Sexual).annotate({ description: "Sexual content level; null = not assessed yet." }),
  violence: Schema.NullOr(Violence).annotate({ description: "Violence level; null = not assessed yet." }),
  size_bytes: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)).annotate({
    description: "Size of the stored bytes."
  }),
  is_deduplicated: Schema.Boolean.annotate({
    description: "True when these stored bytes existed already (the answer is then 200, not 201)."
  })
}).annotate({ identifier: "EditImage", description: "An uploaded image, as stored." })
export type EditImage = typeof EditImage.Type

export const UploadImageQuery = Schema.Struct({ preset: ImagePresetName })
export type UploadImageQuery = typeof UploadImageQuery.Type

export const ImageHashPath = Schema.Struct({ hash: ImageHash })
