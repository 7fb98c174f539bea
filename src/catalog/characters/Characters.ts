/**
 * Characters: the id-ordered collection and its batch lane, the detail read with `view=full` and
 * the detail-only includes, and a character's appearances with their voices. Includes and voices
 * are fetched once per page or record.
 */
import { Context, Effect, Layer } from "effect"
import type { AppearancesParams, CharacterInclude, ListCharactersParams } from "../../../schema/Api/CharactersApi.js"
import type { Appearance } from "../../../schema/Catalog/Appearance.js"
import type { Character, CharacterTrait } from "../../../schema/Catalog/Character.js"
import type { CharacterId, LangTag, TraitId } from "../../../schema/Catalog/Common.js"
import { DEFAULT_LIMIT } from "../../../schema/Catalog/Query.js"
import { CreditNamesRepo } from "../credits/CreditNamesRepo.js"
import { groupBy, toCreditNameBasic, toWorkBasic } from "../credits/Rows.js"
import { Cursors } from "../pagination/Cursor.js"
import { EntityParts } from "../shared/EntityParts.js"
import { Gone } from "../shared/Gone.js"
import { keysetPage } from "../shared/Keyset.js"
import { bigintId, idListLanes } from "../shared/Lanes.js"
import { type AppearanceRow, type CharacterRow, CharactersRepo, type TraitRow } from "./CharactersRepo.js"

export type CharacterView = "basic" | "full"

const skip = Effect.succeed(undefined)

const toTrait = (row: TraitRow): CharacterTrait => ({
  object: "character_trait",
  id: row.id as TraitId,
  display_name: row.display_name,
  group: row.group_name,
  localized: row.localized,
  group_localized: row.group_localized,
  spoiler: row.spoiler,
  is_sexual: row.is_sexual,
  is_lie: row.is_lie
})

/** The character at `view`: view=full adds the profile, each part null when unrecorded. */
const toCharacter = (row: CharacterRow, view: CharacterView): Character => ({
  object: "character",
  id: row.id as CharacterId,
  display_name: row.display_name,
  latin: row.latin,
  lang: row.lang as LangTag | null,
  localized: row.localized,
  ...(view === "full"
    ? {
      birthday: row.birthday,
      blood_type: row.blood_type,
      gender: row.gender,
      height_cm: row.height_cm,
      weight_kg: row.weight_kg,
      measurements: row.bust_cm === null && row.waist_cm === null && row.hips_cm === null && row.cup === null
        ? null
        : { bust_cm: row.bust_cm, waist_cm: row.waist_cm, hips_cm: row.hips_cm, cup: row.cup },
      instance_of_id: row.instance_of_id as CharacterId | null
    }
    : {})
})

export class Characters extends Context.Service<Characters>()("catalog/Characters", {
  make: Effect.gen(function*() {
    const repo = yield* CharactersRepo
    const names = yield* CreditNamesRepo
    const parts = yield* EntityParts
    const cursors = yield* Cursors
    const gone = yield* Gone

    const list = Effect.fn("Characters.list")(function*(params: ListCharactersParams, nsfw: boolean) {
      const result = yield* idListLanes({
        collection: "characters",
        limit: params.limit ?? DEFAULT_LIMIT,
        cursor: params.cursor,
        ids: params.ids,
        filters: {}
      }, {
        page: (afterId, take) => repo.page({ afterId, take, nsfw }),
        batch: (ids) => repo.byIds(ids, nsfw)
      }).pipe(Effect.provideService(Cursors, cursors))
      const view = params.view ?? "basic"
      return {
        object: "list" as const,
        items: result.items.map((row) => toCharacter(row, view)),
        ...(result.next_cursor === undefined ? {} : { next_cursor: result.next_cursor }),
        ...(result.missing === undefined ? {} : { missing: result.missing })
      }
    })

    /** The visible character `id`, or the 404 that fits (ENTITY_MERGED or NOT_FOUND). */
    const visible = Effect.fn("Characters.visible")(function*(id: string, nsfw: boolean) {
      const key = bigintId(id)
      const [row] = key === undefined ? [] : yield* repo.byIds([key], nsfw)
      if (row === undefined) return yield* gone.missing("character", id)
      return row
    })

    /** The detail face: the character at `view` plus the includes asked for, one query per include. */
    const get = Effect.fn("Characters.get")(function*(
      id: string,
      view: CharacterView,
      include: ReadonlyArray<CharacterInclude>,
      nsfw: boolean
    ) {
      const row = yield* visible(id, nsfw)
      const wants = new Set(include)
      const ids = [row.id]
      const [aliases, intros, refs, traits, image, figure] = yield* Effect.all([
        wants.has("aliases") ? parts.aliases("character", ids) : skip,
        wants.has("intros") ? parts.intros("character", ids) : skip,
        wants.has("refs") ? parts.refs("character", ids) : skip,
        wants.has("traits") ? repo.traits(ids, nsfw) : skip,
        wants.has("image") ? parts.images("character", "image", ids) : skip,
        wants.has("figure") ? parts.images("character", "figure", ids) : skip
      ], { concurrency: "unbounded" })
      const imageOf = image?.get(row.id)
      const figureOf = figure?.get(row.id)
      const character: Character = {
        ...toCharacter(row, view),
        ...(aliases === undefined ? {} : { aliases: aliases.get(row.id) ?? [] }),
        ...(intros === undefined ? {} : { intros: intros.get(row.id) ?? [] }),
        ...(refs === undefined ? {} : { refs: refs.get(row.id) ?? [] }),
        ...(traits === undefined ? {} : { traits: traits.map(toTrait) }),
        ...(imageOf === undefined ? {} : { image: imageOf }),
        ...(figureOf === undefined ? {} : { figure: figureOf })
      }
      return character
    })

    /** The works a character appears in, oldest release first, with the voices in each. */
    const appearances = Effect.fn("Characters.appearances")(
      function*(id: string, params: AppearancesParams, nsfw: boolean) {
        const character = yield* visible(id, nsfw)
        const page = yield* keysetPage<AppearanceRow>(cursors, {
          collection: "characters/appearances",
          sort: "released_asc",
          filters: { appearances_of: character.id },
          cursor: params.cursor,
          limit: params.limit,
          fetch: (after, take) =>
            repo.appearances({
              characterId: character.id,
              after: after === undefined ? undefined : { sortKey: Number(after.key[0]), workId: after.id },
              take,
              nsfw
            }),
          positionOf: (row) => ({ sort: "released_asc", key: [row.sort_key], id: row.w_id })
        })
        const voiceRows = yield* names.voices(character.id, page.items.map((row) => row.w_id))
        const voices = groupBy(voiceRows, (row) => row.work_id, toCreditNameBasic)
        return {
          object: "list" as const,
          items: page.items.map((row): Appearance => ({
            object: "appearance",
            work: toWorkBasic(row),
            roster_role: row.roster_role,
            spoiler: row.spoiler,
            voices: voices.get(row.w_id) ?? [],
            ...(row.identity === null ? {} : { identity: row.identity })
          })),
          ...(page.next_cursor === undefined ? {} : { next_cursor: page.next_cursor })
        }
      }
    )

    return { list, get, appearances } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(
    Layer.provide([CharactersRepo.layer, CreditNamesRepo.layer, EntityParts.layer, Cursors.layer, Gone.layer])
  )
}
