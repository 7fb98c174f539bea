import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { Engine } from "../../../schema/Catalog/Engine.js"
import { conditionalJson } from "../../platform/Conditional.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Engines } from "./Engines.js"

export const HttpEnginesLive = HttpApiBuilder.group(
  CatalogApi,
  "engines",
  (handlers) =>
    Effect.gen(function*() {
      const engines = yield* Engines
      return handlers
        .handle("listEngines", ({ query }) =>
          Effect.flatMap(Principal, (p) => engines.list(query, p.contentLimit)), runToCompletion)
        .handle("getEngine", ({ params }) =>
          Effect.flatMap(Principal, (p) =>
            engines.get(params.id, p.contentLimit)).pipe(
              Effect.flatMap((engine) =>
                conditionalJson(Engine, engine)
              )
            ), runToCompletion)
    })
).pipe(Layer.provide(Engines.layer))
