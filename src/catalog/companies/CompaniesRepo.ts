/**
 * SQL of the company reads. `work_count` is read from the column of the caller's content gate
 * (docs/api-contract.md, "Credentials, scopes and the content limit"): `work_count` counts every
 * live work, `work_count_sfw` only the sfw ones.
 */
import { Context, Effect, Layer, Schema, Struct } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { CompanyBasic, CompanyGraphEdge, CompanyGraphNode, CompanyKind } from "../../../schema/Catalog/Company.js"
import { CountRow, IdsRequest, PageRequest } from "../shared/SqlRequests.js"

/** The walk's bounds; the graph's `truncated` says when the family goes beyond them. */
export const GRAPH_MAX_NODES = 60
export const GRAPH_MAX_HOPS = 4

export const GraphNodeRow = Schema.Struct({
  ...Struct.pick(CompanyGraphNode.fields, ["id", "display_name", "localized", "work_count"]),
  depth: Schema.Int,
  /** Companies the walk found (up to GRAPH_MAX_HOPS + 1 hops): more than the nodes means truncated. */
  reachable: Schema.Int
})
export type GraphNodeRow = typeof GraphNodeRow.Type

const KindRequest = Schema.UndefinedOr(CompanyKind)

export class CompaniesRepo extends Context.Service<CompaniesRepo>()("catalog/CompaniesRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const workCount = (nsfw: boolean) => nsfw ? sql`c.work_count` : sql`c.work_count_sfw`
    const columns = (nsfw: boolean) =>
      sql`'company' AS object, c.id::text AS id, c.display_name, c.latin, c.lang, c.localized, c.company_kind,
        ${workCount(nsfw)} AS work_count`
    const kindFilter = (kind: CompanyKind | undefined) => kind === undefined ? sql`` : sql`AND c.company_kind = ${kind}`

    const findPage = SqlSchema.findAll({
      Request: PageRequest.mapFields(Struct.assign({ kind: KindRequest })),
      Result: CompanyBasic,
      execute: (options) =>
        sql`
          SELECT ${columns(options.nsfw)} FROM companies c
          WHERE c.live ${kindFilter(options.kind)} ${
          options.afterId === null ? sql`` : sql`AND c.id > ${options.afterId}`
        }
          ORDER BY c.id LIMIT ${options.take}
        `
    })
    const page = (options: typeof PageRequest.Type & { readonly kind: CompanyKind | undefined }) =>
      findPage(options).pipe(Effect.orDie, Effect.withSpan("CompaniesRepo.page"))

    const findByIds = SqlSchema.findAll({
      Request: IdsRequest,
      Result: CompanyBasic,
      execute: ({ ids, nsfw }) =>
        sql`SELECT ${columns(nsfw)} FROM companies c WHERE c.live AND c.id = ANY(${ids}::bigint[])`
    })
    const byIds = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      findByIds({ ids, nsfw }).pipe(Effect.orDie, Effect.withSpan("CompaniesRepo.byIds"))

    const findCount = SqlSchema.findOne({
      Request: KindRequest,
      Result: CountRow,
      execute: (kind) => sql`SELECT count(*)::int AS n FROM companies c WHERE c.live ${kindFilter(kind)}`
    })
    const count = (kind: CompanyKind | undefined) =>
      findCount(kind).pipe(Effect.orDie, Effect.map((row) => row.n), Effect.withSpan("CompaniesRepo.count"))

    /**
     * The family walk in one statement: a breadth-first search over relations in both directions,
     * through live companies only, one row per level carrying that level's new companies and every
     * company seen so far. A level is expanded only while at most GRAPH_MAX_NODES companies are
     * known (beyond that the walk is truncated whatever lies further), and at most to
     * GRAPH_MAX_HOPS + 1 hops: the extra level only tells whether the family continues. The work is
     * thus bounded by the relations of about 60 companies, however large the family. The nodes are
     * the nearest GRAPH_MAX_NODES within GRAPH_MAX_HOPS (then by id). Empty when `id` is not live.
     */
    const findGraph = SqlSchema.findAll({
      Request: Schema.Struct({ id: Schema.String, nsfw: Schema.Boolean }),
      Result: GraphNodeRow,
      execute: ({ id, nsfw }) =>
        sql`
        WITH RECURSIVE bfs (depth, frontier, seen) AS (
          SELECT 0, ARRAY[c.id], ARRAY[c.id] FROM companies c WHERE c.id = ${id} AND c.live
          UNION ALL
          SELECT b.depth + 1, n.ids, b.seen || n.ids
          FROM bfs b
          CROSS JOIN LATERAL (
            SELECT coalesce(array_agg(x.id ORDER BY x.id), '{}') AS ids
            FROM (
              SELECT r.to_id AS id FROM company_relations r WHERE r.from_id = ANY(b.frontier)
              UNION
              SELECT r.from_id FROM company_relations r WHERE r.to_id = ANY(b.frontier)
            ) x
            JOIN companies c ON c.id = x.id AND c.live
            WHERE x.id <> ALL(b.seen)
          ) n
          WHERE b.depth <= ${GRAPH_MAX_HOPS} AND cardinality(b.frontier) > 0
            AND cardinality(b.seen) <= ${GRAPH_MAX_NODES}
        ),
        levels AS (SELECT depth, unnest(frontier) AS id FROM bfs),
        picked AS (
          SELECT id, depth FROM levels WHERE depth <= ${GRAPH_MAX_HOPS} ORDER BY depth, id LIMIT ${GRAPH_MAX_NODES}
        )
        SELECT c.id::text AS id, c.display_name, c.localized, ${workCount(nsfw)} AS work_count, p.depth,
          (SELECT count(*) FROM levels)::int AS reachable
        FROM picked p JOIN companies c ON c.id = p.id
        ORDER BY p.depth, p.id
      `
    })
    const graph = (id: string, nsfw: boolean) =>
      findGraph({ id, nsfw }).pipe(Effect.orDie, Effect.withSpan("CompaniesRepo.graph"))

    /** The stored relations among `ids`, as stored (never inverted). */
    const findEdges = SqlSchema.findAll({
      Request: Schema.Array(Schema.String),
      Result: CompanyGraphEdge,
      execute: (ids) =>
        sql`
          SELECT from_id::text AS from_id, to_id::text AS to_id, relation FROM company_relations
          WHERE from_id = ANY(${ids}::bigint[]) AND to_id = ANY(${ids}::bigint[])
          ORDER BY company_relations.from_id, company_relations.to_id, relation
        `
    })
    const edges = (ids: ReadonlyArray<string>) =>
      findEdges(ids).pipe(Effect.orDie, Effect.withSpan("CompaniesRepo.edges"))

    return { page, byIds, count, graph, edges } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
