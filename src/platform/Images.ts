/**
 * The image pipeline: an upload is decoded (with a pixel cap, so a small file cannot expand into
 * gigabytes of pixels), turned upright by its EXIF orientation, cropped and resized to its preset's
 * box, and re-encoded as WebP. Nothing of the original file survives (EXIF, GPS positions, colour
 * profiles, trailing bytes of a polyglot file), and what is stored is named by the SHA-256 of the
 * stored bytes, so the same picture is kept once.
 *
 * sharp runs on libuv's thread pool; the event loop only waits on it. Each pipeline holds a pool
 * thread while it runs, so callers bound how many run at once (src/identity/account/Avatars.ts).
 */
import { Data, Effect } from "effect"
import * as Crypto from "node:crypto"
import sharp from "sharp"
import { rgbaToThumbHash } from "thumbhash"

// libvips keeps recent operations and decoded files in a cache of its own (up to 50 MB and 100
// files by default), which helps a pipeline that reads the same image twice; every upload here is
// new, so the cache would only hold memory.
sharp.cache(false)
// One libvips worker thread per picture (besides the pool thread driving it): the number of
// pictures decoded at once is then the number of cores image work takes, which the callers'
// bound is sized in. (sharp's own default is 1 with glibc's allocator and the core count
// otherwise; this makes it the same everywhere.)
sharp.concurrency(1)

export interface ImagePreset {
  readonly width: number
  readonly height: number
  /** `cover` crops to fill the box (avatars); `inside` keeps the whole picture within it. */
  readonly fit: "cover" | "inside"
}

export const ImagePresets = {
  /** Square avatars, shown at up to 128 CSS pixels on 2x screens. */
  avatar: { width: 256, height: 256, fit: "cover" },
  /** A work's cover as an editor uploads it (docs/writing.md, "Editor images"): portrait, whole. */
  cover: { width: 1024, height: 1536, fit: "inside" },
  /** A screenshot of a work, kept whole within 1080p. */
  screenshot: { width: 1920, height: 1080, fit: "inside" }
} as const satisfies Record<string, ImagePreset>

/** Formats an upload may be in. */
export const ACCEPTED_FORMATS: ReadonlySet<string> = new Set(["jpeg", "png", "webp", "avif", "gif", "heif"])

/** At most this many pixels are decoded: 40 megapixels, more than any camera image needs. */
export const MAX_INPUT_PIXELS = 40_000_000

export class ImageRejected extends Data.TaggedError("ImageRejected")<{ readonly reason: string }> {}

export interface ProcessedImage {
  readonly bytes: Buffer
  readonly contentType: "image/webp"
  readonly width: number
  readonly height: number
  /** Hex SHA-256 of `bytes`. */
  readonly sha256: string
  /** The format sharp read the upload as (`jpeg`, `png`, ...): what its bytes are, whatever they were declared. */
  readonly sourceFormat: string
}

/** Decodes `input` as an image and re-encodes it for `preset`; bytes that are not an image are refused. */
export const processImage = (input: Uint8Array, preset: ImagePreset): Effect.Effect<ProcessedImage, ImageRejected> =>
  Effect.tryPromise({
    try: async () => {
      const source = sharp(input, { limitInputPixels: MAX_INPUT_PIXELS, failOn: "error", animated: false })
      const metadata = await source.metadata()
      if (metadata.format === undefined || !ACCEPTED_FORMATS.has(metadata.format)) {
        throw new Error(`not an accepted image format (${metadata.format ?? "unknown"})`)
      }
      const { data, info } = await source
        .rotate()
        .resize(preset.width, preset.height, { fit: preset.fit, withoutEnlargement: preset.fit === "inside" })
        .webp({ quality: 85 })
        .toBuffer({ resolveWithObject: true })
      return {
        bytes: data,
        contentType: "image/webp" as const,
        width: info.width,
        height: info.height,
        sha256: Crypto.createHash("sha256").update(data).digest("hex"),
        sourceFormat: metadata.format
      }
    },
    catch: (cause) => new ImageRejected({ reason: cause instanceof Error ? cause.message : String(cause) })
  })

/**
 * The ThumbHash placeholder (https://evanw.github.io/thumbhash/) of an image processed here, in
 * base64: computed from the image scaled within 100x100, as the format asks.
 */
export const thumbhashOf = (bytes: Uint8Array) =>
  Effect.tryPromise({
    try: async () => {
      const { data, info } = await sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS })
        .resize(100, 100, { fit: "inside" })
        .ensureAlpha()
        .raw()
        .toBuffer({ resolveWithObject: true })
      return Buffer.from(rgbaToThumbHash(info.width, info.height, data)).toString("base64")
    },
    catch: (cause) => new ImageRejected({ reason: cause instanceof Error ? cause.message : String(cause) })
  })
