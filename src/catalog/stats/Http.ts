import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { CatalogStats } from "../../../schema/Catalog/Stats.js"
import { conditionalJson } from "../../platform/Conditional.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Stats } from "./Stats.js"

export const HttpStatsLive = HttpApiBuilder.group(
  CatalogApi,
  "stats",
  (handlers) =>
    Effect.gen(function*() {
      const stats = yield* Stats
      return handlers.handle("getStats", () =>
        Effect.flatMap(Principal, (p) => stats.get(p.contentLimit)).pipe(
          Effect.flatMap((counts) => conditionalJson(CatalogStats, counts))
        ), runToCompletion)
    })
).pipe(Layer.provide(Stats.layer))
