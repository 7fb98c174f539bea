/**
 * Handlers of the mirroring group (schema/Api/MirrorApi.ts).
 *
 * Pages are written with `JSON.stringify` rather than through the `ListChange`/`ListRedirect`
 * encoders: every value comes from constrained columns (digit ids, the closed `target_object`
 * vocabulary, timestamps formatted by PostgreSQL), and a mirror pages millions of rows, where the
 * schema walk costs about nine times the serialization. test/catalog/Mirror.test.ts decodes every
 * item with the schemas.
 */
import { Effect, Layer } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Mirror } from "./Mirror.js"

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
              Effect.map((page) => HttpServerResponse.jsonUnsafe(page))
            ), runToCompletion)
        .handle("listRedirects", ({ query }) =>
          Effect.flatMap(Principal, ({ contentLimit }) =>
            mirror.redirects({ ...query, contentLimit })).pipe(
              Effect.map((page) =>
                HttpServerResponse.jsonUnsafe(page)
              )
            ), runToCompletion)
    })
).pipe(Layer.provide(Mirror.layer))
