/**
 * Works: the rules of the collection's lanes (docs/api-contract.md, "Cursors and pages"), and the
 * single-work reads.
 *
 * - Listing lane (cursor mode, no search trigger): one keyset query on the sort's index builds the
 *   page's items (WorksRepo.keyset).
 * - Search lane (`q`, `page`, `facets`, `relevance`/`rating_*` sorts, or /v2/catalog/search): the
 *   SearchIndex says which works in which order; the items are then built by id.
 * - Batch lane (`ids=`/`refs=`): items by id in the order asked, the rest in `missing[]`.
 * In every lane the parts of a page (includes, view=full arrays) come from one more statement, and
 * the list is written as JSON text around the item JSON PostgreSQL built (no per-item encoding).
 */
import { Context, Effect, Layer, Schema } from "effect"
import type {
  GetWorkParams,
  ListWorksParams,
  WorkInclude,
  WorkListParams,
  WorkSort,
  WorkView
} from "../../../schema/Api/WorksApi.js"
import { querySorts, searchLaneSorts } from "../../../schema/Api/WorksApi.js"
import { RosterCharacter } from "../../../schema/Catalog/Character.js"
import { Cover, type Intro, type LangTag } from "../../../schema/Catalog/Common.js"
import { CreditGroup } from "../../../schema/Catalog/Credit.js"
import { DEFAULT_LIMIT, MAX_DEPTH } from "../../../schema/Catalog/Query.js"
import { ListWork } from "../../../schema/Catalog/Work.js"
import { type FieldError, InvalidParameter } from "../../../schema/Problem.js"
import { Cursors, filterDigest, pageOf } from "../pagination/Cursor.js"
import { CatalogChanges } from "../shared/CatalogChanges.js"
import { Gone } from "../shared/Gone.js"
import { listJson } from "../shared/JsonSql.js"
import { keysetPage } from "../shared/Keyset.js"
import { bigintId } from "../shared/Lanes.js"
import { SearchIndex, type SearchRequest } from "./SearchIndex.js"
import { sortSpecs, type WorkFilters, type WorkPart } from "./WorkSql.js"
import { type ItemRow, type RosterRow, WorksRepo } from "./WorksRepo.js"

/** Which collection was asked: the works list, or the search collection (always the search lane). */
export type Collection = "works" | "search"

/** The roster embedded in the single-work read (view=full); longer rosters are paged at /characters. */
const EMBEDDED_ROSTER = 500

/**
 * The list envelope (docs/api-contract.md, "Records and lists") as JSON text around items that
 * already are JSON text, written from the list schema (shared/JsonSql.ts).
 */
const envelope = listJson(ListWork)

// The sub-lists below are answered through their list schema, which encodes every item again; what
// PostgreSQL wrote is decoded with the item's schema rather than trusted as one.
const rosterCharacter = Schema.decodeUnknownSync(Schema.fromJsonString(RosterCharacter))
const creditEntries = Schema.decodeUnknownSync(Schema.fromJsonString(CreditGroup.fields.credits))
const cover = Schema.decodeUnknownSync(Schema.fromJsonString(Cover))

const inconsistent = (parameter: string, other: string): FieldError => ({
  reason: "INCONSISTENT_WITH",
  detail: `\`${parameter}\` cannot be combined with ${other}.`,
  parameter
})

/** The parts a read fetches after its items: the include tokens, then the view=full arrays. */
const partsWanted = (include: ReadonlyArray<WorkInclude>, view: WorkView): Array<WorkPart> => {
  const wanted: Array<WorkPart> = [...new Set(include)]
  if (view === "full") wanted.push("aliases", "links")
  return wanted
}

/** What a part with no rows is: `[]`, or for the one object part the aggregate of no players. */
const emptyPart = (part: string) => part === "playtime" ? `{"players":0,"median_minutes":null}` : "[]"

