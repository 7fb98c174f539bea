/**
 * SQL of characters, their traits and appearances. Every read applies the content gate
 * (docs/api-contract.md, "Credentials, scopes and the content limit"); `characters.nsfw` marks a
 * character that appears only in nsfw works. SQL failures die here (docs/life-of-a-request.md,
 * "Handlers, services and SQL").
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { Localized } from "../../../schema/Catalog/Common.js"
import { UNDATED } from "../credits/CreditNamesRepo.js"
import { workBasicColumns, type WorkBasicRow, workGate } from "../credits/Rows.js"

export interface CharacterRow {
  readonly id: string
  readonly display_name: string
  readonly latin: string | null
  readonly lang: string | null
  readonly localized: Localized
  readonly birthday: string | null
  readonly blood_type: "a" | "b" | "ab" | "o" | null
  readonly gender: "male" | "female" | "other" | null
  readonly height_cm: number | null
  readonly weight_kg: number | null
  readonly bust_cm: number | null
  readonly waist_cm: number | null
  readonly hips_cm: number | null
  readonly cup: string | null
  /** Null also when the character it is an instance of is not visible. */
  readonly instance_of_id: string | null
}

export interface TraitRow {
  readonly character_id: string
  readonly id: string
  readonly display_name: string
  readonly localized: Localized
  readonly group_name: string | null
  readonly group_localized: Localized
  readonly spoiler: "none" | "minor" | "major"
  readonly is_sexual: boolean
  readonly is_lie: boolean
}

export interface AppearanceRow extends WorkBasicRow {
  readonly sort_key: number
  readonly roster_role: "main" | "secondary" | "appears" | "unknown"
  readonly spoiler: "none" | "minor" | "major"
  /** Null when the work is reached only through a voice credit. */
  readonly identity: string | null
}

/** Keyset position of an appearance: the work's release key (undated last), then its id. */
export interface AppearancePosition {
  readonly sortKey: number
  readonly workId: string
}

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

    /** A page in id order after `afterId` (exclusive); `take` rows at most. */
    const page = (options: { readonly afterId: string | null; readonly take: number; readonly nsfw: boolean }) =>
      sql<CharacterRow>`
        ${select(options.nsfw)}
        WHERE ${gate("c", options.nsfw)}
          ${options.afterId === null ? sql`` : sql`AND c.id > ${options.afterId}::bigint`}
        ORDER BY c.id
        LIMIT ${options.take}`.pipe(Effect.orDie, Effect.withSpan("CharactersRepo.page"))

    /** The visible characters among `ids` (canonical, bigint-sized), in no particular order. */
    const byIds = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      ids.length === 0
        ? Effect.succeed<ReadonlyArray<CharacterRow>>([])
        : sql<CharacterRow>`
            ${select(nsfw)}
            WHERE c.id = ANY(${ids}::bigint[]) AND ${gate("c", nsfw)}`.pipe(
          Effect.orDie,
          Effect.withSpan("CharactersRepo.byIds")
        )

    /**
     * The traits of `ids`, grouped under their root trait, in trait order. Sexual traits are nsfw
     * content: an `sfw` credential does not get them.
     */
    const traits = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      sql<TraitRow>`
        SELECT ct.character_id::text AS character_id, t.id::text AS id, t.display_name, t.localized,
          g.display_name AS group_name, coalesce(g.localized, '{}'::jsonb) AS group_localized, ct.spoiler,
          t.is_sexual, ct.is_lie
        FROM character_traits ct
        JOIN traits t ON t.id = ct.trait_id
        LEFT JOIN traits g ON g.id = t.root_id
        WHERE ct.character_id = ANY(${ids}::bigint[]) ${nsfw ? sql`` : sql`AND NOT t.is_sexual`}
        ORDER BY ct.character_id, t.root_id NULLS FIRST, t.id`.pipe(
        Effect.orDie,
        Effect.withSpan("CharactersRepo.traits")
      )

    /**
     * The visible works `characterId` appears in: its roster rows, plus the works that credit a
     * voice for it without a roster row (no identity, role `unknown`, spoiler `none`).
     */
    const appearances = (options: {
      readonly characterId: string
      readonly after: AppearancePosition | undefined
      readonly take: number
      readonly nsfw: boolean
    }) => {
      const { after, characterId } = options
      return sql<AppearanceRow>`
        WITH r AS (
          SELECT wc.work_id, wc.roster_role, wc.spoiler, wc.identity
          FROM work_characters wc WHERE wc.character_id = ${characterId}::bigint
          UNION ALL
          SELECT DISTINCT c.work_id, 'unknown', 'none', NULL::text
          FROM credits c
          WHERE c.character_id = ${characterId}::bigint AND NOT EXISTS (
            SELECT 1 FROM work_characters wc WHERE wc.work_id = c.work_id AND wc.character_id = c.character_id
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
        LIMIT ${options.take}`.pipe(Effect.orDie, Effect.withSpan("CharactersRepo.appearances"))
    }

    return { page, byIds, traits, appearances } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
