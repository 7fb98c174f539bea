/**
 * SQL of characters, their traits and appearances. Every read applies the content gate
 * (docs/api-contract.md, "Credentials, scopes and the content limit"); `characters.nsfw` marks a
 * character that appears only in nsfw works. Suppressed roster and credit rows (migrations/0026) are
 * read as absent. SQL failures die here (docs/life-of-a-request.md, "Handlers, services and SQL").
 */
import { Context, Effect, Layer, Schema, Struct } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { CharacterBasic, CharacterTrait, Measurements, RosterRole } from "../../../schema/Catalog/Character.js"
import { Gender, Spoiler } from "../../../schema/Catalog/Common.js"
import { UNDATED } from "../credits/CreditNamesRepo.js"
import { WorkBasicColumns, workBasicColumns, workGate } from "../credits/Rows.js"
import { IdsRequest, PageRequest } from "../shared/SqlRequests.js"

export const CharacterRow = Schema.Struct({
  ...Struct.pick(CharacterBasic.fields, ["id", "display_name", "latin", "lang", "localized"]),
  birthday: Schema.NullOr(Schema.String),
  blood_type: Schema.NullOr(Schema.Literals(["a", "b", "ab", "o"])),
  gender: Schema.NullOr(Gender),
  height_cm: Schema.NullOr(Schema.Int),
  weight_kg: Schema.NullOr(Schema.Int),
  ...Measurements.fields,
  /** Null also when the character it is an instance of is not visible. */
  instance_of_id: Schema.NullOr(Schema.String)
})
export type CharacterRow = typeof CharacterRow.Type

export const TraitRow = Schema.Struct({
  character_id: Schema.String,
  ...Struct.pick(CharacterTrait.fields, ["id", "display_name", "localized"]),
  group_name: CharacterTrait.fields.group,
  ...Struct.pick(CharacterTrait.fields, ["group_localized", "spoiler", "is_sexual", "is_lie"])
})
export type TraitRow = typeof TraitRow.Type

export const AppearanceRow = Schema.Struct({
  ...WorkBasicColumns,
  sort_key: Schema.Int,
  roster_role: RosterRole,
  spoiler: Spoiler,
  /** Null when the work is reached only through a voice credit. */
  identity: Schema.NullOr(Schema.String)
})
export type AppearanceRow = typeof AppearanceRow.Type

/** Keyset position of an appearance: the work's release key (undated last), then its id. */
export const AppearancePosition = Schema.Struct({ sortKey: Schema.Int, workId: Schema.String })
export type AppearancePosition = typeof AppearancePosition.Type

const AppearancesRequest = Schema.Struct({
  characterId: Schema.String,
  after: Schema.UndefinedOr(AppearancePosition),
  take: Schema.Int,
  nsfw: Schema.Boolean
})

