import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { CreditName } from "../../../schema/Catalog/Credit.js"
import { conditionalJson } from "../../platform/Conditional.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { CreditNames } from "./CreditNames.js"

/**
 * Whether the caller's credential may see nsfw works
 * (docs/api-contract.md, "Credentials, scopes and the content limit").
 */
const nsfw = Effect.map(Principal, (p) => p.contentLimit === "nsfw")

export const HttpCreditNamesLive = HttpApiBuilder.group(
  CatalogApi,
  "creditNames",
  (handlers) =>
    Effect.gen(function*() {
      const names = yield* CreditNames
      return handlers
        .handle("listCreditNames", ({ query }) => Effect.flatMap(nsfw, (n) => names.list(query, n)), runToCompletion)
        .handle("getCreditName", ({ params, query }) =>
          Effect.flatMap(nsfw, (n) =>
            names.get(params.id, query.include ?? [], n)).pipe(
              Effect.flatMap((name) => conditionalJson(CreditName, name))
            ), runToCompletion)
        .handle("listNameCredits", ({ params, query }) =>
          Effect.flatMap(nsfw, (n) =>
            names.credits(params.id, query, n)), runToCompletion)
    })
).pipe(Layer.provide(CreditNames.layer))
