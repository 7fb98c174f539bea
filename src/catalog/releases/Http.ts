import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { Release } from "../../../schema/Catalog/Release.js"
import { conditionalJson } from "../../platform/Conditional.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Releases } from "./Releases.js"

export const HttpReleasesLive = HttpApiBuilder.group(
  CatalogApi,
  "releases",
  (handlers) =>
    Effect.gen(function*() {
      const releases = yield* Releases
      return handlers
        .handle("listReleases", ({ query }) =>
          Effect.flatMap(Principal, (p) => releases.list(query, p.contentLimit)), runToCompletion)
        .handle("getRelease", ({ params, query }) =>
          Effect.flatMap(Principal, (p) =>
            releases.get(params.id, query.include ?? [], p.contentLimit)).pipe(
              Effect.flatMap((release) =>
                conditionalJson(Release, release)
              )
            ), runToCompletion)
    })
).pipe(Layer.provide(Releases.layer))
