import { Effect, Layer } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { CatalogApi } from "../../../schema/Api/CatalogApi.js"
import { Principal } from "../../../schema/Api/Security.js"
import { Character } from "../../../schema/Catalog/Character.js"
import { conditionalJson } from "../../platform/Conditional.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { Characters } from "./Characters.js"

/**
 * Whether the caller's credential may see nsfw works
 * (docs/api-contract.md, "Credentials, scopes and the content limit").
 */
const nsfw = Effect.map(Principal, (p) => p.contentLimit === "nsfw")

export const HttpCharactersLive = HttpApiBuilder.group(
  CatalogApi,
  "characters",
  (handlers) =>
    Effect.gen(function*() {
      const characters = yield* Characters
      return handlers
        .handle(
          "listCharacters",
          ({ query }) => Effect.flatMap(nsfw, (n) => characters.list(query, n)),
          runToCompletion
        )
        .handle(
          "getCharacter",
          ({ params, query }) =>
            Effect.flatMap(nsfw, (n) => characters.get(params.id, query.view ?? "basic", query.include ?? [], n))
              .pipe(Effect.flatMap((character) => conditionalJson(Character, character))),
          runToCompletion
        )
        .handle(
          "listCharacterAppearances",
          ({ params, query }) => Effect.flatMap(nsfw, (n) => characters.appearances(params.id, query, n)),
          runToCompletion
        )
    })
).pipe(Layer.provide(Characters.layer))
