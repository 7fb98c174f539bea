/**
 * SQL of the release reads. Content gate (docs/api-contract.md,
 * "Credentials, scopes and the content limit"): a release is visible when it and its work are live
 * and, for an `sfw` credential, neither the release nor its work is nsfw (an all-ages console
 * edition of an nsfw work would otherwise name a work the credential may not see).
 */
import { Context, Effect, Layer, Schema, Struct } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { Statement } from "effect/sql"
import { CompanyBasic } from "../../../schema/Catalog/Company.js"
import { EngineRef } from "../../../schema/Catalog/Engine.js"
import { Release, type ReleaseCompany } from "../../../schema/Catalog/Release.js"
import { rfc3339Sql } from "../shared/Rfc3339.js"
import { IdsRequest, PageRequest } from "../shared/SqlRequests.js"

/** A stored part of a partial date (`released_year`, `_month`, `_day`: smallint). */
export const DatePart = Schema.NullOr(Schema.Int)

/** `YYYY`, `YYYY-MM` or `YYYY-MM-DD` from the stored parts; null when undated. */
export const partialDate = (year: number | null, month: number | null, day: number | null): string | null => {
  if (year === null) return null
  const pad = (n: number) => String(n).padStart(2, "0")
  const y = String(year).padStart(4, "0")
  if (month === null) return y
  return day === null ? `${y}-${pad(month)}` : `${y}-${pad(month)}-${pad(day)}`
}

/** The visibility of `r` (releases) joined to `w` (works) under a content limit. */
export const releaseGate = (sql: SqlClient.SqlClient, nsfw: boolean): Statement.Fragment =>
  nsfw ? sql`r.live AND w.live` : sql`r.live AND w.live AND NOT r.nsfw AND NOT w.nsfw`

const ReleaseRow = Schema.Struct({
  ...Struct.pick(Release.fields, ["id", "work_id", "display_name", "latin", "lang", "localized"]),
  released_year: DatePart,
  released_month: DatePart,
  released_day: DatePart,
  ...Struct.pick(Release.fields, ["languages", "platforms", "media"]),
  nsfw: Schema.Boolean,
  ...Struct.pick(Release.fields, ["min_age", "release_kind", "is_official", "is_patch", "is_freeware", "voiced"]),
  engine_id: Schema.NullOr(EngineRef.fields.id),
  engine_name: Schema.NullOr(EngineRef.fields.display_name),
  ...Struct.pick(Release.fields, ["gtin", "catalog_number"]),
  /** Written by PostgreSQL (rfc3339Sql). */
  updated_at: Schema.String
})
type ReleaseRow = typeof ReleaseRow.Type

/** A company of a release, with the release's roles for it. */
const ReleaseCompanyRow = Schema.Struct({
  release_id: Schema.String,
  developer: Schema.Boolean,
  publisher: Schema.Boolean,
  ...CompanyBasic.fields
})

/** A release without its companies (filled in by one query per page) and includes. */
export type ReleaseBase = Omit<Release, "companies" | "refs" | "links">

const toRelease = (row: ReleaseRow): ReleaseBase => ({
  object: "release",
  id: row.id,
  work_id: row.work_id,
  display_name: row.display_name,
  latin: row.latin,
  lang: row.lang,
  localized: row.localized,
  released: partialDate(row.released_year, row.released_month, row.released_day),
  languages: row.languages,
  platforms: row.platforms,
  media: row.media,
  content_rating: row.nsfw ? "nsfw" : "sfw",
  min_age: row.min_age,
  release_kind: row.release_kind,
  is_official: row.is_official,
  is_patch: row.is_patch,
  is_freeware: row.is_freeware,
  voiced: row.voiced,
  engine: row.engine_id === null || row.engine_name === null
    ? null
    : { id: row.engine_id, display_name: row.engine_name },
  gtin: row.gtin,
  catalog_number: row.catalog_number,
  updated_at: row.updated_at
})

export class ReleasesRepo extends Context.Service<ReleasesRepo>()("catalog/ReleasesRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const select = sql`
      SELECT r.id::text AS id, r.work_id::text AS work_id, r.display_name, r.latin, r.lang, r.localized,
        r.released_year, r.released_month, r.released_day, r.languages, r.platforms, r.media, r.nsfw, r.min_age,
        r.release_kind, r.is_official, r.is_patch, r.is_freeware, r.voiced, r.engine_id::text AS engine_id,
        e.display_name AS engine_name, r.gtin, r.catalog_number,
        ${sql.literal(rfc3339Sql("r.updated_at"))} AS updated_at
      FROM releases r JOIN works w ON w.id = r.work_id LEFT JOIN engines e ON e.id = r.engine_id`

    const findPage = SqlSchema.findAll({
      Request: PageRequest.mapFields(Struct.assign({ workId: Schema.UndefinedOr(Schema.String) })),
      Result: ReleaseRow,
      execute: (options) =>
        sql`
          ${select}
          WHERE ${releaseGate(sql, options.nsfw)}
            ${options.workId === undefined ? sql`` : sql`AND r.work_id = ${options.workId}`}
            ${options.afterId === null ? sql`` : sql`AND r.id > ${options.afterId}`}
          ORDER BY r.id LIMIT ${options.take}
        `
    })
    const page = (options: typeof PageRequest.Type & { readonly workId: string | undefined }) =>
      findPage(options).pipe(
        Effect.orDie,
        Effect.map((rows) => rows.map(toRelease)),
        Effect.withSpan("ReleasesRepo.page")
      )

    const findByIds = SqlSchema.findAll({
      Request: IdsRequest,
      Result: ReleaseRow,
      execute: ({ ids, nsfw }) => sql`${select} WHERE ${releaseGate(sql, nsfw)} AND r.id = ANY(${ids}::bigint[])`
    })
    const byIds = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      findByIds({ ids, nsfw }).pipe(
        Effect.orDie,
        Effect.map((rows) => rows.map(toRelease)),
        Effect.withSpan("ReleasesRepo.byIds")
      )

    const findCompanies = SqlSchema.findAll({
      Request: IdsRequest,
      Result: ReleaseCompanyRow,
      execute: ({ ids, nsfw }) =>
        sql`
          SELECT rc.release_id::text AS release_id, rc.developer, rc.publisher,
            'company' AS object, c.id::text AS id, c.display_name, c.latin, c.lang, c.localized, c.company_kind,
            ${nsfw ? sql`c.work_count` : sql`c.work_count_sfw`} AS work_count
          FROM release_companies rc JOIN companies c ON c.id = rc.company_id
          WHERE rc.release_id = ANY(${ids}::bigint[])
          ORDER BY rc.release_id, rc.developer DESC, rc.company_id
        `
    })
    /** The companies of each release (developers first), with `work_count` under the gate. */
    const companies = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      findCompanies({ ids, nsfw }).pipe(
        Effect.orDie,
        Effect.map((rows) => {
          const out = new Map<string, Array<ReleaseCompany>>()
          for (const { developer, publisher, release_id, ...company } of rows) {
            const roles: ReleaseCompany["roles"] = developer && publisher
              ? ["developer", "publisher"]
              : developer
              ? ["developer"]
              : ["publisher"]
            const entry: ReleaseCompany = { company, roles }
            const list = out.get(release_id)
            if (list === undefined) out.set(release_id, [entry])
            else list.push(entry)
          }
          return out
        }),
        Effect.withSpan("ReleasesRepo.companies")
      )

    return { page, byIds, companies } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
