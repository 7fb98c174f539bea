/**
 * News (docs/writing.md, "News"): posting under a news source bound to the poster's site, the reads
 * through the content gate, and the operator's source bindings. A post returns a `WriteAnswer` for the
 * write runner (src/catalog/writes/Writes.ts), which owns the transaction.
 */
import { Context, Effect, Layer } from "effect"
import type { ListNewsParams, WorkNewsParams } from "../../../schema/Api/NewsApi.js"
import type { PrincipalShape } from "../../../schema/Api/Security.js"
import { type CreateNewsInputBody, NewsItem, SUMMARY_MAX_CODE_POINTS } from "../../../schema/Catalog/News.js"
import { DEFAULT_LIMIT } from "../../../schema/Catalog/Query.js"
import { AlreadyExists, type FieldError, InvalidCursor, NotFound, ValidationFailed } from "../../../schema/Problem.js"
import { tagged } from "../../platform/Conditional.js"
import { EntityFields } from "../fields/EntityFields.js"
import { Cursors, filterDigest, pageOf } from "../pagination/Cursor.js"
import { Gone } from "../shared/Gone.js"
import { bigintId } from "../shared/Lanes.js"
import { jsonAnswer } from "../writes/Writes.js"
import { type NewsPosition, NewsRepo, type NewsRow } from "./NewsRepo.js"

export const toNewsItem = (row: NewsRow): NewsItem => ({
  object: "news_item",
  id: row.id,
  source: row.source,
  site: row.site,
  title: row.title,
  summary: row.summary,
  source_url: row.source_url,
  lane: row.lane,
  published_at: row.published_at,
  banner_hash: row.banner_hash === "" ? null : row.banner_hash,
  work_ids: row.work_ids,
  created_at: row.created_at
})

const seesNsfw = (principal: PrincipalShape) => principal.contentLimit === "nsfw"

const TIMESTAMP = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/u

