/**
 * SQL of the company reads. `work_count` is read from the column of the caller's content gate
 * (docs/api-contract.md, "Credentials, scopes and the content limit"): `work_count` counts every
 * live work, `work_count_sfw` only the sfw ones.
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { CompanyId } from "../../../schema/Catalog/Common.js"
import type { CompanyBasic, CompanyGraphEdge, CompanyKind } from "../../../schema/Catalog/Company.js"

/** The walk's bounds; the graph's `truncated` says when the family goes beyond them. */
export const GRAPH_MAX_NODES = 60
export const GRAPH_MAX_HOPS = 4

export interface GraphNodeRow {
  readonly id: CompanyId
  readonly display_name: string
  readonly localized: CompanyBasic["localized"]
  readonly work_count: number
  readonly depth: number
  /** Companies the walk found (up to GRAPH_MAX_HOPS + 1 hops): more than the nodes means truncated. */
  readonly reachable: number
}

export class CompaniesRepo extends Context.Service<CompaniesRepo>()("catalog/CompaniesRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const workCount = (nsfw: boolean) => nsfw ? sql`c.work_count` : sql`c.work_count_sfw`
    const columns = (nsfw: boolean) =>
      sql`'company' AS object, c.id::text AS id, c.display_name, c.latin, c.lang, c.localized, c.company_kind,
        ${workCount(nsfw)} AS work_count`
    const kindFilter = (kind: CompanyKind | undefined) => kind === undefined ? sql`` : sql`AND c.company_kind = ${kind}`

    const page = (options: {
      readonly afterId: string | null
      readonly take: number
      readonly kind: CompanyKind | undefined
      readonly nsfw: boolean
    }) =>
      sql<CompanyBasic>`
        SELECT ${columns(options.nsfw)} FROM companies c
        WHERE c.live ${kindFilter(options.kind)} ${
        options.afterId === null ? sql`` : sql`AND c.id > ${options.afterId}`
      }
        ORDER BY c.id LIMIT ${options.take}
      `.pipe(Effect.orDie, Effect.withSpan("CompaniesRepo.page"))

    const byIds = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      sql<CompanyBasic>`
        SELECT ${columns(nsfw)} FROM companies c WHERE c.live AND c.id = ANY(${ids}::bigint[])
      `.pipe(Effect.orDie, Effect.withSpan("CompaniesRepo.byIds"))

    const count = (kind: CompanyKind | undefined) =>
      sql<{ readonly n: number }>`
        SELECT count(*)::int AS n FROM companies c WHERE c.live ${kindFilter(kind)}
      `.pipe(Effect.orDie, Effect.map((rows) => rows[0]?.n ?? 0), Effect.withSpan("CompaniesRepo.count"))

    /**
     * The family walk in one statement: a breadth-first search over relations in both directions,
     * through live companies only, one row per level carrying that level's new companies and every
     * company seen so far. A level is expanded only while at most GRAPH_MAX_NODES companies are
     * known (beyond that the walk is truncated whatever lies further), and at most to
     * GRAPH_MAX_HOPS + 1 hops: the extra level only tells whether the family continues. The work is
     * thus bounded by the relations of about 60 companies, however large the family. The nodes are
     * the nearest GRAPH_MAX_NODES within GRAPH_MAX_HOPS (then by id). Empty when `id` is not live.
     */
    const graph = (id: string, nsfw: boolean) =>
      sql<GraphNodeRow>`
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
      `.pipe(Effect.orDie, Effect.withSpan("CompaniesRepo.graph"))

    /** The stored relations among `ids`, as stored (never inverted). */
    const edges = (ids: ReadonlyArray<string>) =>
      sql<CompanyGraphEdge>`
        SELECT from_id::text AS from_id, to_id::text AS to_id, relation FROM company_relations
        WHERE from_id = ANY(${ids}::bigint[]) AND to_id = ANY(${ids}::bigint[])
        ORDER BY company_relations.from_id, company_relations.to_id, relation
      `.pipe(Effect.orDie, Effect.withSpan("CompaniesRepo.edges"))

    return { page, byIds, count, graph, edges } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
