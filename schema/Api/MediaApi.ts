/**
 * Editor images (docs/writing.md, "Editor images"): an image uploaded as its raw bytes, re-encoded
 * and stored by the SHA-256 of the stored bytes, and those bytes served back. The upload acts for a
 * person and declares its rule (schema/Api/Writes.ts); the stored bytes are public.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { EditImage, ImageHashPath, UploadImageQuery } from "../Catalog/EditImage.js"
import { NotFound, PayloadTooLarge, problem, ValidationFailed } from "../Problem.js"
import { WriteAuthorization } from "./Security.js"
import { declare, lenientQuery, type RouteRule, strictParams } from "./Writes.js"

/** The media types an upload may be declared as. */
export const UPLOAD_CONTENT_TYPES = ["image/jpeg", "image/png", "image/webp", "image/avif", "image/gif"] as const

/** The largest upload body: 20 MiB, refused with 413 while it is read (src/platform/BodyLimit.ts). */
export const MAX_UPLOAD_BYTES = 20 * 1024 * 1024

/** The path uploads are posted to (the body limit's upload route). */
export const UPLOAD_PATH = "/v2/media/images"

/** The rules of the media routes, by endpoint name. */
export const mediaRules = {
  uploadImage: { user: true, tenant: false, idempotent: true, quota: "media" }
} as const satisfies Record<string, RouteRule>

const UploadBody = UPLOAD_CONTENT_TYPES.map((contentType) =>
  Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType }))
)

export class MediaWriteApi extends HttpApiGroup.make("mediaWrite")
  .add(
    declare(
      "media:write",
      mediaRules.uploadImage,
      ({ headers, problems }) =>
        HttpApiEndpoint.post("uploadImage", UPLOAD_PATH, {
          query: UploadImageQuery,
          headers,
          payload: UploadBody,
          success: [
            EditImage.pipe(HttpApiSchema.status(201)),
            EditImage
          ],
          error: [problem(ValidationFailed), problem(PayloadTooLarge), ...problems]
        })
          .annotate(OpenApi.Summary, "Upload an image")
          .annotate(
            OpenApi.Description,
            "The body is the image's raw bytes (JPEG, PNG, WebP, AVIF or GIF; at most 20 MiB, else 413 " +
              "`PAYLOAD_TOO_LARGE`), declared by `Content-Type`. The picture is decoded (at most 40 megapixels), " +
              "turned upright, stripped of its metadata, fitted within the preset's box and stored as WebP. Bytes " +
              "that are not such an image, or of another format than declared, are 422 `VALIDATION_FAILED` " +
              "(`INVALID_FORMAT` on the `Content-Type` header). Answers 201 with the stored image, or 200 with " +
              "`is_deduplicated: true` when those stored bytes existed already. Each upload counts once against " +
              "the site's daily `media` quota."
          )
    )
  )
  .middleware(WriteAuthorization)
  .annotate(HttpApi.ParamsParseOptions, strictParams)
  .annotate(HttpApi.QueryParseOptions, lenientQuery)
  .annotate(OpenApi.Title, "Media")
  .annotate(OpenApi.Description, "Editors upload images (covers, screenshots) that proposals then name by hash.")
{}

export class MediaApi extends HttpApiGroup.make("media")
  .add(
    HttpApiEndpoint.get("getImage", "/v2/media/images/:hash", {
      params: ImageHashPath,
      success: Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "image/webp" })),
      error: problem(NotFound)
    })
      .annotate(OpenApi.Summary, "An uploaded image's bytes")
      .annotate(
        OpenApi.Description,
        "Public, no credential. The stored bytes, byte for byte, whose SHA-256 is the `hash`; they never change " +
          "for a URL: `Cache-Control: public, max-age=31536000, immutable`. An unknown hash is 404."
      )
  )
  .annotate(HttpApi.ParamsParseOptions, strictParams)
  .annotate(OpenApi.Title, "Media images")
  .annotate(OpenApi.Description, "Uploaded images, served as stored.")
{}