export class News extends Context.Service<News>()("catalog/News", {
  make: Effect.gen(function*() {
    const repo = yield* NewsRepo
    const cursors = yield* Cursors
    const fields = yield* EntityFields
    const gone = yield* Gone

    // -------------------------------------------------------------------------------------------
    // Posting
    // -------------------------------------------------------------------------------------------

    /**
     * Posts a news item for `principal` (of a site: the runner refuses a credential of none). Every
     * field error is reported at once: the summary's length in code points, repeated and unknown work
     * ids, and a source that is not the site's or not active.
     */
    const create = (principal: PrincipalShape, body: CreateNewsInputBody) =>
      Effect.gen(function*() {
        const errors: Array<FieldError> = []
        const runes = [...body.summary].length
        if (runes > SUMMARY_MAX_CODE_POINTS) {
          errors.push({
            reason: "TOO_LONG",
            detail:
              `\`/summary\` must be at most ${SUMMARY_MAX_CODE_POINTS} characters long (Unicode code points; it has ${runes}).`,
            pointer: "/summary",
            params: { max_length: SUMMARY_MAX_CODE_POINTS }
          })
        }
        // Ids in canonical form (`007` is `7`); one beyond bigint names no work.
        const given = (body.work_ids ?? []).map((id) => bigintId(id))
        const seen = new Set<string>()
        given.forEach((id, n) => {
          if (id === undefined) return
          if (seen.has(id)) {
            errors.push({
              reason: "DUPLICATE_ITEM",
              detail: `\`/work_ids/${n}\` names work ${id} again.`,
              pointer: `/work_ids/${n}`
            })
          }
          seen.add(id)
        })
        const source = yield* repo.source(body.source)
        if (source === undefined || source.site !== principal.site || !source.active) {
          errors.push({
            reason: "NOT_PERMITTED",
            detail: source === undefined || source.site !== principal.site
              ? `\`/source\` is not a news source of site ${principal.site}.`
              : "`/source` is disabled.",
            pointer: "/source"
          })
        }
        const visible = yield* repo.visibleWorks([...seen], seesNsfw(principal))
        given.forEach((id, n) => {
          if (id === undefined || !visible.has(id)) {
            errors.push({
              reason: "UNKNOWN_REFERENCE",
              detail: `\`/work_ids/${n}\` names no work in the catalog.`,
              pointer: `/work_ids/${n}`
            })
          }
        })
        if (errors.length > 0) {
          return yield* new ValidationFailed({ detail: "The news item was not posted.", errors })
        }
        const id = yield* repo.insert({
          source: body.source,
          site: principal.site,
          title: body.title,
          summary: body.summary,
          sourceUrl: body.source_url,
          lane: body.lane ?? "news",
          publishedAt: body.published_at,
          bannerHash: body.banner_hash ?? "",
          workIds: [...seen]
        })
        if (id === undefined) {
          return yield* new AlreadyExists({ detail: "A news item with this `source_url` was already posted." })
        }
        const row = yield* repo.find(id, seesNsfw(principal))
        if (row === undefined) return yield* Effect.die(`news item ${id} not found after its insert`)
        return yield* jsonAnswer(NewsItem, toNewsItem(row), { status: 201, headers: { location: `/v2/news/${id}` } })
      })

    // -------------------------------------------------------------------------------------------
    // Reads
    // -------------------------------------------------------------------------------------------

    /** One item with the ETag of its encoded body; 404 for an id no item has. */
    const get = (principal: PrincipalShape, id: string) =>
      Effect.gen(function*() {
        const key = bigintId(id)
        const row = key === undefined ? undefined : yield* repo.find(key, seesNsfw(principal))
        if (row === undefined) return yield* new NotFound({ detail: `No news item ${id}.` })
        return yield* tagged(NewsItem, toNewsItem(row))
      })

    /** A page, newest published first; the cursor holds the last item's `published_at` and id. */
    const page = (
      principal: PrincipalShape,
      params: {
        readonly limit?: number | undefined
        readonly cursor?: string | undefined
        readonly lane?: string | undefined
        readonly source?: string | undefined
      },
      workId: string | undefined
    ) =>
      Effect.gen(function*() {
        const filters = { "": "news", lane: params.lane, source: params.source, work_id: workId }
        const limit = params.limit ?? DEFAULT_LIMIT
        let after: NewsPosition | undefined
        if (params.cursor !== undefined) {
          const position = yield* cursors.decode(params.cursor, { sort: "news", filters: filterDigest(filters) })
          const publishedAt = position.key[0]
          if (typeof publishedAt !== "string" || !TIMESTAMP.test(publishedAt) || !/^[0-9]{1,19}$/u.test(position.id)) {
            return yield* new InvalidCursor({ detail: "The cursor does not hold a position." })
          }
          after = { publishedAt, id: position.id }
        }
        const rows = yield* repo.list({
          nsfw: seesNsfw(principal),
          lane: params.lane,
          source: params.source,
          workId,
          after,
          limit: limit + 1
        })
        const cut = pageOf(
          rows,
          limit,
          (row) => ({ sort: "news", key: [row.published_at], id: row.id }),
          (p) => cursors.encode(p, filterDigest(filters))
        )
        return {
          object: "list" as const,
          items: cut.items.map(toNewsItem),
          ...(cut.next_cursor === undefined ? {} : { next_cursor: cut.next_cursor })
        }
      })

    const list = (principal: PrincipalShape, params: ListNewsParams) => {
      // An id beyond bigint names no work: nothing links it.
      const workId = params.work_id === undefined ? undefined : bigintId(params.work_id) ?? "-1"
      return page(principal, params, workId)
    }

    /** A work's news: 404 for a work not served or gated away, ENTITY_MERGED for a merged-away id. */
    const workNews = (principal: PrincipalShape, id: string, params: WorkNewsParams) =>
      Effect.gen(function*() {
        const located = yield* fields.locate("catalog.work", id)
        if (located._tag !== "Live" || (located.nsfw && !seesNsfw(principal))) {
          return yield* gone.missing("work", id)
        }
        return yield* page(principal, params, located.id)
      })

    return { create, get, list, workNews } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(
    Layer.provide([NewsRepo.layer, Cursors.layer, EntityFields.layer, Gone.layer])
  )
}
