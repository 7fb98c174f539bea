/**
 * Characters: the collection with its `ids=` batch lane, the detail read with its
 * includes, and the works a character appears in.
 */
import { Schema } from "effect"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { NotModified, RequiredScope } from "../Annotations.js"
import { ListAppearance } from "../Catalog/Appearance.js"
import { Character, ListCharacter } from "../Catalog/Character.js"
import { CharacterId } from "../Catalog/Common.js"
import { CursorParam, IdList, Limit, tokenList } from "../Catalog/Query.js"
import {
  EntityMerged,
  InvalidCursor,
  LimitTooLarge,
  NotFound,
  problem,
  TooManyIds,
  UnknownInclude
} from "../Problem.js"
import { Authorization } from "./Security.js"

/** Include tokens of the character detail read. */
export const characterIncludes = ["aliases", "intros", "refs", "traits", "image", "figure"] as const
export type CharacterInclude = (typeof characterIncludes)[number]

export const CharacterView = Schema.Literals(["basic", "full"]).annotate({
  description: "`basic` (default) or `full`: full adds birthday, blood_type, gender, height_cm, weight_kg, " +
    "measurements and instance_of_id (each null when unrecorded)."
})

/** Every failing parameter is reported, not only the first (parse options of the path and the query). */
const strict = { errors: "all" } as const

export const ListCharactersParams = Schema.Struct({
  limit: Schema.optional(Limit),
  cursor: Schema.optional(CursorParam),
  ids: Schema.optional(IdList),
  view: Schema.optional(CharacterView)
})
export type ListCharactersParams = typeof ListCharactersParams.Type

export const GetCharacterParams = Schema.Struct({
  view: Schema.optional(CharacterView),
  include: Schema.optional(
    tokenList(
      characterIncludes,
      "UNKNOWN_INCLUDE",
      "Extra members: `aliases` (EntityName[]), `intros` (Intro[]), `refs` (Ref[]), `traits` (CharacterTrait[]; " +
        "sexual traits only for nsfw credentials), `image` and `figure` (Image, only when one exists)."
    )
  )
})
export type GetCharacterParams = typeof GetCharacterParams.Type

export const AppearancesParams = Schema.Struct({
  limit: Schema.optional(Limit),
  cursor: Schema.optional(CursorParam)
})
export type AppearancesParams = typeof AppearancesParams.Type

export const CharacterPath = Schema.Struct({ id: CharacterId })

const gateNote = "An `sfw` credential never sees a character that appears only in nsfw works."

export class CharactersApi extends HttpApiGroup.make("characters")
  .add(
    HttpApiEndpoint.get("listCharacters", "/v2/catalog/characters", {
      query: ListCharactersParams,
      success: ListCharacter,
      error: [
        problem(LimitTooLarge),
        problem(InvalidCursor),
        problem(TooManyIds)
      ]
    })
      .annotate(OpenApi.Summary, "List characters")
      .annotate(
        OpenApi.Description,
        "Characters in id order, `limit` per page (1..100, default 20), continued with `cursor` = the previous " +
          "`next_cursor`; the last page has no `next_cursor`. Batch lane: `ids=` (up to 100 ids, no cursor) returns " +
          "the visible ones in the order asked and lists the others (unknown, merged away, not visible) in " +
          "`missing[]`. `view=full` adds the profile fields. Includes are offered on the detail read only. " +
          gateNote
      )
  )
  .add(
    HttpApiEndpoint.get("getCharacter", "/v2/catalog/characters/:id", {
      params: CharacterPath,
      query: GetCharacterParams,
      success: [
        Character,
        NotModified.pipe(HttpApiSchema.status(304))
      ],
      error: [
        problem(UnknownInclude),
        problem(NotFound),
        problem(EntityMerged)
      ]
    })
      .annotate(OpenApi.Summary, "Get a character")
      .annotate(
        OpenApi.Description,
        "One character. `view=full` adds birthday (`MM-DD`), blood_type, gender, height_cm, weight_kg, " +
          "measurements and instance_of_id. `include=` tokens (comma-separated): `aliases`, `intros`, `refs`, " +
          "`traits`, `image`, `figure`; an unknown token is `UNKNOWN_INCLUDE`. A merged-away id is 404 " +
          "`ENTITY_MERGED` naming `current_id` (never a redirect). Sends a strong `ETag`; `If-None-Match` gives " +
          "304. " + gateNote
      )
  )
  .add(
    HttpApiEndpoint.get("listCharacterAppearances", "/v2/catalog/characters/:id/appearances", {
      params: CharacterPath,
      query: AppearancesParams,
      success: ListAppearance,
      error: [
        problem(LimitTooLarge),
        problem(InvalidCursor),
        problem(NotFound),
        problem(EntityMerged)
      ]
    })
      .annotate(OpenApi.Summary, "List a character's appearances")
      .annotate(
        OpenApi.Description,
        "The works a character appears in, oldest release first (undated last, then by work id), each with the " +
          "work at view=basic, the roster role, spoiler level, the voices in that work (`[]` when none) and the " +
          "roster row's opaque `identity`. A work reached only through a voice credit has no `identity`, " +
          "roster_role `unknown` and spoiler `none`. Cursor-paged like every list. Appearances in " +
          "nsfw works are omitted for an `sfw` credential. " + gateNote
      )
  )
  .middleware(Authorization)
  .annotate(HttpApi.ParamsParseOptions, strict)
  .annotate(HttpApi.QueryParseOptions, strict)
  .annotate(RequiredScope, "catalog:read")
  .annotate(OpenApi.Title, "Characters")
  .annotate(OpenApi.Description, "Characters of the catalog's works, their profiles and appearances.")
{}