/** An item's JSON text with its parts (JSON text, `emptyPart` when it has none) appended in `wanted` order. */
const spliced = (json: string, wanted: ReadonlyArray<string>, parts: ReadonlyMap<string, string> | undefined) => {
  let extra = ""
  for (const part of wanted) extra += `,"${part}":${parts?.get(part) ?? emptyPart(part)}`
  return extra === "" ? json : json.slice(0, -1) + extra + "}"
}

const given = (params: Record<string, unknown>, names: ReadonlyArray<string>) =>
  names.filter((name) => params[name] !== undefined)

export class Works extends Context.Service<Works>()("catalog/Works", {
  make: Effect.gen(function*() {
    const repo = yield* WorksRepo
    const index = yield* SearchIndex
    const cursors = yield* Cursors
    const gone = yield* Gone
    const listingCounts = yield* (yield* CatalogChanges).cache<number>({
      name: "catalog_listing_counts",
      capacity: 512
    })

    /** Items (JSON text) with their parts spliced in, in the order of `rows`. */
    const withParts = Effect.fn("Works.withParts")(function*(
      rows: ReadonlyArray<ItemRow>,
      include: ReadonlyArray<WorkInclude>,
      view: WorkView,
      nsfw: boolean
    ) {
      const wanted = partsWanted(include, view)
      if (wanted.length === 0 || rows.length === 0) return rows.map((row) => row.json)
      const partRows = yield* repo.parts(rows.map((row) => row.id), wanted, nsfw)
      const byWork = new Map<string, Map<WorkPart, string>>()
      for (const part of partRows) {
        let parts = byWork.get(part.id)
        if (parts === undefined) byWork.set(part.id, parts = new Map())
        parts.set(part.part, part.json)
      }
      return rows.map((row) => spliced(row.json, wanted, byWork.get(row.id)))
    })

    /** Items by id in the order of `ids` (canonical), skipping the ones no longer visible. */
    const render = (ids: ReadonlyArray<string>, view: WorkView, nsfw: boolean) =>
      Effect.map(repo.byIds(ids, view, nsfw), (rows) => {
        const byId = new Map(rows.map((row) => [row.id, row]))
        return ids.flatMap((id) => byId.get(id) ?? [])
      })

    const validate = (params: ListWorksParams, collection: Collection) => {
      const errors: Array<FieldError> = []
      const claimFilters = ["owner_uid", "site", "platform"]
      const batch = params.ids !== undefined ? "ids" : params.refs !== undefined ? "refs" : undefined
      if (collection === "search") {
        for (const p of given(params, ["ids", "refs", ...claimFilters])) {
          errors.push(inconsistent(p, "the search collection (`/v2/catalog/search`)"))
        }
      } else if (batch !== undefined) {
        if (params.ids !== undefined && params.refs !== undefined) errors.push(inconsistent("refs", "`ids`"))
        const others = [
          "cursor",
          "page",
          "q",
          "facets",
          "sort",
          "include_total",
          "tag_id",
          "company_id",
          "olang",
          "content_rating",
          "medium",
          ...claimFilters
        ]
        for (const p of given(params, others)) errors.push(inconsistent(p, `the \`${batch}\` batch lane`))
      }
      if (batch === undefined || collection === "search") {
        if (params.page !== undefined && params.cursor !== undefined) errors.push(inconsistent("cursor", "`page`"))
        if (collection === "works") {
          const trigger = params.q !== undefined
            ? "`q`"
            : params.page !== undefined
            ? "`page`"
            : params.facets !== undefined
            ? "`facets`"
            : params.sort !== undefined && searchLaneSorts.has(params.sort)
            ? `\`sort=${params.sort}\``
            : undefined
          if (trigger !== undefined) {
            for (const p of given(params, claimFilters)) {
              errors.push(inconsistent(p, `${trigger} (the search lane)`))
            }
          }
        }
        if (params.q !== undefined && params.sort !== undefined && !querySorts.has(params.sort)) {
          errors.push(inconsistent("sort", "`q` (a search orders by relevance, release date, popularity or rating)"))
        }
      }
      return errors.length === 0 ? Effect.void : Effect.fail(
        new InvalidParameter({ detail: "These parameters select different lanes of the collection.", errors })
      )
    }

    const facetFilters = (params: ListWorksParams): WorkFilters => ({
      tag_id: params.tag_id === undefined ? undefined : bigintId(params.tag_id) ?? "-1",
      company_id: params.company_id === undefined ? undefined : bigintId(params.company_id) ?? "-1",
      olang: params.olang,
      content_rating: params.content_rating,
      medium: params.medium
    })

    /** The `ids=` / `refs=` batch lane (docs/api-contract.md, "Records and lists"). */
    const batchLane = Effect.fn("Works.batch")(function*(params: ListWorksParams, nsfw: boolean) {
      const view = params.view ?? "basic"
      // Each wanted entry: what the client sent (echoed in missing[]) and the work id it names.
      let wanted: Array<{ readonly sent: string; readonly id: string | undefined }>
      if (params.ids !== undefined) {
        wanted = [...new Set(params.ids)].map((sent) => ({ sent, id: bigintId(sent) }))
      } else {
        const sent = [...new Set(params.refs ?? [])]
        const pairs = sent.map((ref) => {
          const colon = ref.indexOf(":")
          return { source: ref.slice(0, colon), externalId: ref.slice(colon + 1) }
        })
        const found = yield* repo.byRefs(pairs)
        const byRef = new Map(found.map((row) => [`${row.source}:${row.external_id}`, row.id]))
        wanted = sent.map((ref) => ({ sent: ref, id: byRef.get(ref) }))
      }
      const lookup = [...new Set(wanted.flatMap((w) => w.id === undefined ? [] : [w.id]))]
      const rows = yield* repo.byIds(lookup, view, nsfw)
      const byId = new Map(rows.map((row) => [row.id, row]))
      const ordered: Array<ItemRow> = []
      const missing: Array<string> = []
      const served = new Set<string>()
      for (const w of wanted) {
        const row = w.id === undefined ? undefined : byId.get(w.id)
        if (row === undefined) missing.push(w.sent)
        else if (!served.has(row.id)) {
          served.add(row.id)
          ordered.push(row)
        }
      }
      const items = yield* withParts(ordered, params.include ?? [], view, nsfw)
      return envelope(items, { missing })
    })

    /** The search lane (docs/decisions.md, "Search and facets"; docs/api-contract.md, "Cursors and pages"). */
    const searchLane = Effect.fn("Works.search")(function*(params: ListWorksParams, nsfw: boolean) {
      const view = params.view ?? "basic"
      const limit = params.limit ?? DEFAULT_LIMIT
      const sort: WorkSort = params.sort ?? (params.q !== undefined ? "relevance" : "id")
      const request: SearchRequest = { q: params.q, filters: facetFilters(params), sort, nsfw }
      const facets = params.facets === undefined ? Effect.succeed(undefined) : index.facets(request, params.facets)

      if (params.page !== undefined) {
        const page = params.page
        if (page * limit > MAX_DEPTH) {
          const { total } = yield* index.total(request)
          const maximum = Math.max(1, Math.min(Math.ceil(total / limit), Math.floor(MAX_DEPTH / limit)))
          return yield* new InvalidParameter({
            detail:
              `Page mode reaches ${MAX_DEPTH} rows deep at most; with limit ${limit} the last page is ${maximum}.`,
            errors: [{
              reason: "OUT_OF_RANGE",
              detail: `\`page\` must be between 1 and ${maximum}.`,
              parameter: "page",
              params: { minimum: 1, maximum }
            }]
          })
        }
        const [total, hits, facetValues] = yield* Effect.all([
          index.total(request),
          index.window(request, (page - 1) * limit, limit),
          facets
        ], { concurrency: "unbounded" })
        const rows = yield* render(hits.map((hit) => hit.id), view, nsfw)
        const items = yield* withParts(rows, params.include ?? [], view, nsfw)
        return envelope(items, { total: total.total, total_relation: total.relation, facets: facetValues })
      }

      const digest = filterDigest({ "": "works", lane: "search", q: params.q, ...request.filters })
      const after = params.cursor === undefined
        ? undefined
        : yield* cursors.decode(params.cursor, { sort, filters: digest })
      const [hits, total, facetValues] = yield* Effect.all([
        index.after(request, after, limit + 1),
        params.include_total === true ? index.count(request) : Effect.succeed(undefined),
        facets
      ], { concurrency: "unbounded" })
      const page = pageOf(
        hits,
        limit,
        (hit) => ({ sort, key: hit.key, id: hit.id }),
        (position) => cursors.encode(position, digest)
      )
      const rows = yield* render(page.items.map((hit) => hit.id), view, nsfw)
      const items = yield* withParts(rows, params.include ?? [], view, nsfw)
      return envelope(items, { next_cursor: page.next_cursor, total, facets: facetValues })
    })

    /** The listing lane: cursor mode over the sort's keyset index. */
    const listingLane = Effect.fn("Works.listing")(function*(params: ListWorksParams, nsfw: boolean) {
      const view = params.view ?? "basic"
      const limit = params.limit ?? DEFAULT_LIMIT
      const sort: WorkSort = params.sort ?? "id"
      const filters: WorkFilters = {
        ...facetFilters(params),
        platform: params.platform,
        site: params.site,
        owner_uid: params.owner_uid
      }
      const digest = filterDigest({ "": "works", lane: "list", ...filters })
      const after = params.cursor === undefined
        ? undefined
        : yield* cursors.decode(params.cursor, { sort, filters: digest })
      const keyset = repo.keyset({ filters, sort, after, take: limit + 1, nsfw, view })
      // Side by side only when there is a count to run (forking a fiber is not free).
      const [rows, total] = params.include_total !== true
        ? [yield* keyset, undefined]
        : yield* Effect.all([
          keyset,
          Object.values(filters).every((v) => v === undefined)
            ? index.count({ q: undefined, filters: {}, sort, nsfw })
            : listingCounts.get(JSON.stringify([nsfw, filters]), repo.count(filters, nsfw))
        ], { concurrency: "unbounded" })
      const spec = sortSpecs[sort]
      const page = pageOf(
        rows,
        limit,
        (row) => ({ sort, key: spec.keys.length === 0 ? [] : [row.k0 ?? null], id: row.id }),
        (position) => cursors.encode(position, digest)
      )
      const items = yield* withParts(page.items, params.include ?? [], view, nsfw)
      return envelope(items, { next_cursor: page.next_cursor, total })
    })

    const listBody = Effect.fn("Works.list")(function*(params: ListWorksParams, collection: Collection, nsfw: boolean) {
      yield* validate(params, collection)
      if (collection === "works" && (params.ids !== undefined || params.refs !== undefined)) {
        return yield* batchLane(params, nsfw)
      }
      const search = collection === "search" || params.q !== undefined || params.page !== undefined ||
        params.facets !== undefined || (params.sort !== undefined && searchLaneSorts.has(params.sort))
      return yield* (search ? searchLane(params, nsfw) : listingLane(params, nsfw))
    })

    /**
     * GET /v2/catalog/works and /v2/catalog/search: the response body (JSON text). Its handlers
     * store it (shared/Replay.ts, keyed by the content limit and the decoded URL).
     */
    const list = (params: ListWorksParams, collection: Collection, nsfw: boolean) => listBody(params, collection, nsfw)

    /** The canonical id of a visible work, or the 404 that fits (ENTITY_MERGED or NOT_FOUND, rule 9). */
    const visible = Effect.fn("Works.visible")(function*(id: string, nsfw: boolean) {
      const key = bigintId(id)
      if (key === undefined || !(yield* repo.visible(key, nsfw))) return yield* gone.missing("work", id)
      return key
    })

    /**
     * GET /v2/catalog/works/{id} as JSON text: view=full by default, with its first EMBEDDED_ROSTER
     * roster characters; includes as on lists. Built like a list item, in one statement, spliced as
     * PostgreSQL wrote it.
     */
    const get = Effect.fn("Works.get")(function*(id: string, params: GetWorkParams, nsfw: boolean) {
      const view = params.view ?? "full"
      const key = bigintId(id)
      const wanted = partsWanted(params.include ?? [], view)
      const rows = key === undefined
        ? []
        : yield* repo.detail(key, view, wanted, nsfw, view === "full" ? EMBEDDED_ROSTER : 0)
      const parts = new Map<string, string>()
      for (const row of rows) if (row.json !== null) parts.set(row.part, row.json)
      const work = parts.get("work")
      if (work === undefined) return yield* gone.missing("work", id)
      return spliced(work, view === "full" ? [...wanted, "characters"] : wanted, parts)
    })

    const subList = <Row, Item>(options: {
      readonly id: string
      readonly list: string
      readonly params: WorkListParams
      readonly nsfw: boolean
      readonly fetch: (
        workId: string,
        after: { readonly key: ReadonlyArray<string | number | null>; readonly id: string } | undefined,
        take: number
      ) => Effect.Effect<ReadonlyArray<Row>>
      readonly position: (row: Row) => { readonly key: ReadonlyArray<string | number | null>; readonly id: string }
      readonly item: (row: Row) => Item
    }) =>
      Effect.gen(function*() {
        const workId = yield* visible(options.id, options.nsfw)
        const page = yield* keysetPage<Row>(cursors, {
          collection: `works/${options.list}`,
          sort: options.list,
          filters: { work: workId },
          cursor: options.params.cursor,
          limit: options.params.limit,
          fetch: (after, take) => options.fetch(workId, after, take),
          positionOf: (row) => ({ sort: options.list, ...options.position(row) })
        })
        return {
          object: "list" as const,
          items: page.items.map(options.item),
          ...(page.next_cursor === undefined ? {} : { next_cursor: page.next_cursor })
        }
      })

    const characters = (id: string, params: WorkListParams, nsfw: boolean) =>
      subList({
        id,
        list: "characters",
        params,
        nsfw,
        fetch: repo.roster,
        position: (row) => ({ key: [row.position], id: row.id }),
        item: (row: RosterRow) => rosterCharacter(row.json)
      }).pipe(Effect.withSpan("Works.characters"))

    const credits = (id: string, params: WorkListParams, nsfw: boolean) =>
      subList({
        id,
        list: "credits",
        params,
        nsfw,
        fetch: repo.creditGroups,
        position: (row) => ({ key: [row.position], id: row.role_key }),
        item: (row): CreditGroup => ({
          object: "credit_group",
          role_key: row.role_key,
          role_name: row.role_name,
          credits: creditEntries(row.credits)
        })
      }).pipe(Effect.withSpan("Works.credits"))

    const covers = (id: string, params: WorkListParams, nsfw: boolean) =>
      subList({
        id,
        list: "covers",
        params,
        nsfw,
        fetch: repo.covers,
        position: (row) => ({ key: [row.pinned ? 1 : 0, row.votes], id: row.id }),
        item: (row) => cover(row.json)
      }).pipe(Effect.withSpan("Works.covers"))

    const intros = (id: string, params: WorkListParams, nsfw: boolean) =>
      subList({
        id,
        list: "intros",
        params,
        nsfw,
        fetch: repo.intros,
        position: (row) => ({ key: [], id: String(row.position) }),
        item: (row): Intro => ({
          object: "intro",
          lang: row.lang as LangTag,
          value: row.value,
          is_machine: row.is_machine,
          source: row.source
        })
      }).pipe(Effect.withSpan("Works.intros"))

    return { list, get, characters, credits, covers, intros } as const
  })
}) {
  // The SearchIndex comes from the server: Works knows its interface (SearchIndex.ts), the server
  // plugs in PgSearchIndexLive (CatalogServer.ts).
  static readonly layer = Layer.effect(this, this.make).pipe(
    Layer.provide([WorksRepo.layer, Cursors.layer, Gone.layer])
  )
}
