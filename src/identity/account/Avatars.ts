/**
 * Avatars: `POST /auth/me/avatar` takes a `multipart/form-data` body with one `file` part, which
 * the image pipeline (src/platform/Images.ts) re-encodes to a 256x256 WebP; `picture` becomes its
 * URL under the issuer, named by the SHA-256 of the bytes. The bytes are kept in the `MediaStore`
 * (src/platform/MediaStore.ts, area `avatars`; files under `SHIORI_DATA_DIR/media/avatars` by
 * default) and the `avatars` table (migrations/0019_avatars.ts, migrations/0030_avatar_files.ts)
 * records each one, which `users.avatar_sha256` references and the cleanup job
 * (src/identity/cleanup/Cleanup.ts) sweeps: a row exists only while its file does, and
 * `GET /api/v1/avatars/{sha256}.webp` serves the file of a recorded avatar.
 * The body is bounded (`IDENTITY_MAX_AVATAR_BYTES`, src/platform/BodyLimit.ts) and, once the
 * upload is admitted, read whole and parsed here, in memory, so a malformed body is a 400 and never
 * a temporary file.
 *
 * Decoding is the expensive part (a 40-megapixel picture holds a libuv pool thread and a core for
 * up to a second), and sign-in hashes passwords on the same pool: image work must never take the
 * threads hashing needs. So an upload passes, in order:
 * 1. its buckets per user and per client address (src/identity/ratelimit/UploadLimits.ts): 429
 *    `RATE_LIMITED` with `Retry-After`;
 * 2. the image line of this process (src/identity/ratelimit/WorkQueue.ts): at most
 *    `IDENTITY_IMAGE_CONCURRENCY` pictures decode at once (unset: `imagePermits`, derived from the
 *    pool's size), at most `IDENTITY_IMAGE_QUEUE` more wait their turn for up to
 *    `QUEUE_WAIT_SECONDS`; beyond that, or after the wait, 429 `RATE_LIMITED` with `Retry-After`.
 * The `identity_image_decodes` gauge counts the pictures being decoded now.
 */
