/**
 * The image work of the upload baseline (bench/baseline/ClaimWrites.ts, `POST /v2/media/images`):
 * what ours does for an editor image (src/catalog/media/Media.ts, src/platform/Images.ts,
 * src/platform/MediaStore.ts) with sharp called directly, no Effect:
 *
 * - the decode bounded like ours: at most the cores but one (at least one) pictures at once
 *   (`CATALOG_IMAGE_CONCURRENCY` when set), the others waiting their turn in arrival order;
 * - sharp with the same pixel cap (40 megapixels), `failOn: "error"`, one frame, the format checked
 *   against the accepted ones, `.rotate()`, fitted within the preset's box without enlarging, WebP at
 *   quality 85 (src/platform/Images.ts `processImage`), the SHA-256 of the result;
 * - outside the bound, as ours: the ThumbHash of the result (scaled within 100x100, RGBA), then the
 *   file kept under its hash when absent (written under a temporary name and renamed into place).
 *
 * Importing the presets from src/platform/Images.ts also applies its sharp settings to this process
 * (no libvips operation cache, one libvips worker thread per picture), so both sides decode alike.
 */
import * as Crypto from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import sharp from "sharp"
import { rgbaToThumbHash } from "thumbhash"
import { ACCEPTED_FORMATS, type ImagePreset, MAX_INPUT_PIXELS } from "../../src/platform/Images.js"

/** WebP quality of the stored bytes (src/platform/Images.ts `processImage`). */
const WEBP_QUALITY = 85

/** Pictures decoded at once, as ours (src/catalog/media/Media.ts): `CATALOG_IMAGE_CONCURRENCY`, or the cores but one. */
export const decodePermits = Number(process.env.CATALOG_IMAGE_CONCURRENCY ?? Math.max(1, Os.availableParallelism() - 1))

let free = decodePermits
const waiting: Array<() => void> = []

/** Runs `work` once a decode permit is free, in arrival order. */
const withPermit = async <A>(work: () => Promise<A>): Promise<A> => {
  if (free > 0) free--
  else await new Promise<void>((resolve) => waiting.push(resolve))
  try {
    return await work()
  } finally {
    const next = waiting.shift()
    if (next === undefined) free++
    else next()
  }
}

export interface Processed {
  readonly bytes: Buffer
  readonly width: number
  readonly height: number
  readonly sha256: string
  /** The format sharp read the upload as. */
  readonly sourceFormat: string
}

/** The upload decoded and re-encoded for `preset`, or undefined when its bytes are not an accepted image. */
export const processUpload = (input: Buffer, preset: ImagePreset): Promise<Processed | undefined> =>
  withPermit(async () => {
    try {
      const source = sharp(input, { limitInputPixels: MAX_INPUT_PIXELS, failOn: "error", animated: false })
      const metadata = await source.metadata()
      if (metadata.format === undefined || !ACCEPTED_FORMATS.has(metadata.format)) return undefined
      const { data, info } = await source
        .rotate()
        .resize(preset.width, preset.height, { fit: preset.fit, withoutEnlargement: preset.fit === "inside" })
        .webp({ quality: WEBP_QUALITY })
        .toBuffer({ resolveWithObject: true })
      return {
        bytes: data,
        width: info.width,
        height: info.height,
        sha256: Crypto.createHash("sha256").update(data).digest("hex"),
        sourceFormat: metadata.format
      }
    } catch {
      return undefined
    }
  })

/** The ThumbHash (base64) of processed bytes, as src/platform/Images.ts `thumbhashOf`. */
export const thumbhash = async (bytes: Buffer): Promise<string> => {
  const { data, info } = await sharp(bytes, { limitInputPixels: MAX_INPUT_PIXELS })
    .resize(100, 100, { fit: "inside" })
    .ensureAlpha()
    .raw()
    .toBuffer({ resolveWithObject: true })
  return Buffer.from(rgbaToThumbHash(info.width, info.height, data)).toString("base64")
}

/** Keeps `bytes` as `<root>/<first two hex>/<hash>.webp` unless kept already (src/platform/MediaStore.ts). */
export const keep = async (root: string, hash: string, bytes: Buffer): Promise<void> => {
  const file = Path.join(root, hash.slice(0, 2), `${hash}.webp`)
  if (await Fs.access(file).then(() => true, () => false)) return
  await Fs.mkdir(Path.dirname(file), { recursive: true })
  const temporary = `${file}.${Crypto.randomUUID()}.tmp`
  await Fs.writeFile(temporary, bytes)
  await Fs.rename(temporary, file)
}
