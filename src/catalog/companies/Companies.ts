/**
 * Company reads: list and batch lanes, detail, and the family graph, all under the caller's content
 * gate for `work_count` (docs/api-contract.md, "Credentials, scopes and the content limit").
 */
import { Context, Effect, Layer } from "effect"
import type { CompanyInclude, ListCompaniesParams } from "../../../schema/Api/CompaniesApi.js"
import type { ContentLimit } from "../../../schema/Api/Security.js"
import type { Company, CompanyBasic, CompanyGraph, CompanyGraphNode } from "../../../schema/Catalog/Company.js"
import { DEFAULT_LIMIT } from "../../../schema/Catalog/Query.js"
import { Cursors } from "../pagination/Cursor.js"
import { EntityParts } from "../shared/EntityParts.js"
import { Gone } from "../shared/Gone.js"
import { bigintId, idListLanes } from "../shared/Lanes.js"
import { CompaniesRepo } from "./CompaniesRepo.js"

export class Companies extends Context.Service<Companies>()("catalog/Companies", {
  make: Effect.gen(function*() {
    const repo = yield* CompaniesRepo
    const parts = yield* EntityParts
    const gone = yield* Gone
    const cursors = yield* Cursors

    /** Adds the includes asked for to a page of companies: one query per include token. */
    const withIncludes = (
      rows: ReadonlyArray<CompanyBasic>,
      include: ReadonlySet<CompanyInclude>
    ): Effect.Effect<ReadonlyArray<Company>> =>
      Effect.gen(function*() {
        if (rows.length === 0 || include.size === 0) return rows
        const ids = rows.map((row) => row.id)
        const [aliases, intros, links, logos] = yield* Effect.all([
          include.has("aliases") ? parts.aliases("company", ids) : Effect.succeed(undefined),
          include.has("intros") ? parts.intros("company", ids) : Effect.succeed(undefined),
          include.has("links") ? parts.links("company", ids) : Effect.succeed(undefined),
          include.has("logo") ? parts.images("company", "logo", ids) : Effect.succeed(undefined)
        ], { concurrency: "unbounded" })
        return rows.map((row): Company => {
          const logo = logos?.get(row.id)
          return {
            ...row,
            ...(aliases ? { aliases: aliases.get(row.id) ?? [] } : {}),
            ...(intros ? { intros: intros.get(row.id) ?? [] } : {}),
            ...(links ? { links: links.get(row.id) ?? [] } : {}),
            ...(logo ? { logo } : {})
          }
        })
      })

    const list = Effect.fn("Companies.list")(function*(params: ListCompaniesParams, limit: ContentLimit) {
      const nsfw = limit === "nsfw"
      const result = yield* idListLanes({
        collection: "companies",
        limit: params.limit ?? DEFAULT_LIMIT,
        cursor: params.cursor,
        ids: params.ids,
        filters: { company_kind: params.company_kind }
      }, {
        page: (afterId, take) => repo.page({ afterId, take, kind: params.company_kind, nsfw }),
        batch: (ids) => repo.byIds(ids, nsfw)
      }).pipe(Effect.provideService(Cursors, cursors))
      // Intros and links are served on the detail and batch lanes only.
      const include = new Set(params.include ?? [])
      if (result.lane === "cursor") {
        include.delete("intros")
        include.delete("links")
      }
      const items = yield* withIncludes(result.items, include)
      const total = params.include_total === true && result.lane === "cursor"
        ? yield* repo.count(params.company_kind)
        : undefined
      return {
        object: "list" as const,
        items,
        ...(result.next_cursor !== undefined ? { next_cursor: result.next_cursor } : {}),
        ...(result.missing !== undefined ? { missing: result.missing } : {}),
        ...(total !== undefined ? { total } : {})
      }
    })

    const get = Effect.fn("Companies.get")(
      function*(id: string, include: ReadonlyArray<CompanyInclude>, limit: ContentLimit) {
        const key = bigintId(id)
        const rows = key === undefined ? [] : yield* repo.byIds([key], limit === "nsfw")
        const row = rows[0]
        if (row === undefined) return yield* gone.missing("company", id)
        const [company] = yield* withIncludes([row], new Set(include))
        return company!
      }
    )

    const graph = Effect.fn("Companies.graph")(
      function*(id: string, include: ReadonlyArray<"logo">, limit: ContentLimit) {
        const key = bigintId(id)
        const rows = key === undefined ? [] : yield* repo.graph(key, limit === "nsfw")
        if (rows.length === 0) return yield* gone.missing("company", id)
        const ids = rows.map((row) => row.id)
        const [edges, logos] = yield* Effect.all([
          repo.edges(ids),
          include.includes("logo") ? parts.images("company", "logo", ids) : Effect.succeed(undefined)
        ], { concurrency: "unbounded" })
        const nodes = rows.map(({ display_name, id, localized, work_count }): CompanyGraphNode => {
          const logo = logos?.get(id)
          return { object: "company", id, display_name, localized, work_count, ...(logo ? { logo } : {}) }
        })
        const result: CompanyGraph = {
          object: "company_graph",
          nodes,
          edges,
          truncated: rows[0]!.reachable > rows.length
        }
        return result
      }
    )

    return { list, get, graph } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(
    Layer.provide([CompaniesRepo.layer, EntityParts.layer, Gone.layer, Cursors.layer])
  )
}
