import { HttpApiBuilder } from "effect/http-api"
import { Effect, Layer } from "effect"
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
        .handle("listEngines", ({ urlParams }) =>
          Effect.flatMap(Principal, (p) => engines.list(urlParams, p.contentLimit)), runToCompletion)
        .handle("getEngine", ({ path }) =>
          Effect.flatMap(Principal, (p) =>
            engines.get(path.id, p.contentLimit)).pipe(
              Effect.flatMap((engine) =>
                conditionalJson(Engine, engine)
              )
            ), runToCompletion)
    })
).pipe(Layer.provide(Engines.layer))
