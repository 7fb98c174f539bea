import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { Tag } from "../../../schema/Catalog/Tag.js"
import { conditionalJson } from "../../platform/Conditional.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Tags } from "./Tags.js"

export const HttpTagsLive = HttpApiBuilder.group(
  CatalogApi,
  "tags",
  (handlers) =>
    Effect.gen(function*() {
      const tags = yield* Tags
      return handlers
        .handle("listTags", ({ query }) =>
          Effect.flatMap(Principal, (p) => tags.list(query, p.contentLimit)), runToCompletion)
        .handle("getTag", ({ params }) =>
          Effect.flatMap(Principal, (p) =>
            tags.get(params.id, p.contentLimit)).pipe(
              Effect.flatMap((tag) =>
                conditionalJson(Tag, tag)
              )
            ), runToCompletion)
    })
).pipe(Layer.provide(Tags.layer))
