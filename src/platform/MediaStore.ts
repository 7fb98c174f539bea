/**
 * Where image bytes are kept (docs/writing.md, "Editor images"; avatars: src/identity/account/Avatars.ts), named by
 * the SHA-256 of the bytes: storing the same bytes twice keeps one copy. Each area is its own
 * namespace (an editor image and an avatar never share a name, so removing an unused avatar cannot
 * take an editor image away).
 *
 * The default layer keeps files under the data directory (`SHIORI_DATA_DIR`, as
 * src/platform/Database.ts): editor images in `media/<first two hex>/`, avatars in
 * `media/avatars/<first two hex>/`. A file is written under a temporary name and renamed into place,
 * so a reader never sees half of one and two writers of the same bytes leave one file.
 */
import { Config, Context, Effect, Layer, Option } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Path from "node:path"

/** The media types stored, and the file name extension each is kept under. */
export const storedExtensions = {
  "image/webp": "webp",
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/avif": "avif"
} as const
export type StoredContentType = keyof typeof storedExtensions

/** The namespaces of the store: editor images (the catalog's) and avatars (the identity provider's). */
export type MediaArea = "images" | "avatars"

export interface StoredMedia {
  readonly bytes: Uint8Array
  readonly contentType: StoredContentType
}

export const isMediaHash = (hash: string) => /^[0-9a-f]{64}$/u.test(hash)

export class MediaStore extends Context.Service<MediaStore, {
  /** Keeps `bytes` under `hash` (their SHA-256) in `area`; `deduplicated` when they were kept already. */
  readonly put: (
    area: MediaArea,
    hash: string,
    bytes: Uint8Array,
    contentType: StoredContentType
  ) => Effect.Effect<{ readonly deduplicated: boolean }>
  /** The bytes kept under `hash` in `area`, if any. */
  readonly get: (area: MediaArea, hash: string) => Effect.Effect<Option.Option<StoredMedia>>
  /** Forgets the bytes kept under `hash` in `area` (nothing when there are none). */
  readonly remove: (area: MediaArea, hash: string) => Effect.Effect<void>
}>()("shiori/MediaStore") {
  /** Files under `root`. */
  static readonly files = (root: string) => {
    const directory = (area: MediaArea, hash: string) =>
      area === "images" ? Path.join(root, hash.slice(0, 2)) : Path.join(root, area, hash.slice(0, 2))
    const fileOf = (area: MediaArea, hash: string, contentType: StoredContentType) =>
      Path.join(directory(area, hash), `${hash}.${storedExtensions[contentType]}`)
    const contentTypes = Object.keys(storedExtensions) as ReadonlyArray<StoredContentType>
    return Layer.succeed(this, {
      put: (area, hash, bytes, contentType) =>
        Effect.promise(async () => {
          if (!isMediaHash(hash)) throw new Error("not a SHA-256 hex digest")
          const file = fileOf(area, hash, contentType)
          const kept = await Fs.access(file).then(() => true, () => false)
          if (kept) return { deduplicated: true }
          await Fs.mkdir(Path.dirname(file), { recursive: true })
          const temporary = `${file}.${Crypto.randomUUID()}.tmp`
          await Fs.writeFile(temporary, bytes)
          await Fs.rename(temporary, file)
          return { deduplicated: false }
        }),
      get: (area, hash) =>
        Effect.promise(async () => {
          if (!isMediaHash(hash)) return Option.none()
          for (const contentType of contentTypes) {
            const bytes = await Fs.readFile(fileOf(area, hash, contentType)).catch(() => undefined)
            if (bytes !== undefined) return Option.some({ bytes: new Uint8Array(bytes), contentType })
          }
          return Option.none()
        }),
      remove: (area, hash) =>
        Effect.promise(async () => {
          if (!isMediaHash(hash)) return
          await Promise.all(contentTypes.map((contentType) => Fs.rm(fileOf(area, hash, contentType), { force: true })))
        })
    })
  }

  /** Files under `SHIORI_DATA_DIR/media` (default `.data/media`). */
  static readonly layer = Layer.unwrap(
    Effect.map(
      Config.String("SHIORI_DATA_DIR").pipe(Config.withDefault(".data")),
      (dataDir) => MediaStore.files(Path.join(dataDir, "media"))
    )
  )
}
