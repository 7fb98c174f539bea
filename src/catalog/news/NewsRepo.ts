/**
 * The news tables (migrations/0029_news.ts): news sources, items and their work links. Statement
 * failures are defects here; the write runner retries a transaction whose failure is retryable.
 */
import { Context, Effect, Layer, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { NewsLane } from "../../../schema/Catalog/News.js"
import { rfc3339Sql } from "../shared/Rfc3339.js"

export const NewsRow = Schema.Struct({
  id: Schema.String,
  source: Schema.String,
  site: Schema.String,
  title: Schema.String,
  summary: Schema.String,
  source_url: Schema.String,
  lane: NewsLane,
  published_at: Schema.String,
  banner_hash: Schema.String,
  work_ids: Schema.Array(Schema.String),
  created_at: Schema.String
})
export type NewsRow = typeof NewsRow.Type

export const SourceRow = Schema.Struct({
  source: Schema.String,
  site: Schema.String,
  active: Schema.Boolean,
  created_at: Schema.String,
  updated_at: Schema.String
})
export type SourceRow = typeof SourceRow.Type

/** The page position of a news item: its `published_at` (as the wire writes it) and id. */
export interface NewsPosition {
  readonly publishedAt: string
  readonly id: string
}

export class NewsRepo extends Context.Service<NewsRepo>()("catalog/NewsRepo", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /** The content gate on the work `w` (docs/api-contract.md, the content limit). */
    const gate = (nsfw: boolean) => nsfw ? sql`TRUE` : sql`NOT w.nsfw`

    /**
     * The columns of the item `n`, with the linked works the reader may see (served, and not nsfw
     * for an sfw reader) in the order given.
     */
    const columns = (nsfw: boolean) =>
      sql`
        n.id::text AS id, n.source, n.site, n.title, n.summary, n.source_url, n.lane,
        ${sql.literal(rfc3339Sql("n.published_at"))} AS published_at, n.banner_hash,
        coalesce((
          SELECT array_agg(l.work_id::text ORDER BY l.position) FROM news_item_works l
          JOIN works w ON w.id = l.work_id
          WHERE l.news_id = n.id AND w.live AND ${gate(nsfw)}
        ), '{}'::text[]) AS work_ids,
        ${sql.literal(rfc3339Sql("n.created_at"))} AS created_at`

    const sourceColumns = sql.literal(
      `s.source, s.site, s.active, ${rfc3339Sql("s.created_at")} AS created_at, ${
        rfc3339Sql("s.updated_at")
      } AS updated_at`
    )

    /** The source, share-locked for the rest of the transaction (a disable waits for the post). */
    const source = (name: string) =>
      SqlSchema.findAll({
        Request: Schema.String,
        Result: SourceRow,
        execute: (name) => sql`SELECT ${sourceColumns} FROM news_sources s WHERE s.source = ${name} FOR SHARE`
      })(name).pipe(Effect.map((rows) => rows[0]), Effect.orDie)

    /** Binds a new source to `site`; undefined when the name is taken. */
    const createSource = (name: string, site: string) =>
      SqlSchema.findAll({
        Request: Schema.Struct({ name: Schema.String, site: Schema.String }),
        Result: SourceRow,
        execute: ({ name, site }) =>
          sql`
            WITH s AS (
              INSERT INTO news_sources (source, site) VALUES (${name}, ${site})
              ON CONFLICT (source) DO NOTHING RETURNING *)
            SELECT ${sourceColumns} FROM s`
      })({ name, site }).pipe(Effect.map((rows) => rows[0]), Effect.orDie)

    /** Disables a source; undefined when there is none. */
    const disableSource = (name: string) =>
      SqlSchema.findAll({
        Request: Schema.String,
        Result: SourceRow,
        execute: (name) =>
          sql`
            WITH s AS (
              UPDATE news_sources SET active = false, updated_at = now() WHERE source = ${name} RETURNING *)
            SELECT ${sourceColumns} FROM s`
      })(name).pipe(Effect.map((rows) => rows[0]), Effect.orDie)

    /** Which of `ids` (canonical) are works the reader may link: served, and not nsfw for an sfw reader. */
    const visibleWorks = (ids: ReadonlyArray<string>, nsfw: boolean) =>
      ids.length === 0
        ? Effect.succeed(new Set<string>())
        : Effect.map(
          sql<{ id: string }>`
            SELECT w.id::text AS id FROM works w
            WHERE w.id = ANY(${ids}::bigint[]) AND w.live AND ${gate(nsfw)}`,
          (rows) => new Set(rows.map((r) => r.id))
        ).pipe(Effect.orDie)

    /**
     * Inserts the item and its links; undefined when an item with its `source_url` exists (also one
     * a concurrent transaction committed first: the insert waits for it, then does nothing).
     */
    const insert = (item: {
      readonly source: string
      readonly site: string
      readonly title: string
      readonly summary: string
      readonly sourceUrl: string
      readonly lane: string
      readonly publishedAt: string | undefined
      readonly bannerHash: string
      readonly workIds: ReadonlyArray<string>
    }) =>
      Effect.gen(function*() {
        const [inserted] = yield* sql<{ id: string }>`
          INSERT INTO news_items (source, site, title, summary, source_url, lane, published_at, banner_hash)
          VALUES (${item.source}, ${item.site}, ${item.title}, ${item.summary}, ${item.sourceUrl}, ${item.lane},
            ${item.publishedAt === undefined ? sql`now()` : sql`${item.publishedAt}::timestamptz`},
            ${item.bannerHash})
          ON CONFLICT (source_url) DO NOTHING
          RETURNING id::text AS id`
        if (inserted === undefined) return undefined
        if (item.workIds.length > 0) {
          yield* sql`
            INSERT INTO news_item_works (news_id, work_id, position)
            SELECT ${inserted.id}::bigint, w.id, w.ord - 1
            FROM unnest(${item.workIds}::bigint[]) WITH ORDINALITY AS w (id, ord)`
        }
        return inserted.id
      }).pipe(Effect.orDie)

    /** One item as a reader sees it. */
    const find = (id: string, nsfw: boolean) =>
      SqlSchema.findAll({
        Request: Schema.String,
        Result: NewsRow,
        execute: (id) => sql`SELECT ${columns(nsfw)} FROM news_items n WHERE n.id = ${id}::bigint`
      })(id).pipe(Effect.map((rows) => rows[0]), Effect.orDie)

    /**
     * A page of items, newest `published_at` first (then newest id), after `after`. `workId`: only
     * items linking that work, when the reader may see it.
     */
    const list = (options: {
      readonly nsfw: boolean
      readonly lane: string | undefined
      readonly source: string | undefined
      readonly workId: string | undefined
      readonly after: NewsPosition | undefined
      readonly limit: number
    }) =>
      SqlSchema.findAll({
        Request: Schema.Void,
        Result: NewsRow,
        execute: () => {
          const conditions = [
            options.lane === undefined ? sql`TRUE` : sql`n.lane = ${options.lane}`,
            options.source === undefined ? sql`TRUE` : sql`n.source = ${options.source}`,
            options.workId === undefined ? sql`TRUE` : sql`EXISTS (
              SELECT 1 FROM news_item_works l JOIN works w ON w.id = l.work_id
              WHERE l.news_id = n.id AND l.work_id = ${options.workId}::bigint AND w.live AND ${gate(options.nsfw)})`,
            options.after === undefined
              ? sql`TRUE`
              : sql`(n.published_at, n.id) < (${options.after.publishedAt}::timestamptz, ${options.after.id}::bigint)`
          ]
          return sql`
            SELECT ${columns(options.nsfw)} FROM news_items n
            WHERE ${sql.and(conditions)}
            ORDER BY n.published_at DESC, n.id DESC
            LIMIT ${options.limit}`
        }
      })(undefined).pipe(Effect.orDie)

    return { source, createSource, disableSource, visibleWorks, insert, find, list } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
