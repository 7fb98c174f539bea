/**
 * Where image bytes are kept (docs/writing.md, "Editor images"; avatars: src/identity/account/Avatars.ts), named by
 * the SHA-256 of the bytes: storing the same bytes twice keeps one copy. Each area is its own
 * namespace (an editor image and an avatar never share a name, so removing an unused avatar cannot
 * take an editor image away).
 *
 * Two layers behind one interface, chosen by `SHIORI_MEDIA_STORE` (`MediaStore.layer`):
 *
 * - `files` (the default) keeps files under the data directory (`SHIORI_DATA_DIR`, as
 *   src/platform/Database.ts): editor images in `media/<first two hex>/`, avatars in
 *   `media/avatars/<first two hex>/`. A file is written under a temporary name and renamed into place,
 *   so a reader never sees half of one and two writers of the same bytes leave one file.
 * - `s3` keeps objects in a bucket of an S3-compatible store (Amazon S3, MinIO, ...), under
 *   `<SHIORI_MEDIA_S3_PREFIX><area>/<hash>` with their `Content-Type`. A put is atomic there: a
 *   reader sees the whole object or none, and two writers of the same bytes leave one object with
 *   those bytes. The store failing a request (unreachable, refusing, out of service) is a
 *   `MediaStoreUnavailable` defect, which src/platform/ServerFailure.ts answers 503 with
 *   `Retry-After`: the request was fine.
 */
import { Config, Context, Data, Effect, Layer, Option, Redacted, Schema, SchemaIssue } from "effect"
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

const isStoredContentType = (value: string | undefined): value is StoredContentType =>
  value !== undefined && Object.hasOwn(storedExtensions, value)

/** The S3 requests the store makes. */
type S3Operation = "HeadObject" | "PutObject" | "GetObject" | "DeleteObject"

/**
 * An S3-compatible store failed a request for another reason than "no such object": unreachable,
 * out of service, throttling, refusing the credentials or missing the bucket. A defect (the caller
 * can do nothing about it), answered 503 with `Retry-After` by src/platform/ServerFailure.ts.
 */
export class MediaStoreUnavailable extends Data.TaggedError("MediaStoreUnavailable")<{
  readonly operation: S3Operation
  readonly cause: unknown
}> {
  override get message() {
    return `${this.operation} failed`
  }
}

export const isMediaStoreUnavailable = (u: unknown): u is MediaStoreUnavailable => u instanceof MediaStoreUnavailable

/** Where and how the `s3` layer reaches its bucket. */
export interface S3MediaStoreOptions {
  readonly bucket: string
  /** The signing region (an S3-compatible store usually takes any; `us-east-1` by convention). */
  readonly region: string
  /** The store's base URL; none: Amazon S3's endpoint for `region`. */
  readonly endpoint?: string | undefined
  /** Static credentials; none: the AWS SDK's default chain (environment, profile, instance role). */
  readonly credentials?: {
    readonly accessKeyId: string
    readonly secretAccessKey: Redacted.Redacted<string>
  } | undefined
  /** Put before `<area>/<hash>` as it is: a folder needs its trailing `/` (`shiori/`). */
  readonly prefix?: string | undefined
  /**
   * `<endpoint>/<bucket>/<key>` rather than `<bucket>.<endpoint>/<key>` (MinIO, s3rver and most others);
   * none: with an endpoint, else not.
   */
  readonly forcePathStyle?: boolean | undefined
}

/**
 * "No such object", told by the error's name (the S3 error code; HeadObject has no body, so its 404 is
 * `NotFound`), never by its status alone: a missing bucket is 404 too, and is no missing object. (Only
 * a HeadObject cannot tell the two apart; the put it precedes then fails on the missing bucket.)
 */
const isNoSuchObject = (cause: unknown) =>
  cause instanceof Error && (cause.name === "NoSuchKey" || cause.name === "NotFound")

/** A configuration error for `name`: `message` says what is wrong with it. */
const invalidSetting = (name: string, message: string) =>
  new Config.ConfigError(
    new Schema.SchemaError(new SchemaIssue.Pointer([name], new SchemaIssue.InvalidValue({ message })))
  )