export class CharactersRepo extends Context.Service<CharactersRepo>()("catalog/CharactersRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const undated = sql.literal(String(UNDATED))

    /** Whether the character `alias` is visible: live, and for `sfw` not nsfw-only. */
    const gate = (alias: string, nsfw: boolean) =>
      nsfw ? sql`${sql(alias)}.live` : sql`${sql(alias)}.live AND NOT ${sql(alias)}.nsfw`

    const select = (nsfw: boolean) =>
      sql`SELECT c.id::text AS id, c.display_name, c.latin, c.lang, c.localized, c.birthday, c.blood_type,
          c.gender, c.height_cm, c.weight_kg, c.bust_cm, c.waist_cm, c.hips_cm, c.cup,
          io.id::text AS instance_of_id
        FROM characters c LEFT JOIN characters io ON io.id = c.instance_of_id AND ${gate("io", nsfw)}`

    const findPage = SqlSchema.findAll({
      Request: PageRequest,
      Result: CharacterRow,
      execute: (options) =>
        sql`
          ${select(options.nsfw)}
          WHERE ${gate("c", options.nsfw)}
            ${options.afterId === null ? sql`` : sql`AND c.id > ${options.afterId}::bigint`}
          ORDER BY c.id
          LIMIT ${options.take}`
    })
    /** A page in id order after `afterId` (exclusive); `take` rows at most. */
    const page = (options: typeof PageRequest.Type) =>
      findPage(options).pipe(Effect.orDie, Effect.withSpan("CharactersRepo.page"))

    const findByIds = SqlSchema.findAll({
      Request: IdsRequest,
      Result: CharacterRow,
      execute: ({ ids, nsfw }) => sql`${select(nsfw)} WHERE c.id = ANY(${ids}::bigint[]) AND ${gate("c", nsfw)}`
    })
    /** The visible characters among `ids` (canonical, bigint-sized), in no particular order. */
    const byIds = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      ids.length === 0
        ? Effect.succeed([])
        : findByIds({ ids, nsfw }).pipe(Effect.orDie, Effect.withSpan("CharactersRepo.byIds"))

    /**
     * The traits of `ids`, grouped under their root trait, in trait order. Sexual traits are nsfw
     * content: an `sfw` credential does not get them.
     */
    const findTraits = SqlSchema.findAll({
      Request: IdsRequest,
      Result: TraitRow,
      execute: ({ ids, nsfw }) =>
        sql`
        SELECT ct.character_id::text AS character_id, t.id::text AS id, t.display_name, t.localized,
          g.display_name AS group_name, coalesce(g.localized, '{}'::jsonb) AS group_localized, ct.spoiler,
          t.is_sexual, ct.is_lie
        FROM character_traits ct
        JOIN traits t ON t.id = ct.trait_id
        LEFT JOIN traits g ON g.id = t.root_id
        WHERE ct.character_id = ANY(${ids}::bigint[]) ${nsfw ? sql`` : sql`AND NOT t.is_sexual`}
        ORDER BY ct.character_id, t.root_id NULLS FIRST, t.id`
    })
    const traits = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      findTraits({ ids, nsfw }).pipe(Effect.orDie, Effect.withSpan("CharactersRepo.traits"))

    /**
     * The visible works `characterId` appears in: its roster rows, plus the works that credit a
     * voice for it without a roster row (no identity, role `unknown`, spoiler `none`). A suppressed
     * row counts as no row: a work whose roster row is suppressed but whose voice credit is not is
     * reached through the voice credit.
     */
    const findAppearances = SqlSchema.findAll({
      Request: AppearancesRequest,
      Result: AppearanceRow,
      execute: (options) => {
        const { after, characterId } = options
        return sql`
        WITH r AS (
          SELECT wc.work_id, wc.roster_role, wc.spoiler, wc.identity
          FROM work_characters wc WHERE wc.character_id = ${characterId}::bigint AND NOT wc.suppressed
          UNION ALL
          SELECT DISTINCT c.work_id, 'unknown', 'none', NULL::text
          FROM credits c
          WHERE c.character_id = ${characterId}::bigint AND NOT c.suppressed AND NOT EXISTS (
            SELECT 1 FROM work_characters wc
            WHERE wc.work_id = c.work_id AND wc.character_id = c.character_id AND NOT wc.suppressed
          )
        )
        SELECT ${workBasicColumns(sql)}, coalesce(w.released_key, ${undated}) AS sort_key, r.roster_role, r.spoiler,
          r.identity
        FROM r JOIN works w ON w.id = r.work_id ${workGate(sql, options.nsfw)}
        ${
          after === undefined
            ? sql``
            : sql`WHERE (coalesce(w.released_key, ${undated}), w.id) > (${after.sortKey}::integer, ${after.workId}::bigint)`
        }
        ORDER BY coalesce(w.released_key, ${undated}), w.id
        LIMIT ${options.take}`
      }
    })
    const appearances = (options: typeof AppearancesRequest.Type) =>
      findAppearances(options).pipe(Effect.orDie, Effect.withSpan("CharactersRepo.appearances"))

    return { page, byIds, traits, appearances } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
