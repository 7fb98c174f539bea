/**
 * The demo-catalog generator (`seed`, README, "Operator CLI"): deterministic for (works, seed),
 * realistic shares, and rows that satisfy the catalog's references, uniqueness rules and the wire
 * schemas (schema/Catalog/).
 * Pure: no database.
 */
import { describe, expect, it } from "@effect/vitest"
import { Schema } from "effect"
import { createHash } from "node:crypto"
import { Cover, Localized, PartialDate, Ref } from "../../schema/Catalog/Common.js"
import { searchDocument, searchQuery } from "../../src/catalog/search/SearchKey.js"
import { encodeCell } from "../../src/demo/CopyText.js"
import {
  addCounts,
  type Cell,
  emptyCounts,
  generateCatalog,
  generateShared,
  generateWorks,
  Json,
  prepareCatalog,
  tableColumns,
  type TableName,
  tableNames
} from "../../src/demo/Generate.js"

const now = new Date("2025-06-15T03:00:00Z")
type Row = Record<string, unknown>

/** Generates into memory: every table's rows as column-name records. */
const collect = (works: number, seed: number, at: Date = now) => {
  const tables = Object.fromEntries(tableNames.map((t) => [t, [] as Array<Row>])) as Record<TableName, Array<Row>>
  const digest = createHash("sha256")
  const summary = generateCatalog({ works, seed, now: at }, {
    row: (table, cells) => {
      digest.update(`${table}\t${cells.map(encodeCell).join("\t")}\n`)
      const columns = tableColumns[table]
      const row: Row = {}
      cells.forEach((cell, i) => (row[columns[i]] = cell instanceof Json ? JSON.parse(cell.text) : cell))
      tables[table].push(row)
    }
  })
  return { tables, summary, digest: digest.digest("hex") }
}

const digestOf = (generate: (sink: { row: (t: TableName, c: ReadonlyArray<Cell>) => void }) => void) => {
  const digest = createHash("sha256")
  generate({ row: (table, cells) => digest.update(`${table}\t${cells.map(encodeCell).join("\t")}\n`) })
  return digest.digest("hex")
}

const catalog = collect(4000, 7)
/** Generation-heavy tests get room on a busy CI machine. */
const slow = { timeout: 60_000 }
const { tables } = catalog
const byId = <K extends string>(rows: Array<Row>, key: K = "id" as K) => new Map(rows.map((r) => [r[key], r]))
const works = byId(tables.works)
const liveWorks = tables.works.filter((w) => w.merged_into === null && w.withdrawn === false)
const share = (part: number, whole: number) => part / whole

describe("demo catalog generator: determinism", () => {
  it("produces the same rows for the same (works, seed)", slow, () => {
    expect(collect(4000, 7).digest).toBe(catalog.digest)
  })

  it("produces different rows for another seed", slow, () => {
    expect(collect(1000, 8).digest).not.toBe(collect(1000, 7).digest)
  })

  it("chunked generation (as the seeder's worker threads do it) equals the one-pass generation", slow, () => {
    const whole = digestOf((sink) => generateCatalog({ works: 3000, seed: 11, now }, sink))
    const chunked = digestOf((sink) => {
      const prepared = prepareCatalog({ works: 3000, seed: 11, now })
      const counts = emptyCounts(prepared)
      for (const [from, to] of [[1, 1000], [1001, 2500], [2501, 3000]] as const) {
        addCounts(counts, generateWorks(prepared, from, to, sink))
      }
      generateShared(prepared, counts, sink)
    })
    expect(chunked).toBe(whole)
  })

  it("moves only dates when the reference date moves", slow, () => {
    const later = collect(500, 7, new Date("2026-01-01T00:00:00Z"))
    const earlier = collect(500, 7)
    const names = (t: typeof earlier) => t.tables.works.map((w) => [w.id, w.display_name, w.popularity])
    expect(names(later)).toEqual(names(earlier))
    expect(later.digest).not.toBe(earlier.digest)
  })
})