/**
 * The `s3` layer's settings: `SHIORI_MEDIA_S3_BUCKET` is required; the endpoint, when set, must be a
 * URL; the access key id and secret come together or not at all (none: the SDK's default chain).
 */
const s3Settings: Config.Config<S3MediaStoreOptions> = Config.all({
  endpoint: Config.option(Config.URL("SHIORI_MEDIA_S3_ENDPOINT")),
  bucket: Config.option(Config.NonEmptyString("SHIORI_MEDIA_S3_BUCKET")),
  region: Config.NonEmptyString("SHIORI_MEDIA_S3_REGION").pipe(Config.withDefault("us-east-1")),
  accessKeyId: Config.option(Config.NonEmptyString("SHIORI_MEDIA_S3_ACCESS_KEY_ID")),
  secretAccessKey: Config.option(Config.Redacted("SHIORI_MEDIA_S3_SECRET_ACCESS_KEY")),
  prefix: Config.String("SHIORI_MEDIA_S3_PREFIX").pipe(Config.withDefault("")),
  forcePathStyle: Config.option(Config.Boolean("SHIORI_MEDIA_S3_FORCE_PATH_STYLE"))
}).pipe(
  Config.mapEffect((settings) => {
    if (Option.isNone(settings.bucket)) {
      return Effect.fail(
        invalidSetting("SHIORI_MEDIA_S3_BUCKET", "SHIORI_MEDIA_S3_BUCKET must be set when SHIORI_MEDIA_STORE is s3")
      )
    }
    const endpoint = Option.getOrUndefined(Option.map(settings.endpoint, (url) => url.href.replace(/\/+$/u, "")))
    const options = {
      bucket: settings.bucket.value,
      region: settings.region,
      endpoint,
      prefix: settings.prefix,
      forcePathStyle: Option.getOrUndefined(settings.forcePathStyle)
    }
    if (Option.isSome(settings.accessKeyId) && Option.isSome(settings.secretAccessKey)) {
      return Effect.succeed({
        ...options,
        credentials: { accessKeyId: settings.accessKeyId.value, secretAccessKey: settings.secretAccessKey.value }
      })
    }
    if (Option.isSome(settings.accessKeyId)) {
      return Effect.fail(invalidSetting(
        "SHIORI_MEDIA_S3_SECRET_ACCESS_KEY",
        "SHIORI_MEDIA_S3_SECRET_ACCESS_KEY must be set with SHIORI_MEDIA_S3_ACCESS_KEY_ID"
      ))
    }
    if (Option.isSome(settings.secretAccessKey)) {
      return Effect.fail(invalidSetting(
        "SHIORI_MEDIA_S3_ACCESS_KEY_ID",
        "SHIORI_MEDIA_S3_ACCESS_KEY_ID must be set with SHIORI_MEDIA_S3_SECRET_ACCESS_KEY"
      ))
    }
    return Effect.succeed(options)
  })
)

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

  /**
   * Objects of an S3-compatible store (`options`). The SDK is loaded only by this layer, so a process
   * keeping files does not load it.
   */
  static readonly s3 = (options: S3MediaStoreOptions) =>
    Layer.effect(
      this,
      Effect.gen(function*() {
        const sdk = yield* Effect.promise(() => import("@aws-sdk/client-s3"))
        const client = yield* Effect.acquireRelease(
          Effect.sync(() =>
            new sdk.S3Client({
              region: options.region,
              ...(options.endpoint === undefined ? {} : { endpoint: options.endpoint }),
              forcePathStyle: options.forcePathStyle ?? options.endpoint !== undefined,
              ...(options.credentials === undefined ? {} : {
                credentials: {
                  accessKeyId: options.credentials.accessKeyId,
                  secretAccessKey: Redacted.value(options.credentials.secretAccessKey)
                }
              }),
              // Checksums only where the S3 API requires one: S3-compatible stores that predate the
              // SDK's default checksums refuse the ones it would add to every put.
              requestChecksumCalculation: "WHEN_REQUIRED",
              responseChecksumValidation: "WHEN_REQUIRED",
              // A store that stops answering fails the request (after the SDK's retries) instead of
              // holding it for ever.
              requestHandler: { connectionTimeout: 5_000, requestTimeout: 30_000 }
            })
          ),
          (client) => Effect.sync(() => client.destroy())
        )
        const prefix = options.prefix ?? ""
        const keyOf = (area: MediaArea, hash: string) => `${prefix}${area}/${hash}`

        /** One request; "no such object" is `onMissing`, any other failure the store unavailable. */
        const send = <A, B>(
          operation: S3Operation,
          request: (signal: AbortSignal) => Promise<A>,
          onMissing: () => B
        ): Effect.Effect<A | B> =>
          Effect.tryPromise({ try: request, catch: (cause) => cause }).pipe(
            Effect.catch((cause) =>
              isNoSuchObject(cause)
                ? Effect.succeed(onMissing())
                : Effect.die(new MediaStoreUnavailable({ operation, cause }))
            )
          )

        const get = (area: MediaArea, hash: string): Effect.Effect<Option.Option<StoredMedia>> =>
          isMediaHash(hash)
            ? send(
              "GetObject",
              async (abortSignal) => {
                const object = await client.send(
                  new sdk.GetObjectCommand({ Bucket: options.bucket, Key: keyOf(area, hash) }),
                  { abortSignal }
                )
                const bytes = object.Body === undefined ? new Uint8Array() : await object.Body.transformToByteArray()
                return { bytes, contentType: object.ContentType }
              },
              () => undefined
            ).pipe(Effect.flatMap((found) => {
              if (found === undefined) return Effect.succeedNone
              const { bytes, contentType } = found
              return isStoredContentType(contentType)
                ? Effect.succeedSome({ bytes, contentType })
                : Effect.die(new Error(`object ${keyOf(area, hash)} has Content-Type ${contentType}`))
            }))
            : Effect.succeedNone

        return {
          put: (area, hash, bytes, contentType) =>
            Effect.gen(function*() {
              if (!isMediaHash(hash)) return yield* Effect.die(new Error("not a SHA-256 hex digest"))
              const Key = keyOf(area, hash)
              const kept = yield* send(
                "HeadObject",
                (abortSignal) =>
                  client.send(new sdk.HeadObjectCommand({ Bucket: options.bucket, Key }), { abortSignal }).then(
                    () => true
                  ),
                () => false
              )
              if (kept) return { deduplicated: true }
              // Two writers of the same bytes at once both put them: the object is whole either way
              // (S3 keeps the last complete put), and its bytes are the same.
              yield* send(
                "PutObject",
                (abortSignal) =>
                  client.send(
                    new sdk.PutObjectCommand({ Bucket: options.bucket, Key, Body: bytes, ContentType: contentType }),
                    { abortSignal }
                  ),
                () => undefined
              )
              return { deduplicated: false }
            }),
          get,
          remove: (area, hash) =>
            isMediaHash(hash)
              ? send(
                "DeleteObject",
                (abortSignal) =>
                  client.send(
                    new sdk.DeleteObjectCommand({ Bucket: options.bucket, Key: keyOf(area, hash) }),
                    { abortSignal }
                  ),
                () => undefined
              ).pipe(Effect.asVoid)
              : Effect.void
        } satisfies Context.Service.Shape<typeof MediaStore>
      })
    )

  /**
   * The store `SHIORI_MEDIA_STORE` names: `files` (the default) under `SHIORI_DATA_DIR/media` (default
   * `.data/media`), or `s3` with the `SHIORI_MEDIA_S3_*` settings (`s3Settings`).
   */
  static readonly layer = Layer.unwrap(
    Effect.gen(function*() {
      const kind = yield* Config.Literals(["files", "s3"], "SHIORI_MEDIA_STORE").pipe(Config.withDefault("files"))
      if (kind === "s3") return MediaStore.s3(yield* s3Settings)
      const dataDir = yield* Config.String("SHIORI_DATA_DIR").pipe(Config.withDefault(".data"))
      return MediaStore.files(Path.join(dataDir, "media"))
    })
  )
}
