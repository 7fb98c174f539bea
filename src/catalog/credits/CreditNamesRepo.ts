/**
 * SQL of credit names and their credits. Every read applies the content gate (`creditNameGate`,
 * `workGate`) and reads suppressed credits (migrations/0026) as absent; SQL failures die here
 * (docs/life-of-a-request.md, "Handlers, services and SQL").
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { IdsRequest, PageRequest } from "../shared/SqlRequests.js"
import {
  CreditNameColumns,
  creditNameColumns,
  creditNameFrom,
  creditNameGate,
  CreditNameRow,
  WorkBasicColumns,
  workBasicColumns,
  workGate
} from "./Rows.js"

/** Sorts undated works last in ascending release order (the key the works index uses). */
export const UNDATED = 2147483647

export const NameCreditRow = Schema.Struct({
  ...WorkBasicColumns,
  sort_key: Schema.Int,
  position: Schema.Int,
  identity: Schema.String,
  role_key: Schema.String,
  role_name: Schema.String,
  character_id: Schema.NullOr(Schema.String),
  note: Schema.String
})
export type NameCreditRow = typeof NameCreditRow.Type

/** Keyset position of a name's credit: release key, work id, credit order, row identity. */
export const NameCreditPosition = Schema.Struct({
  sortKey: Schema.Int,
  workId: Schema.String,
  position: Schema.Int,
  identity: Schema.String
})
export type NameCreditPosition = typeof NameCreditPosition.Type

export const VoiceRow = Schema.Struct({ work_id: Schema.String, ...CreditNameColumns })
export type VoiceRow = typeof VoiceRow.Type

export class CreditNamesRepo extends Context.Service<CreditNamesRepo>()("catalog/CreditNamesRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const columns = creditNameColumns(sql)
    const from = creditNameFrom(sql)
    const undated = sql.literal(String(UNDATED))

    const findPage = SqlSchema.findAll({
      Request: PageRequest,
      Result: CreditNameRow,
      execute: (options) =>
        sql`
          SELECT ${columns} FROM ${from}
          WHERE ${creditNameGate(sql, options.nsfw)}
            ${options.afterId === null ? sql`` : sql`AND cn.id > ${options.afterId}::bigint`}
          ORDER BY cn.id
          LIMIT ${options.take}`
    })
    /** A page in id order after `afterId` (exclusive); `take` rows at most. */
    const page = (options: typeof PageRequest.Type) =>
      findPage(options).pipe(Effect.orDie, Effect.withSpan("CreditNamesRepo.page"))

    const findByIds = SqlSchema.findAll({
      Request: IdsRequest,
      Result: CreditNameRow,
      execute: ({ ids, nsfw }) =>
        sql`
          SELECT ${columns} FROM ${from}
          WHERE cn.id = ANY(${ids}::bigint[]) AND ${creditNameGate(sql, nsfw)}`
    })
    /** The visible names among `ids` (canonical, bigint-sized), in no particular order. */
    const byIds = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      ids.length === 0
        ? Effect.succeed([])
        : findByIds({ ids, nsfw }).pipe(Effect.orDie, Effect.withSpan("CreditNamesRepo.byIds"))

    const findOfPersons = SqlSchema.findAll({
      Request: IdsRequest,
      Result: CreditNameRow,
      execute: ({ ids, nsfw }) =>
        sql`
          SELECT ${columns} FROM ${from}
          WHERE cn.person_id = ANY(${ids}::bigint[]) AND p.id IS NOT NULL AND ${creditNameGate(sql, nsfw)}
          ORDER BY cn.person_id, cn.id`
    })
    /** The visible names of (public) persons, grouped by `person_id` in id order. */
    const ofPersons = (personIds: ReadonlyArray<string>, nsfw: boolean) =>
      personIds.length === 0
        ? Effect.succeed([])
        : findOfPersons({ ids: personIds, nsfw }).pipe(Effect.orDie, Effect.withSpan("CreditNamesRepo.ofPersons"))

    const findVoices = SqlSchema.findAll({
      Request: Schema.Struct({ characterId: Schema.String, workIds: Schema.Array(Schema.String) }),
      Result: VoiceRow,
      execute: ({ characterId, workIds }) =>
        sql`
          SELECT c.work_id::text AS work_id, ${columns}
          FROM credits c JOIN ${from} ON cn.id = c.credit_name_id AND cn.live
          WHERE c.character_id = ${characterId}::bigint AND c.work_id = ANY(${workIds}::bigint[])
            AND NOT c.suppressed
          ORDER BY c.work_id, c.position, c.identity`
    })
    /** The names voicing `characterId` in each of `workIds`, in each work's credit order. */
    const voices = (characterId: string, workIds: ReadonlyArray<string>) =>
      workIds.length === 0
        ? Effect.succeed([])
        : findVoices({ characterId, workIds }).pipe(Effect.orDie, Effect.withSpan("CreditNamesRepo.voices"))

    const CreditsRequest = Schema.Struct({
      nameId: Schema.String,
      after: Schema.UndefinedOr(NameCreditPosition),
      take: Schema.Int,
      nsfw: Schema.Boolean
    })
    const findCredits = SqlSchema.findAll({
      Request: CreditsRequest,
      Result: NameCreditRow,
      execute: (options) => {
        const after = options.after
        return sql`
        SELECT ${workBasicColumns(sql)}, coalesce(w.released_key, ${undated}) AS sort_key, c.position, c.identity,
          c.role_key, r.role_name, c.character_id::text AS character_id, c.note
        FROM credits c
        JOIN works w ON w.id = c.work_id ${workGate(sql, options.nsfw)}
        JOIN credit_roles r ON r.role_key = c.role_key
        WHERE c.credit_name_id = ${options.nameId}::bigint AND NOT c.suppressed
          ${
          after === undefined ?
            sql`` :
            sql`AND (coalesce(w.released_key, ${undated}), c.work_id, c.position, c.identity)
            > (${after.sortKey}::integer, ${after.workId}::bigint, ${after.position}::smallint, ${after.identity}::text)`
        }
        ORDER BY coalesce(w.released_key, ${undated}), c.work_id, c.position, c.identity
        LIMIT ${options.take}`
      }
    })
    /** The credits of a name on visible works, oldest release first, after `after` (exclusive). */
    const credits = (options: typeof CreditsRequest.Type) =>
      findCredits(options).pipe(Effect.orDie, Effect.withSpan("CreditNamesRepo.credits"))

    return { page, byIds, ofPersons, voices, credits } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
