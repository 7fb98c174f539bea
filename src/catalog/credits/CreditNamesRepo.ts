/**
 * SQL of credit names and their credits. Every read applies the content gate (`creditNameGate`,
 * `workGate`); SQL failures die here (docs/life-of-a-request.md, "Handlers, services and SQL").
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import {
  creditNameColumns,
  creditNameFrom,
  creditNameGate,
  type CreditNameRow,
  workBasicColumns,
  type WorkBasicRow,
  workGate
} from "./Rows.js"

/** Sorts undated works last in ascending release order (the key the works index uses). */
export const UNDATED = 2147483647

export interface NameCreditRow extends WorkBasicRow {
  readonly sort_key: number
  readonly position: number
  readonly identity: string
  readonly role_key: string
  readonly role_name: string
  readonly character_id: string | null
  readonly note: string
}

/** Keyset position of a name's credit: release key, work id, credit order, row identity. */
export interface NameCreditPosition {
  readonly sortKey: number
  readonly workId: string
  readonly position: number
  readonly identity: string
}

export interface VoiceRow extends CreditNameRow {
  readonly work_id: string
}

export class CreditNamesRepo extends Context.Service<CreditNamesRepo>()("catalog/CreditNamesRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = creditNameColumns(sql)
    const from = creditNameFrom(sql)
    const undated = sql.literal(String(UNDATED))

    /** A page in id order after `afterId` (exclusive); `take` rows at most. */
    const page = (options: { readonly afterId: string | null; readonly take: number; readonly nsfw: boolean }) =>
      sql<CreditNameRow>`
        SELECT ${columns} FROM ${from}
        WHERE ${creditNameGate(sql, options.nsfw)}
          ${options.afterId === null ? sql`` : sql`AND cn.id > ${options.afterId}::bigint`}
        ORDER BY cn.id
        LIMIT ${options.take}`.pipe(Effect.orDie, Effect.withSpan("CreditNamesRepo.page"))

    /** The visible names among `ids` (canonical, bigint-sized), in no particular order. */
    const byIds = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      ids.length === 0
        ? Effect.succeed<ReadonlyArray<CreditNameRow>>([])
        : sql<CreditNameRow>`
            SELECT ${columns} FROM ${from}
            WHERE cn.id = ANY(${ids}::bigint[]) AND ${creditNameGate(sql, nsfw)}`.pipe(
          Effect.orDie,
          Effect.withSpan("CreditNamesRepo.byIds")
        )

    /** The visible names of (public) persons, grouped by `person_id` in id order. */
    const ofPersons = (personIds: ReadonlyArray<string>, nsfw: boolean) =>
      personIds.length === 0
        ? Effect.succeed<ReadonlyArray<CreditNameRow>>([])
        : sql<CreditNameRow>`
            SELECT ${columns} FROM ${from}
            WHERE cn.person_id = ANY(${personIds}::bigint[]) AND p.id IS NOT NULL AND ${creditNameGate(sql, nsfw)}
            ORDER BY cn.person_id, cn.id`.pipe(Effect.orDie, Effect.withSpan("CreditNamesRepo.ofPersons"))

    /** The names voicing `characterId` in each of `workIds`, in each work's credit order. */
    const voices = (characterId: string, workIds: ReadonlyArray<string>) =>
      workIds.length === 0
        ? Effect.succeed<ReadonlyArray<VoiceRow>>([])
        : sql<VoiceRow>`
            SELECT c.work_id::text AS work_id, ${columns}
            FROM credits c JOIN ${from} ON cn.id = c.credit_name_id AND cn.live
            WHERE c.character_id = ${characterId}::bigint AND c.work_id = ANY(${workIds}::bigint[])
            ORDER BY c.work_id, c.position, c.identity`.pipe(Effect.orDie, Effect.withSpan("CreditNamesRepo.voices"))

    /** The credits of a name on visible works, oldest release first, after `after` (exclusive). */
    const credits = (options: {
      readonly nameId: string
      readonly after: NameCreditPosition | undefined
      readonly take: number
      readonly nsfw: boolean
    }) => {
      const after = options.after
      return sql<NameCreditRow>`
        SELECT ${workBasicColumns(sql)}, coalesce(w.released_key, ${undated}) AS sort_key, c.position, c.identity,
          c.role_key, r.role_name, c.character_id::text AS character_id, c.note
        FROM credits c
        JOIN works w ON w.id = c.work_id ${workGate(sql, options.nsfw)}
        JOIN credit_roles r ON r.role_key = c.role_key
        WHERE c.credit_name_id = ${options.nameId}::bigint
          ${
        after === undefined ? sql`` : sql`AND (coalesce(w.released_key, ${undated}), c.work_id, c.position, c.identity)
            > (${after.sortKey}::integer, ${after.workId}::bigint, ${after.position}::smallint, ${after.identity}::text)`
      }
        ORDER BY coalesce(w.released_key, ${undated}), c.work_id, c.position, c.identity
        LIMIT ${options.take}`.pipe(Effect.orDie, Effect.withSpan("CreditNamesRepo.credits"))
    }

    return { page, byIds, ofPersons, voices, credits } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
