import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { Principal, type PrincipalShape } from "../../../schema/Api/Security.js"
import { etagOf } from "../../platform/Conditional.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { HotResponses } from "../shared/HotResponses.js"
import { ReadCache } from "../shared/ReadCache.js"
import { Works } from "./Works.js"

/**
 * Whether the caller's credential may see nsfw works
 * (docs/api-contract.md, "Credentials, scopes and the content limit").
 */
const nsfwOf = (p: PrincipalShape) => p.contentLimit === "nsfw"
const nsfw = Effect.map(Principal, nsfwOf)

export const HttpWorksLive = HttpApiBuilder.group(
  CatalogApi,
  "works",
  (handlers) =>
    Effect.gen(function*() {
      const works = yield* Works
      const cache = yield* ReadCache
      const hot = yield* HotResponses
      return handlers
        // Lists are JSON text written by the service (items come from PostgreSQL as JSON).
        .handle("listWorks", ({ query }) =>
          hot.respond((p) => Effect.map(works.list(query, "works", nsfwOf(p)), (json) => ({ json }))), runToCompletion)
        .handle("searchWorks", ({ query }) =>
          hot.respond((p) =>
            Effect.map(works.list(query, "search", nsfwOf(p)), (json) => ({ json }))
          ), runToCompletion)
        .handle("getWork", ({ params, query }) =>
          hot.respond((p) =>
            cache.through(
              JSON.stringify(["works.get", nsfwOf(p), params.id, query]),
              Effect.map(works.get(params.id, query, nsfwOf(p)), (json) => ({ json, etag: etagOf(json) })),
              (body) =>
                body.json.length
            )
          ), runToCompletion)
        .handle("listWorkCharacters", ({ params, query }) =>
          Effect.flatMap(nsfw, (n) =>
            works.characters(params.id, query, n)), runToCompletion)
        .handle("listWorkCredits", ({ params, query }) =>
          Effect.flatMap(nsfw, (n) =>
            works.credits(params.id, query, n)), runToCompletion)
        .handle("listWorkCovers", ({ params, query }) =>
          Effect.flatMap(nsfw, (n) =>
            works.covers(params.id, query, n)), runToCompletion)
        .handle("listWorkIntros", ({ params, query }) =>
          Effect.flatMap(nsfw, (n) =>
            works.intros(params.id, query, n)), runToCompletion)
    })
).pipe(Layer.provide(Works.layer))
