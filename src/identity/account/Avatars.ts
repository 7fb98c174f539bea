/**
 * Avatars: `POST /auth/me/avatar` takes a `multipart/form-data` body with one `file` part, which
 * the image pipeline (src/platform/Images.ts) re-encodes to a 256x256 WebP; the bytes are stored
 * by their SHA-256 (migrations/0019_avatars.ts) and `picture` becomes their URL under the issuer.
 * The body was read and bounded before (`IDENTITY_MAX_AVATAR_BYTES`, src/platform/BodyLimit.ts);
 * it is parsed here, in memory, so a malformed body is a 400 and never a temporary file.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Multipasta from "multipasta"
import { ImagePresets, processImage } from "../../platform/Images.js"
import { IdentityConfig } from "../IdentityConfig.js"
import { refused } from "../Refused.js"

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

const AvatarRow = Schema.Struct({ content_type: Schema.String, bytes: Schema.Uint8Array })
const decodeAvatar = Schema.decodeUnknownEffect(Schema.Array(AvatarRow))

export class Avatars extends Context.Service<Avatars>()("identity/Avatars", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* IdentityConfig

    /** Stores `file` as the avatar of `userId`; answers the new `picture` URL. */
    const upload = Effect.fn("Avatars.upload")(function*(userId: number, file: Option.Option<Uint8Array>) {
      if (Option.isNone(file) || file.value.length === 0) return yield* refused("INVALID_REQUEST")
      const image = yield* processImage(file.value, ImagePresets.avatar).pipe(
        Effect.catchTag("ImageRejected", () => refused("IMAGE_INVALID"))
      )
      const picture = `${config.issuer}/avatars/${image.sha256}.webp`
      // Re-storing a known picture locks its row and makes it young again, so the cleanup job's
      // sweep of unused avatars cannot take it between this insert and the user's update.
      yield* Effect.gen(function*() {
        yield* sql`
          INSERT INTO avatars (sha256, content_type, bytes, width, height)
          VALUES (${image.sha256}, ${image.contentType}, ${image.bytes}, ${image.width}, ${image.height})
          ON CONFLICT (sha256) DO UPDATE SET created_at = now()
        `
        yield* sql`
          UPDATE users SET picture = ${picture}, avatar_sha256 = ${image.sha256}, updated_at = now()
          WHERE id = ${userId}
        `
      }).pipe(sql.withTransaction, Effect.orDie)
      return picture
    })

    /** The stored bytes named by `sha256`. */
    const find = Effect.fn("Avatars.find")(function*(sha256: string) {
      const rows = yield* sql`SELECT content_type, bytes FROM avatars WHERE sha256 = ${sha256}`.pipe(
        Effect.flatMap(decodeAvatar),
        Effect.orDie
      )
      return Option.fromNullishOr(rows[0])
    })

    /** `upload` from a whole `multipart/form-data` body. */
    const uploadBody = (userId: number, contentType: string, body: Uint8Array) =>
      contentType.toLowerCase().startsWith("multipart/form-data")
        ? Effect.flatMap(parseUpload(contentType, body), ({ file }) => upload(userId, file))
        : refused("INVALID_REQUEST")

    return { upload, uploadBody, find } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
