import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { Principal, type PrincipalShape } from "../../../schema/Api/Security.js"
import { WorksCaching } from "../../../schema/Api/WorksApi.js"
import { etagOf } from "../../platform/Conditional.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Replay } from "../shared/Replay.js"
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
      const replay = yield* Replay
      return handlers
        // Lists are JSON text written by the service (items come from PostgreSQL as JSON). The three
        // reads are stored by what their `CachedBy` declares (schema/Api/WorksApi.ts, `WorksCaching`).
        .handle("listWorks", ({ query }) =>
          replay.respond(WorksCaching.list, { query }, (key) =>
            Effect.map(
              works.list(key.url.query, "works", key.content_limit === "nsfw"),
              (json) => ({ json })
            )), runToCompletion)
        .handle("searchWorks", ({ query }) =>
          replay.respond(WorksCaching.search, { query }, (key) =>
            Effect.map(
              works.list(key.url.query, "search", key.content_limit === "nsfw"),
              (json) => ({ json })
            )), runToCompletion)
        .handle("getWork", ({ params, query }) =>
          replay.respond(WorksCaching.get, { params, query }, (key) =>
            Effect.map(
              works.get(key.url.params.id, key.url.query, key.content_limit === "nsfw"),
              (json) => ({ json, etag: etagOf(json) })
            )), runToCompletion)
        .handle("listWorkCharacters", ({ params, query }) =>
          Effect.flatMap(nsfw, (n) => works.characters(params.id, query, n)), runToCompletion)
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
