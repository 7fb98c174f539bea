import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { Person } from "../../../schema/Catalog/Person.js"
import { conditionalJson } from "../../platform/Conditional.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Persons } from "./Persons.js"

/**
 * Whether the caller's credential may see nsfw works
 * (docs/api-contract.md, "Credentials, scopes and the content limit").
 */
const nsfw = Effect.map(Principal, (p) => p.contentLimit === "nsfw")

export const HttpPersonsLive = HttpApiBuilder.group(
  CatalogApi,
  "persons",
  (handlers) =>
    Effect.gen(function*() {
      const persons = yield* Persons
      return handlers
        .handle("listPersons", ({ query }) => Effect.flatMap(nsfw, (n) => persons.list(query, n)), runToCompletion)
        .handle("getPerson", ({ params, query }) =>
          Effect.flatMap(nsfw, (n) =>
            persons.get(params.id, query.include ?? [], n)).pipe(
              Effect.flatMap((person) => conditionalJson(Person, person))
            ), runToCompletion)
    })
).pipe(Layer.provide(Persons.layer))