import { Config, Context, Effect, Layer, Metric, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Multipasta from "multipasta"
import * as Os from "node:os"
import { AdvisoryLockClass } from "../../platform/AdvisoryLocks.js"
import { ImagePresets, processImage } from "../../platform/Images.js"
import { MediaStore } from "../../platform/MediaStore.js"
import { Passwords } from "../crypto/Passwords.js"
import { UploadLimits } from "../ratelimit/UploadLimits.js"
import { makeWorkQueue } from "../ratelimit/WorkQueue.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import { refused, retryAfter } from "../shared/Refused.js"

/** Pictures being decoded in this process now. */
export const imageDecodes = Metric.gauge("identity_image_decodes", {
  description: "Avatar uploads being decoded now (at most IDENTITY_IMAGE_CONCURRENCY)"
})

/** libuv's own pool size, what `UV_THREADPOOL_SIZE` means when nothing set it (src/ThreadPool.ts sets it for the server). */
const LIBUV_DEFAULT_THREADS = 4

/** How long an upload waits for its turn before it is refused. */
export const QUEUE_WAIT_SECONDS = 10

/**
 * Pictures decoded at once when `IDENTITY_IMAGE_CONCURRENCY` is unset: half of the pool threads
 * password hashing leaves (so hashing always has its threads, and file access and DNS lookups still
 * find one), and no more than the cores hashing leaves (sharp decodes a picture on one core,
 * src/platform/Images.ts); at least one. 4 threads, 2 hashing, 2 cores: 1.
 */
export const imagePermits = (poolThreads: number, hashing: number, cores: number) =>
  Math.max(1, Math.min(Math.floor((poolThreads - hashing) / 2), cores - hashing))

/**
 * The `file` part of a multipart body with this `Content-Type` (none when there is no such part)
 * and its short text fields (a page's CSRF token).
 */
export const parseUpload = (contentType: string, body: Uint8Array) =>
  Effect.suspend(() => {
    const chunks: Array<Uint8Array> = []
    const fields: Record<string, string> = {}
    let found = false
    let outcome: "done" | "failed" | undefined
    // The parser works synchronously: by the end of `end()` it has called `onDone` or `onError`,
    // or neither (a body without any boundary), which is malformed too.
    const parser = Multipasta.make({
      headers: { "content-type": contentType },
      maxParts: 8,
      maxFieldSize: 4096,
      onField: (info, value) => {
        fields[info.name] ??= Multipasta.decodeField(info, value)
      },
      onFile: (info) => {
        const wanted = info.name === "file" && !found
        if (wanted) found = true
        return (chunk) => {
          if (wanted && chunk !== null) chunks.push(chunk)
        }
      },
      onError: () => {
        outcome ??= "failed"
      },
      onDone: () => {
        outcome ??= "done"
      }
    })
    parser.write(body)
    parser.end()
    return outcome === "done"
      ? Effect.succeed({
        file: found ? Option.some<Uint8Array>(Buffer.concat(chunks)) : Option.none<Uint8Array>(),
        fields
      })
      : refused("INVALID_REQUEST")
  })

/**
 * Takes, for the rest of the transaction, the lock under which an avatar's file is stored or
 * removed: an upload holds it from writing the file to committing its row, the cleanup job from
 * looking for a row to removing the file (src/identity/cleanup/Cleanup.ts).
 */
export const lockAvatarFile = (sql: SqlClient.SqlClient, sha256: string) =>
  sql`SELECT pg_advisory_xact_lock(${AdvisoryLockClass.avatarFile}::int4, hashtext(${sha256}))`

export class Avatars extends Context.Service<Avatars>()("identity/Avatars", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const media = yield* MediaStore
    const config = yield* IdentityConfig
    const limits = yield* UploadLimits
    const passwords = yield* Passwords
    const poolThreads = yield* Config.schema(
      Schema.Int.check(Schema.isBetween({ minimum: 1, maximum: 1024 }, {
        message: "UV_THREADPOOL_SIZE must be an integer from 1 to 1024"
      })),
      "UV_THREADPOOL_SIZE"
    ).pipe(Config.withDefault(LIBUV_DEFAULT_THREADS))
    const permits = yield* Config.schema(
      Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { message: "IDENTITY_IMAGE_CONCURRENCY must be at least 1" })),
      "IDENTITY_IMAGE_CONCURRENCY"
    ).pipe(
      Config.withDefault(imagePermits(poolThreads, passwords.concurrency, Os.availableParallelism()))
    )
    const queue = yield* Config.schema(
      Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, { message: "IDENTITY_IMAGE_QUEUE must not be negative" })),
      "IDENTITY_IMAGE_QUEUE"
    ).pipe(Config.withDefault(8))
    const images = makeWorkQueue({
      permits,
      queue,
      waitMillis: QUEUE_WAIT_SECONDS * 1000,
      onActive: (active) => imageDecodes.updateUnsafe(active, Context.empty())
    })

    /** Decodes and stores `file` as the avatar of `userId` (admitted before); answers the new `picture` URL. */
    const store = Effect.fn("Avatars.store")(function*(userId: number, file: Option.Option<Uint8Array>) {
      if (Option.isNone(file) || file.value.length === 0) return yield* refused("INVALID_REQUEST")
      const image = yield* images.run(processImage(file.value, ImagePresets.avatar)).pipe(
        Effect.catchTag("ImageRejected", () => refused("IMAGE_INVALID")),
        Effect.catchTag("WorkQueueFull", (full) => refused("RATE_LIMITED", retryAfter(full.retryAfterSeconds)))
      )
      const picture = `${config.issuer}/avatars/${image.sha256}.webp`
      // The file first, then the row and the user: a crash in between leaves at worst a file no row
      // records, named by its content (the same bytes uploaded again are the same file), which is
      // harmless. The file is written under the avatar's lock, held until the row commits, so the
      // cleanup job, which looks for a row and removes the file under the same lock, cannot take the
      // file away from this row even when it swept an earlier row of the same bytes a moment ago.
      // Re-storing a known picture locks its row and makes it young again, so the cleanup job's
      // sweep of unused avatars cannot take it between this insert and the user's update.
      yield* Effect.gen(function*() {
        yield* lockAvatarFile(sql, image.sha256)
        yield* media.put("avatars", image.sha256, image.bytes, image.contentType)
        yield* sql`
          INSERT INTO avatars (sha256, content_type, size_bytes, width, height)
          VALUES (${image.sha256}, ${image.contentType}, ${image.bytes.length}, ${image.width}, ${image.height})
          ON CONFLICT (sha256) DO UPDATE SET created_at = now()
        `
        yield* sql`
          UPDATE users SET picture = ${picture}, avatar_sha256 = ${image.sha256}, updated_at = now()
          WHERE id = ${userId}
        `
      }).pipe(sql.withTransaction, Effect.orDie)
      return picture
    })

    /**
     * Stores `file` as the avatar of `userId`, uploaded from `address` (`clientAddress` of the
     * request); answers the new `picture` URL. For a body read already (the account page's form,
     * whose CSRF token is in it).
     */
    const upload = (userId: number, address: string, file: Option.Option<Uint8Array>) =>
      Option.isNone(file) || file.value.length === 0
        ? refused("INVALID_REQUEST")
        : Effect.andThen(limits.admit(userId, address), store(userId, file))

    /**
     * `upload` from a whole `multipart/form-data` body, which `readBody` reads only once the upload is
     * admitted: a refused one costs no copy or parse of its megabytes.
     */
    const uploadBody = <E>(
      userId: number,
      address: string,
      contentType: string,
      readBody: Effect.Effect<Uint8Array, E>
    ) =>
      contentType.toLowerCase().startsWith("multipart/form-data")
        ? limits.admit(userId, address).pipe(
          Effect.andThen(readBody),
          Effect.flatMap((body) => parseUpload(contentType, body)),
          Effect.flatMap(({ file }) => store(userId, file))
        )
        : refused("INVALID_REQUEST")

    /**
     * The bytes of the avatar named by `sha256`, while it is recorded (one the cleanup job swept is
     * gone even before its file is).
     */
    const find = Effect.fn("Avatars.find")(function*(sha256: string) {
      const rows = yield* sql`SELECT 1 FROM avatars WHERE sha256 = ${sha256}`.pipe(Effect.orDie)
      if (rows.length === 0) return Option.none()
      const stored = yield* media.get("avatars", sha256)
      if (Option.isNone(stored)) {
        yield* Effect.logWarning("avatar recorded without its file").pipe(Effect.annotateLogs({ sha256 }))
      }
      return Option.map(stored, ({ bytes, contentType }) => ({ bytes, content_type: contentType }))
    })

    return { upload, uploadBody, find, imagePermits: permits } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide(UploadLimits.layer))
}
