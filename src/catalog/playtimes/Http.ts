/**
 * Handlers of the playtimes group (schema/Api/PlaytimesApi.ts). The batch goes through the write
 * runner with the rule its route declares.
 */
import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { playtimeRules } from "../../../schema/Api/PlaytimesApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Writes } from "../writes/Writes.js"
import { Playtimes } from "./Playtimes.js"

const HttpPlaytimesGroup = HttpApiBuilder.group(
  CatalogApi,
  "playtimes",
  (handlers) =>
    Effect.gen(function*() {
      const playtimes = yield* Playtimes
      const writes = yield* Writes
      return handlers
        .handle("batchPlaytimes", ({ headers, payload }) =>
          Effect.flatMap(Principal, (principal) =>
            writes.run({
              principal,
              rule: playtimeRules.batchPlaytimes,
              idempotencyKey: headers["idempotency-key"],
              payload,
              write: playtimes.batch(principal, payload)
            })), runToCompletion)
        .handle("listPlaytimes", ({ query }) => Effect.flatMap(Principal, (p) => playtimes.list(p, query)))
    })
)

export const HttpPlaytimesLive = HttpPlaytimesGroup.pipe(Layer.provide(Playtimes.layer))
