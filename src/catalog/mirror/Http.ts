/**
 * Handlers of the mirroring group (schema/Api/MirrorApi.ts).
 *
 * Pages are JSON text (Mirror.ts): the envelope is written from `ListChange`/`ListRedirect`, the items
 * with `JSON.stringify` rather than through the item encoders: every value comes from constrained
 * columns (digit ids, the closed `target_object` vocabulary, timestamps formatted by PostgreSQL), and
 * a mirror pages millions of rows, where the schema walk costs about nine times the serialization.
 * test/catalog/Mirror.test.ts decodes every item with the schemas.
 */
import { Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Mirror } from "./Mirror.js"

const respond = (json: string) => HttpServerResponse.text(json, { contentType: "application/json" })

export const HttpMirrorLive = HttpApiBuilder.group(
  CatalogApi,
  "mirror",
  (handlers) =>
    Effect.gen(function*() {
      const mirror = yield* Mirror
      return handlers
        .handle("listChanges", ({ query }) =>
          Effect.flatMap(Principal, ({ contentLimit }) =>
            mirror.changes({ ...query, contentLimit })).pipe(
              Effect.map(respond)
            ), runToCompletion)
        .handle("listRedirects", ({ query }) =>
          Effect.flatMap(Principal, ({ contentLimit }) =>
            mirror.redirects({ ...query, contentLimit })).pipe(
              Effect.map(respond)
            ), runToCompletion)
    })
).pipe(Layer.provide(Mirror.layer))
