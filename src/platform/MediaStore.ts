/**
 * Where uploaded images' bytes are kept (docs/writing.md, "Editor images"), named by the SHA-256 of
 * the bytes: storing the same bytes twice keeps one copy. The default layer keeps files under the
 * data directory (`SHIORI_DATA_DIR`, as src/platform/Database.ts), in `media/<first two hex>/`; a
 * file is written under a temporary name and renamed into place, so a reader never sees half of one
 * and two writers of the same bytes leave one file.
 */
import { Config, Context, Effect, Layer, Option } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"

/** The media types stored, and the file name extension each is kept under. */
const extensions = { "image/webp": "webp", "image/png": "png", "image/jpeg": "jpg", "image/avif": "avif" } as const
export type StoredContentType = keyof typeof extensions

export interface StoredMedia {
  readonly bytes: Uint8Array
  readonly contentType: StoredContentType
}

const isHash = (hash: string) => /^[0-9a-f]{64}$/u.test(hash)

export class MediaStore extends Context.Service<MediaStore, {
  /** Keeps `bytes` under `hash` (their SHA-256); `deduplicated` when they were kept already. */
  readonly put: (
    hash: string,
    bytes: Uint8Array,
    contentType: StoredContentType
  ) => Effect.Effect<{ readonly deduplicated: boolean }>
  /** The bytes kept under `hash`, if any. */
  readonly get: (hash: string) => Effect.Effect<Option.Option<StoredMedia>>
}>()("shiori/MediaStore") {
  /** Files under `root`. */
  static readonly files = (root: string) =>
    Layer.succeed(this, {
      put: (hash, bytes, contentType) =>
        Effect.promise(async () => {
          if (!isHash(hash)) throw new Error("not a SHA-256 hex digest")
          const dir = Path.join(root, hash.slice(0, 2))
          const file = Path.join(dir, `${hash}.${extensions[contentType]}`)
          const kept = await Fs.access(file).then(() => true, () => false)
          if (kept) return { deduplicated: true }
          await Fs.mkdir(dir, { recursive: true })
          const temporary = `${file}.${Crypto.randomUUID()}.tmp`
          await Fs.writeFile(temporary, bytes)
          await Fs.rename(temporary, file)
          return { deduplicated: false }
        }),
      get: (hash) =>
        Effect.promise(async () => {
          if (!isHash(hash)) return Option.none()
          for (const [contentType, extension] of Object.entries(extensions)) {
            const file = Path.join(root, hash.slice(0, 2), `${hash}.${extension}`)
            const bytes = await Fs.readFile(file).catch(() => undefined)
            if (bytes !== undefined) {
              return Option.some({ bytes: new Uint8Array(bytes), contentType: contentType as StoredContentType })
            }
          }
          return Option.none()
        })
    })

  /** Files under `SHIORI_DATA_DIR/media` (default `.data/media`). */
  static readonly layer = Layer.unwrap(
    Effect.map(
      Config.String("SHIORI_DATA_DIR").pipe(Config.withDefault(".data")),
      (dataDir) => MediaStore.files(Path.join(dataDir, "media"))
    )
  )
}
