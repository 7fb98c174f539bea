import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer } from "effect"
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
        .handle("listWorks", ({ urlParams }) =>
          hot.respond((p) =>
            Effect.map(works.list(urlParams, "works", nsfwOf(p)), (json) => ({ json }))
          ), runToCompletion)
        .handle("searchWorks", ({ urlParams }) =>
          hot.respond((p) =>
            Effect.map(works.list(urlParams, "search", nsfwOf(p)), (json) => ({ json }))
          ), runToCompletion)
        .handle("getWork", ({ path, urlParams }) =>
          hot.respond((p) =>
            cache.through(
              JSON.stringify(["works.get", nsfwOf(p), path.id, urlParams]),
              Effect.map(works.get(path.id, urlParams, nsfwOf(p)), (json) => ({ json, etag: etagOf(json) })),
              (body) =>
                body.json.length
            )
          ), runToCompletion)
        .handle("listWorkCharacters", ({ path, urlParams }) =>
          Effect.flatMap(nsfw, (n) =>
            works.characters(path.id, urlParams, n)), runToCompletion)
        .handle("listWorkCredits", ({ path, urlParams }) =>
          Effect.flatMap(nsfw, (n) =>
            works.credits(path.id, urlParams, n)), runToCompletion)
        .handle("listWorkCovers", ({ path, urlParams }) =>
          Effect.flatMap(nsfw, (n) =>
            works.covers(path.id, urlParams, n)), runToCompletion)
        .handle("listWorkIntros", ({ path, urlParams }) =>
          Effect.flatMap(nsfw, (n) =>
            works.intros(path.id, urlParams, n)), runToCompletion)
    })
).pipe(Layer.provide(Works.layer))