describe("demo catalog generator: distributions", () => {
  it("has ~15% nsfw works, ~1% merged and some withdrawn", () => {
    const nsfw = liveWorks.filter((w) => w.nsfw === true).length
    expect(share(nsfw, liveWorks.length)).toBeGreaterThan(0.12)
    expect(share(nsfw, liveWorks.length)).toBeLessThan(0.18)
    const merged = tables.works.filter((w) => w.merged_into !== null).length
    expect(share(merged, tables.works.length)).toBeGreaterThan(0.005)
    expect(share(merged, tables.works.length)).toBeLessThan(0.016)
    expect(tables.works.some((w) => w.withdrawn === true)).toBe(true)
  })

  it("writes titles in Japanese, Chinese, Korean and Latin scripts, with romanizations", () => {
    const titles = tables.work_titles
    expect(titles.some((t) => t.lang === "ja" && /[\u3040-\u30ff]/.test(String(t.value)))).toBe(true)
    expect(titles.some((t) => t.lang === "zh-Hans" && /^[\u4e00-\u9fff]+$/.test(String(t.value)))).toBe(true)
    expect(titles.some((t) => t.lang === "ko" && /[\uac00-\ud7a3]/.test(String(t.value)))).toBe(true)
    expect(titles.some((t) => t.lang === "en" && /^[A-Za-z :'-]+$/.test(String(t.value)))).toBe(true)
    for (const t of titles.filter((t) => t.lang === "ja" && t.is_main === true)) {
      expect(t.latin).toMatch(/^[A-Za-z0-9 ~!:'-]+$/)
    }
    const olangs = new Map<unknown, number>()
    for (const w of tables.works) olangs.set(w.olang, (olangs.get(w.olang) ?? 0) + 1)
    expect(share(olangs.get("ja") ?? 0, tables.works.length)).toBeGreaterThan(0.6)
    expect(olangs.get("zh-Hans")).toBeGreaterThan(0)
    expect(olangs.get("ko")).toBeGreaterThan(0)
    expect(olangs.get("en")).toBeGreaterThan(0)
    expect(tables.entity_aliases.some((a) => a.alias_kind === "search_hint")).toBe(true)
  })

  it("gives every work exactly one main title, which is its display name and part of `localized`", () => {
    const mains = new Map<unknown, Row>()
    for (const t of tables.work_titles) {
      if (t.is_main === true) {
        expect(mains.has(t.work_id)).toBe(false)
        mains.set(t.work_id, t)
      }
    }
    const wrong = tables.works.filter((w) => {
      const main = mains.get(w.id)!
      return w.display_name !== main.value || w.latin !== main.latin || !Schema.is(Localized)(w.localized) ||
        (w.localized as Record<string, { value: string }>)[String(main.lang)].value !== main.value
    })
    expect(wrong).toEqual([])
  })

  it("has Zipf-like popularity", () => {
    const popularity = liveWorks.map((w) => w.popularity as number).sort((a, b) => b - a)
    const total = popularity.reduce((a, b) => a + b, 0)
    const top = popularity.slice(0, Math.ceil(popularity.length / 100)).reduce((a, b) => a + b, 0)
    expect(share(top, total)).toBeGreaterThan(0.2)
    expect(popularity[0]).toBeGreaterThan(20)
    expect(popularity[popularity.length - 1]).toBeLessThan(1)
  })

  it("spreads releases over past and future months, with year-only and undated ones", () => {
    const todayKey = 20250615
    const key = (r: Row) =>
      r.released_year === null
        ? null
        : (r.released_year as number) * 10000 + ((r.released_month as number | null) ?? 0) * 100 +
          ((r.released_day as number | null) ?? 0)
    const releases = tables.releases.filter((r) => r.merged_into === null)
    const future = releases.filter((r) => r.released_month !== null && key(r)! > todayKey)
    expect(future.length).toBeGreaterThan(releases.length * 0.02)
    expect(new Set(future.map((r) => `${r.released_year}-${r.released_month}`)).size).toBeGreaterThan(3)
    expect(releases.some((r) => r.released_year !== null && r.released_month === null)).toBe(true)
    expect(releases.some((r) => r.released_year === null)).toBe(true)
    const pastYears = new Set(releases.filter((r) => key(r) !== null && key(r)! < todayKey).map((r) => r.released_year))
    expect(pastYears.size).toBeGreaterThan(15)
    // A work's `released` is its earliest dated release.
    const earliest = new Map<unknown, number>()
    for (const r of releases) {
      const k = key(r)
      if (k !== null && k < (earliest.get(r.work_id) ?? Infinity)) earliest.set(r.work_id, k)
    }
    expect(liveWorks.filter((w) => (key(w) ?? undefined) !== earliest.get(w.id))).toEqual([])
    const dates = liveWorks.filter((w) => w.released_year !== null).map((w) =>
      [w.released_year, w.released_month, w.released_day].filter((x) => x !== null)
        .map((x, i) => i === 0 ? String(x) : String(x).padStart(2, "0")).join("-")
    )
    expect(dates.filter((d) => !Schema.is(PartialDate)(d))).toEqual([])
  })

  it("rates works from the five sources, with gaps per source, and mirrors the scores onto the work", () => {
    const bySource = new Map<unknown, number>()
    const wrong: Array<unknown> = []
    for (const r of tables.ratings) {
      bySource.set(r.source, (bySource.get(r.source) ?? 0) + 1)
      const score = r.score as number
      if (score < 0 || score > 100 || works.get(r.work_id)![`rating_${r.source}`] !== score) wrong.push(r)
    }
    expect(wrong).toEqual([])
    expect([...bySource.keys()].sort()).toEqual(["bangumi", "dlsite", "egs", "steam", "vndb"])
    for (const count of bySource.values()) expect(count).toBeLessThan(liveWorks.length)
    expect(liveWorks.some((w) => w.rating_vndb === null)).toBe(true)
  })
})

describe("demo catalog generator: entities and references", () => {
  const ids = (table: TableName) => new Set(tables[table].map((r) => r.id))
  const live = (table: TableName) =>
    new Set(tables[table].filter((r) => r.merged_into === null && r.withdrawn !== true).map((r) => r.id))

  it("references only rows that exist (the foreign keys of the migration)", () => {
    const checks: Array<[TableName, string, Set<unknown>]> = [
      ["work_titles", "work_id", ids("works")],
      ["work_search", "work_id", ids("works")],
      ["releases", "work_id", ids("works")],
      ["release_companies", "release_id", ids("releases")],
      ["release_companies", "company_id", ids("companies")],
      ["work_companies", "company_id", live("companies")],
      ["work_tags", "tag_id", live("tags")],
      ["work_characters", "character_id", live("characters")],
      ["work_characters", "work_id", live("works")],
      ["character_traits", "trait_id", ids("traits")],
      ["character_traits", "character_id", ids("characters")],
      ["credits", "credit_name_id", live("credit_names")],
      ["credits", "work_id", live("works")],
      ["credit_names", "person_id", live("persons")],
      ["covers", "work_id", live("works")],
      ["covers", "image_hash", new Set(tables.images.map((i) => i.hash))],
      ["entity_images", "image_hash", new Set(tables.images.map((i) => i.hash))],
      ["company_relations", "from_id", live("companies")],
      ["company_relations", "to_id", live("companies")],
      ["works", "engine_id", live("engines")]
    ]
    const dangling: Array<string> = []
    for (const [table, column, targets] of checks) {
      for (const row of tables[table]) {
        if (row[column] !== null && !targets.has(row[column])) dangling.push(`${table}.${column} = ${row[column]}`)
      }
    }
    expect(dangling).toEqual([])
  })

  it("keeps keys unique: refs per (type, source, external id), image hashes, row identities", () => {
    const unique = (values: Array<unknown>) => expect(new Set(values).size).toBe(values.length)
    unique(tables.entity_refs.map((r) => `${r.entity_type}/${r.source}/${r.external_id}`))
    unique(tables.images.map((r) => r.hash))
    unique(tables.credits.map((r) => `${r.work_id}/${r.identity}`))
    unique(tables.work_characters.map((r) => `${r.work_id}/${r.character_id}`))
    unique(tables.work_tags.map((r) => `${r.work_id}/${r.tag_id}`))
    unique(tables.character_traits.map((r) => `${r.character_id}/${r.trait_id}`))
    unique(tables.catalog_changes.map((r) => `${r.target_object}/${r.id}`))
    const isRef = Schema.is(Ref)
    expect(tables.entity_refs.filter((r) => !isRef({ source: r.source, external_id: r.external_id, url: r.url })))
      .toEqual([])
  })

  it("gives characters traits and voices, credited through credit names linked to persons", () => {
    expect(tables.characters.length).toBeGreaterThan(liveWorks.length)
    expect(share(tables.character_traits.length, tables.characters.length)).toBeGreaterThan(1)
    const voices = tables.credits.filter((c) => c.role_key === "voice")
    expect(voices.length).toBeGreaterThan(liveWorks.length / 2)
    const roster = new Set(tables.work_characters.map((r) => `${r.work_id}/${r.character_id}`))
    for (const v of voices) expect(roster.has(`${v.work_id}/${v.character_id}`)).toBe(true)
    const linked = tables.credit_names.filter((n) => n.person_id !== null).length
    expect(share(linked, tables.credit_names.length)).toBeGreaterThan(0.8)
    // Sequels share characters with earlier works.
    const home = new Map<unknown, unknown>()
    for (const r of tables.work_characters) if (!home.has(r.character_id)) home.set(r.character_id, r.work_id)
    expect(tables.work_characters.some((r) => home.get(r.character_id) !== r.work_id)).toBe(true)
  })

  it("builds company families with every relation kind, one larger than the 60-node graph walk", () => {
    const relations = new Set(tables.company_relations.map((r) => r.relation))
    expect([...relations].sort()).toEqual(["imprint", "parent", "spawned", "succeeded_by"])
    const family = tables.company_relations.filter((r) => r.relation === "parent" && r.to_id === 1).length
    expect(family).toBeGreaterThan(60)
  })

  it("gives covers SHA-256-shaped hashes, thumbhashes and absolute URLs", () => {
    const images = byId(tables.images, "hash")
    const isCover = Schema.is(Cover)
    const wrong: Array<unknown> = []
    for (const cover of tables.covers) {
      const image = images.get(cover.image_hash)!
      const wire = {
        object: "cover",
        id: String(cover.id),
        vote_count: cover.vote_count,
        portrait_pinned: cover.portrait_pinned,
        cover_kind: cover.cover_kind,
        url: image.url,
        hash: image.hash,
        width: image.width,
        height: image.height,
        thumbhash: image.thumbhash,
        sexual: image.sexual,
        violence: image.violence,
        source: image.source
      }
      if (!isCover(wire)) wrong.push(wire)
    }
    expect(wrong).toEqual([])
  })

  it("records a change for every entity, gone exactly for merged and withdrawn ones", () => {
    const changes = byId(
      tables.catalog_changes.map((c) => ({ ...c, key: `${c.target_object}/${c.id}` })),
      "key"
    )
    const entityTables: Array<[string, TableName]> = [
      ["work", "works"],
      ["release", "releases"],
      ["character", "characters"],
      ["credit_name", "credit_names"],
      ["person", "persons"],
      ["company", "companies"],
      ["tag", "tags"],
      ["engine", "engines"]
    ]
    let rows = 0
    const wrong: Array<string> = []
    for (const [object, table] of entityTables) {
      for (const row of tables[table]) {
        const change = changes.get(`${object}/${row.id}`)
        const gone = row.merged_into !== null || row.withdrawn === true
        if (change === undefined || change.gone !== gone || change.updated_at !== row.updated_at) {
          wrong.push(`${object} ${row.id}`)
        }
        rows++
      }
      expect(tables[table].some((r) => r.merged_into !== null), `${table} has merged rows`).toBe(true)
    }
    expect(wrong).toEqual([])
    expect(tables.catalog_changes.length).toBe(rows)
  })

  it("maps every merged id to a live id, following chains", () => {
    const tableOf: Record<string, TableName> = {
      work: "works",
      release: "releases",
      character: "characters",
      credit_name: "credit_names",
      person: "persons",
      company: "companies",
      tag: "tags",
      engine: "engines"
    }
    const redirects = tables.catalog_redirects
    const index = Object.fromEntries(Object.values(tableOf).map((t) => [t, byId(tables[t])]))
    const wrong = redirects.filter((r) => {
      const rows = index[tableOf[String(r.target_object)]]
      const current = rows.get(r.current_id)
      return rows.get(r.from_id)!.merged_into !== r.into_id || current === undefined ||
        current.merged_into !== null || current.withdrawn !== false
    })
    expect(wrong).toEqual([])
    const merged = tables.works.filter((w) => w.merged_into !== null).length
    expect(redirects.filter((r) => r.target_object === "work").length).toBe(merged)
    expect(redirects.some((r) => r.into_id !== r.current_id)).toBe(true)
  })

  it("makes every title findable by a substring in its own script (search key)", () => {
    const search = byId(tables.work_search, "work_id")
    const likeMatches = (key: string, pattern: string) => key.includes(pattern.slice(1, -1))
    const samples = tables.work_titles.filter((t) => ["ja", "zh-Hans", "ko"].includes(String(t.lang))).slice(0, 500)
    expect(samples.length).toBe(500)
    const missed = samples.filter((title) => {
      const chars = [...String(title.value)].filter((c) => /[\p{L}\p{N}]/u.test(c))
      const query = searchQuery(chars.slice(1, 3).join(""))!
      const doc = search.get(title.work_id)!
      return !likeMatches(String(doc.key), query.pattern) || !String(doc.norm).includes(query.needle)
    })
    expect(missed).toEqual([])
    // A CJK query's pattern is a run of whole tokens, so it cannot match inside a longer token.
    expect(searchQuery("約束")!.pattern).toMatch(/^% [0-9a-z]{3} [0-9a-z]{3} %$/)
    expect(searchDocument(["夏の約束", "Natsu no Yakusoku"]).norm).toBe("夏の約束\nnatsu no yakusoku")
  })
})
