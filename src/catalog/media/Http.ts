/**
 * Handlers of the media groups (schema/Api/MediaApi.ts). An upload goes through the write runner
 * with the rule its route declares; its body was bounded while it was read (src/platform/BodyLimit.ts).
 */
import { Effect, Layer, Option } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { mediaRules } from "../../../schema/Api/MediaApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { NotFound } from "../../../schema/Problem.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { parseMediaType } from "../../platform/MediaType.js"
import { Writes } from "../writes/Writes.js"
import { Media } from "./Media.js"

const HttpMediaWriteGroup = HttpApiBuilder.group(
  CatalogApi,
  "mediaWrite",
  (handlers) =>
    Effect.gen(function*() {
      const media = yield* Media
      const writes = yield* Writes
      return handlers.handle("uploadImage", ({ headers, payload, query }) =>
        Effect.gen(function*() {
          const principal = yield* Principal
          const request = yield* HttpServerRequest.HttpServerRequest
          const declared = parseMediaType(request.headers["content-type"] ?? "")
          const contentType = declared === undefined ? "" : `${declared.type}/${declared.subtype}`
          return yield* writes.run({
            principal,
            rule: mediaRules.uploadImage,
            idempotencyKey: headers["idempotency-key"],
            payload: media.fingerprint(query.preset, contentType, payload),
            write: media.upload(query.preset, contentType, payload),
            weight: payload.length
          })
        }), runToCompletion)
    })
)

const HttpMediaGroup = HttpApiBuilder.group(
  CatalogApi,
  "media",
  (handlers) =>
    Effect.map(Media, (media) =>
      handlers.handle("getImage", ({ params }) =>
        media.find(params.hash).pipe(
          Effect.flatMap(Option.match({
            onNone: () => Effect.fail(new NotFound({ detail: "No image is stored under this hash." })),
            onSome: (stored) =>
              Effect.succeed(HttpServerResponse.uint8Array(stored.bytes, {
                contentType: stored.contentType,
                headers: {
                  "cache-control": "public, max-age=31536000, immutable",
                  "x-content-type-options": "nosniff",
                  "content-security-policy": "default-src 'none'"
                }
              }))
          }))
        )))
)

export const HttpMediaLive = Layer.mergeAll(HttpMediaWriteGroup, HttpMediaGroup).pipe(Layer.provide(Media.layer))
