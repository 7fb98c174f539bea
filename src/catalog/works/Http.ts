import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { Work } from "../../../schema/Catalog/Work.js"
import { conditionalJson } from "../../platform/Conditional.js"
import { Works } from "./Works.js"

/** Whether the caller's credential may see nsfw works (DECISIONS 4). */
const nsfw = Effect.map(Principal, (p) => p.contentLimit === "nsfw")

/** Lists are written as JSON text by the service (items come from PostgreSQL as JSON). */
const json = (body: string) => HttpServerResponse.text(body, { contentType: "application/json" })

export const HttpWorksLive = HttpApiBuilder.group(
  CatalogApi,
  "works",
  (handlers) =>
    Effect.gen(function*() {
      const works = yield* Works
      return handlers
        .handle("listWorks", ({ urlParams }) =>
          Effect.flatMap(nsfw, (n) => works.list(urlParams, "works", n)).pipe(Effect.map(json)))
        .handle("searchWorks", ({ urlParams }) =>
          Effect.flatMap(nsfw, (n) =>
            works.list(urlParams, "search", n)).pipe(Effect.map(json)))
        .handle("getWork", ({ path, urlParams }) =>
          Effect.flatMap(nsfw, (n) =>
            works.get(path.id, urlParams, n)).pipe(
              Effect.flatMap((work) =>
                conditionalJson(Work, work)
              )
            ))
        .handle("listWorkCharacters", ({ path, urlParams }) =>
          Effect.flatMap(nsfw, (n) => works.characters(path.id, urlParams, n)))
        .handle("listWorkCredits", ({ path, urlParams }) =>
          Effect.flatMap(nsfw, (n) =>
            works.credits(path.id, urlParams, n)))
        .handle("listWorkCovers", ({ path, urlParams }) =>
          Effect.flatMap(nsfw, (n) =>
            works.covers(path.id, urlParams, n)))
        .handle("listWorkIntros", ({ path, urlParams }) =>
          Effect.flatMap(nsfw, (n) =>
            works.intros(path.id, urlParams, n)))
    })
).pipe(Layer.provide(Works.Default))
