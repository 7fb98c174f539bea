/**
 * The deterministic demo catalog: every row of every catalog table for a given (works, seed), as a
 * pure function that pushes rows into a `Sink`. Dates are placed relative to a reference `now` (the
 * calendar needs future releases); everything else depends on (works, seed) alone.
 *
 * Shape of the data (the shares are asserted in test/catalog/Generate.test.ts):
 * - works: original language mostly Japanese, then English, Chinese, Korean, a few Russian and Spanish;
 *   titles per language in their own script with romanizations; aliases (incl. internal search hints);
 *   Zipf-like popularity; ~15% nsfw; ~1% merged into another work (some through chains), ~0.4% withdrawn.
 * - releases over the past decades, ~4% of works first released in the coming months, ~3% year-only,
 *   ~4% undated; platforms, media, languages, age ratings, publishers.
 * - characters with traits, images and voice credits; sequels share characters with earlier works.
 * - shared pools of companies (with parent / imprint / spawned / succeeded_by families, a few large
 *   enough to truncate the 60-node graph walk), persons and their credit names, tags, traits, engines.
 * - covers with hashes and thumbhashes, ratings from the five sources with gaps, refs, links, intros.
 * - a change row for every entity (gone for merged and withdrawn ones) and a redirect per merge.
 */
import { searchDocument } from "../catalog/search/SearchKey.js"
import { Rng, shuffled, Zipf } from "./Random.js"
import * as W from "./Words.js"

// ---------------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------------

/** A jsonb value, already serialized. */
export class Json {
  constructor(readonly text: string) {}
}

export type Cell = string | number | boolean | null | ReadonlyArray<string> | Json

/** COPY column lists, in the order the generator emits cells. */
export const tableColumns = {
  works: [
    "id",
    "display_name",
    "latin",
    "lang",
    "localized",
    "olang",
    "released_year",
    "released_month",
    "released_day",
    "nsfw",
    "length_minutes",
    "platforms",
    "media",
    "popularity",
    "rating_vndb",
    "rating_bangumi",
    "rating_egs",
    "rating_steam",
    "rating_dlsite",
    "development_status",
    "engine_id",
    "created_at",
    "updated_at",
    "merged_into",
    "withdrawn"
  ],
  work_titles: ["work_id", "lang", "value", "latin", "is_main", "is_official"],
  work_search: ["work_id", "norm", "key", "popularity", "live", "nsfw"],
  work_facets: ["work_id", "olang", "media", "platforms", "tag_ids", "company_ids"],
  ratings: ["work_id", "source", "score", "votes", "updated_at"],
  work_companies: ["work_id", "company_id", "developer", "publisher"],
  work_tags: ["work_id", "tag_id", "spoiler", "score"],
  covers: ["id", "work_id", "image_hash", "vote_count", "portrait_pinned", "cover_kind", "created_at"],
  images: ["hash", "url", "width", "height", "thumbhash", "sexual", "violence", "source", "created_at"],
  releases: [
    "id",
    "work_id",
    "display_name",
    "latin",
    "lang",
    "localized",
    "released_year",
    "released_month",
    "released_day",
    "languages",
    "platforms",
    "media",
    "nsfw",
    "min_age",
    "release_kind",
    "is_official",
    "is_patch",
    "is_freeware",
    "voiced",
    "engine_id",
    "gtin",
    "catalog_number",
    "created_at",
    "updated_at",
    "merged_into",
    "withdrawn"
  ],
  release_companies: ["release_id", "company_id", "developer", "publisher"],
  characters: [
    "id",
    "display_name",
    "latin",
    "lang",
    "localized",
    "birthday",
    "blood_type",
    "gender",
    "height_cm",
    "weight_kg",
    "bust_cm",
    "waist_cm",
    "hips_cm",
    "cup",
    "instance_of_id",
    "nsfw",
    "created_at",
    "updated_at",
    "merged_into",
    "withdrawn"
  ],
  character_traits: ["character_id", "trait_id", "spoiler", "is_lie"],
  work_characters: ["work_id", "character_id", "roster_role", "spoiler", "identity", "position"],
  credits: ["work_id", "identity", "credit_name_id", "role_key", "character_id", "note", "position"],
  credit_names: [
    "id",
    "person_id",
    "display_name",
    "latin",
    "lang",
    "localized",
    "created_at",
    "updated_at",
    "merged_into",
    "withdrawn"
  ],
  persons: [
    "id",
    "display_name",
    "latin",
    "lang",
    "localized",
    "gender",
    "birth_year",
    "birth_month",
    "birth_day",
    "is_public",
    "created_at",
    "updated_at",
    "merged_into",
    "withdrawn"
  ],
  companies: [
    "id",
    "display_name",
    "latin",
    "lang",
    "localized",
    "company_kind",
    "work_count",
    "work_count_sfw",
    "created_at",
    "updated_at",
    "merged_into",
    "withdrawn"
  ],
  company_relations: ["from_id", "relation", "to_id"],
  tags: [
    "id",
    "display_name",
    "localized",
    "category",
    "parent_id",
    "default_spoiler",
    "description",
    "aliases",
    "work_count",
    "work_count_sfw",
    "created_at",
    "updated_at",
    "merged_into",
    "withdrawn"
  ],
  traits: [
    "id",
    "display_name",
    "localized",
    "root_id",
    "default_spoiler",
    "is_sexual",
    "description",
    "created_at",
    "updated_at"
  ],
  engines: [
    "id",
    "display_name",
    "description",
    "aliases",
    "work_count",
    "work_count_sfw",
    "created_at",
    "updated_at",
    "merged_into",
    "withdrawn"
  ],
  entity_aliases: ["entity_type", "entity_id", "position", "lang", "value", "alias_kind", "is_machine"],
  entity_intros: ["entity_type", "entity_id", "position", "lang", "value", "is_machine", "source"],
  entity_refs: ["entity_type", "entity_id", "source", "external_id", "url"],
  entity_links: ["entity_type", "entity_id", "position", "site", "url", "label", "lang"],
  entity_images: ["entity_type", "entity_id", "slot", "image_hash"],
  catalog_changes: ["target_object", "id", "updated_at", "gone"],
  catalog_redirects: ["target_object", "from_id", "into_id", "current_id", "merged_at"]
} as const satisfies Record<string, ReadonlyArray<string>>

export type TableName = keyof typeof tableColumns
export const tableNames = Object.keys(tableColumns) as ReadonlyArray<TableName>

export interface Sink {
  readonly row: (table: TableName, cells: ReadonlyArray<Cell>) => void
}

export interface GenerateOptions {
  readonly works: number
  readonly seed: number
  /** Reference date for release dates and timestamps. */
  readonly now: Date
}

export interface GenerateSummary {
  readonly rows: Readonly<Record<TableName, number>>
  readonly works: number
  readonly liveWorks: number
  readonly nsfwWorks: number
  readonly mergedWorks: number
  readonly withdrawnWorks: number
}

// ---------------------------------------------------------------------------------------------------
// Constants
// ---------------------------------------------------------------------------------------------------

const S = {
  plan: 1,
  work: 2,
  title: 3,
  release: 4,
  character: 5,
  credit: 6,
  pool: 7,
  company: 8,
  person: 9,
  tag: 10,
  engine: 11,
  cover: 12,
  image: 13
} as const

const imageKinds = ["cv", "ch", "cf", "lg", "ph"]

const F_MERGED = 1
const F_WITHDRAWN = 2
const F_NSFW = 4
const F_SEQUEL = 8
const F_DUP_CHARACTER = 16
const F_DUP_RELEASE = 32

const DAY = 86_400_000
const imageHost = "https://img.shiori.example"

type Lang = "ja" | "en" | "zh-Hans" | "zh-Hant" | "ko" | "ru" | "es"
const olangs: ReadonlyArray<Lang> = ["ja", "en", "zh-Hans", "zh-Hant", "ko", "ru", "es"]
const olangWeights = [68, 12, 9, 2, 5, 2, 2]

const ratingSources = ["vndb", "bangumi", "egs", "steam", "dlsite"] as const

// ---------------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------------

const capitalize = (s: string) => s.length === 0 ? s : s[0].toUpperCase() + s.slice(1)
const particles = new Set(["no", "to", "ni", "ga", "o", "wa", "e", "de", "zhi"])
const titleCase = (s: string) =>
  s.split(" ").map((word, i) => i > 0 && particles.has(word) ? word : capitalize(word)).join(" ")
const iso = (ms: number) => new Date(ms).toISOString()
const round1 = (x: number) => Math.round(x * 10) / 10
const clamp = (x: number, lo: number, hi: number) => Math.max(lo, Math.min(hi, x))

const json = (value: unknown) => new Json(JSON.stringify(value))
const emptyObject = new Json("{}")

interface Name {
  readonly value: string
  readonly latin: string | null
}

const localizedJson = (entries: ReadonlyArray<readonly [string, Name]>): Json => {
  if (entries.length === 0) return emptyObject
  const map: Record<string, { value: string; latin: string | null }> = {}
  for (const [lang, name] of entries) map[lang] = { value: name.value, latin: name.latin }
  return json(map)
}

interface PartialDate {
  readonly y: number
  readonly m: number | null
  readonly d: number | null
}

const dateKey = (p: PartialDate | null) => p === null ? Infinity : p.y * 10000 + (p.m ?? 0) * 100 + (p.d ?? 0)

const toPartial = (ms: number, precision: "day" | "month" | "year"): PartialDate => {
  const date = new Date(ms)
  const y = date.getUTCFullYear()
  return {
    y,
    m: precision === "year" ? null : date.getUTCMonth() + 1,
    d: precision === "day" ? date.getUTCDate() : null
  }
}

const partialMs = (p: PartialDate) => Date.UTC(p.y, (p.m ?? 1) - 1, p.d ?? 1)

// ---------------------------------------------------------------------------------------------------
// Names and titles
// ---------------------------------------------------------------------------------------------------

const sequelSuffix = (rng: Rng): Name => {
  const k = rng.int(4)
  return k === 0
    ? { value: " 2", latin: " 2" }
    : k === 1
    ? { value: " II", latin: " II" }
    : k === 2
    ? { value: " -After Story-", latin: " -After Story-" }
    : { value: " ～Another Season～", latin: " ~Another Season~" }
}

const enTitle = (rng: Rng): string => {
  switch (rng.int(5)) {
    case 0:
      return `${rng.pick(W.enAdjectives)} ${rng.pick(W.enNouns)}`
    case 1:
      return `The ${rng.pick(W.enNouns)} of ${rng.pick(W.enAdjectives)} ${rng.pick(W.enNouns)}`
    case 2:
      return `${rng.pick(W.enNouns)}: ${rng.pick(W.enAdjectives)} ${rng.pick(W.enNouns)}`
    case 3:
      return `${rng.pick(W.enAdjectives)} ${rng.pick(W.enNouns)} ${rng.pick(W.enNouns)}`
    default:
      return `${rng.pick(W.enNouns)} of the ${rng.pick(W.enAdjectives)} ${rng.pick(W.enNouns)}`
  }
}

const jaTitle = (rng: Rng): Name => {
  const k1 = rng.pick(W.jaKanji)
  const k2 = rng.pick(W.jaKanji)
  const kana = rng.pick(W.jaKana)
  switch (rng.int(7)) {
    case 0:
      return { value: `${k1[0]}の${k2[0]}`, latin: titleCase(`${k1[1]} no ${k2[1]}`) }
    case 1: {
      const tail = rng.pick(W.jaTails)
      return { value: `${k1[0]}${tail[0]}`, latin: titleCase(`${k1[1]} ${tail[1]}`) }
    }
    case 2: {
      const kana2 = rng.pick(W.jaKana)
      return { value: `${kana[0]}・${kana2[0]}`, latin: titleCase(`${kana[1]} ${kana2[1]}`) }
    }
    case 3:
      return { value: `${k1[0]}${k2[0]}`, latin: titleCase(`${k1[1]}${k2[1]}`) }
    case 4:
      return { value: `${kana[0]}の${k1[0]}`, latin: titleCase(`${kana[1]} no ${k1[1]}`) }
    case 5: {
      const en = enTitle(rng)
      return { value: `${k1[0]}の${k2[0]} -${en}-`, latin: `${titleCase(`${k1[1]} no ${k2[1]}`)} -${en}-` }
    }
    default:
      return { value: `${k1[0]}と${kana[0]}の${k2[0]}`, latin: titleCase(`${k1[1]} to ${kana[1]} no ${k2[1]}`) }
  }
}

const zhTitle = (rng: Rng, words: ReadonlyArray<W.Word>): Name => {
  const a = rng.pick(words)
  const b = rng.pick(words)
  switch (rng.int(4)) {
    case 0:
      return { value: `${a[0]}之${b[0]}`, latin: `${a[1]} Zhi ${b[1]}` }
    case 1:
      return { value: `${a[0]}的${b[0]}`, latin: `${a[1]} De ${b[1]}` }
    case 2: {
      const c = rng.pick(words)
      return { value: `${a[0]}${b[0]}${c[0]}`, latin: `${a[1]} ${b[1]} ${c[1]}` }
    }
    default:
      return { value: `${a[0]}${b[0]}`, latin: `${a[1]} ${b[1]}` }
  }
}

const koTitle = (rng: Rng): Name => {
  const a = rng.pick(W.koWords)
  const b = rng.pick(W.koWords)
  switch (rng.int(3)) {
    case 0:
      return { value: `${a[0]}의 ${b[0]}`, latin: `${a[1]}ui ${b[1]}` }
    case 1:
      return { value: `${a[0]} 속의 ${b[0]}`, latin: `${a[1]} Sogui ${b[1]}` }
    default:
      return { value: `${a[0]}와 ${b[0]}`, latin: `${a[1]}wa ${b[1]}` }
  }
}

const titleIn = (lang: Lang, rng: Rng): Name => {
  switch (lang) {
    case "ja":
      return jaTitle(rng)
    case "zh-Hans":
      return zhTitle(rng, W.zhWords)
    case "zh-Hant":
      return zhTitle(rng, W.zhHantWords)
    case "ko":
      return koTitle(rng)
    case "ru": {
      const a = rng.pick(W.ruWords)
      const b = rng.pick(W.ruWords)
      return { value: `${a[0]} и ${b[0]}`, latin: `${a[1]} i ${b[1]}` }
    }
    case "es":
      return { value: `${rng.pick(W.esWords)} de ${rng.pick(W.esWords)}`, latin: null }
    case "en":
      return { value: enTitle(rng), latin: null }
  }
}

const personName = (rng: Rng, lang: Lang, female: boolean): { display: Name; localized: Json; lang: string } => {
  switch (lang) {
    case "ja": {
      const f = rng.pick(W.jaFamily)
      const g = rng.pick(female ? W.jaGivenFemale : W.jaGivenMale)
      return {
        display: { value: `${f[0]} ${g[0]}`, latin: `${f[1]} ${g[1]}` },
        localized: rng.chance(0.3) ? localizedJson([["en", { value: `${g[1]} ${f[1]}`, latin: null }]]) : emptyObject,
        lang: "ja"
      }
    }
    case "zh-Hans":
    case "zh-Hant": {
      const f = rng.pick(W.zhFamily)
      const g = rng.pick(W.zhGiven)
      return { display: { value: `${f[0]}${g[0]}`, latin: `${f[1]} ${g[1]}` }, localized: emptyObject, lang }
    }
    case "ko": {
      const f = rng.pick(W.koFamily)
      const g = rng.pick(W.koGiven)
      return { display: { value: `${f[0]}${g[0]}`, latin: `${f[1]} ${g[1]}` }, localized: emptyObject, lang: "ko" }
    }
    default: {
      const g = rng.pick(female ? W.enGivenFemale : W.enGivenMale)
      return { display: { value: `${g} ${rng.pick(W.enFamily)}`, latin: null }, localized: emptyObject, lang: "en" }
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// Titles of a work (a function of (seed, work id) only, so merged duplicates can copy them)
// ---------------------------------------------------------------------------------------------------

interface Title {
  readonly lang: Lang
  readonly name: Name
  readonly isMain: boolean
  readonly isOfficial: boolean
}

interface Alias {
  readonly lang: string
  readonly value: string
  readonly kind: "translation" | "spelling_variant" | "search_hint"
}

interface WorkNames {
  readonly olang: Lang
  readonly titles: ReadonlyArray<Title>
  readonly aliases: ReadonlyArray<Alias>
}

const workNames = (seed: number, id: number, sequel: boolean): WorkNames => {
  const rng = Rng.for(seed, S.title, id)
  const olang = olangs[rng.weighted(olangWeights)]
  let main = titleIn(olang, rng)
  if (sequel) {
    const suffix = sequelSuffix(rng)
    main = { value: main.value + suffix.value, latin: main.latin === null ? null : main.latin + suffix.latin }
  }
  const titles: Array<Title> = [{ lang: olang, name: main, isMain: true, isOfficial: true }]
  const add = (lang: Lang, p: number, official: number) => {
    if (lang !== olang && rng.chance(p)) {
      titles.push({ lang, name: titleIn(lang, rng), isMain: false, isOfficial: rng.chance(official) })
    }
  }
  add("en", olang === "en" ? 0 : 0.55, 0.6)
  add("zh-Hans", olang === "ja" || olang === "ko" ? 0.18 : 0.05, 0.5)
  add("ko", olang === "ja" ? 0.06 : 0.02, 0.5)
  add("ja", 0.08, 0.9)
  add("ru", 0.02, 0.3)

  const aliases: Array<Alias> = []
  const latinMain = main.latin ?? main.value
  const words = latinMain.split(/[\s:\-~]+/).filter((w) => /^[A-Za-z]/.test(w))
  if (words.length >= 2 && rng.chance(0.3)) {
    aliases.push({ lang: "en", value: words.map((w) => w[0].toUpperCase()).join(""), kind: "spelling_variant" })
  }
  if (main.latin !== null && rng.chance(0.2)) {
    aliases.push({
      lang: olang,
      value: main.latin.toLowerCase().replace(/uu/g, "u").replace(/ou/g, "o"),
      kind: "spelling_variant"
    })
  }
  if (rng.chance(0.08)) aliases.push({ lang: "en", value: enTitle(rng), kind: "translation" })
  if (rng.chance(0.15)) {
    aliases.push({ lang: olang, value: latinMain.toLowerCase().replace(/[^a-z0-9]+/g, ""), kind: "search_hint" })
  }
  return { olang, titles, aliases: aliases.filter((a) => a.value.length > 0) }
}

// ---------------------------------------------------------------------------------------------------
// Pools: companies, persons and credit names, tags, traits, engines
// ---------------------------------------------------------------------------------------------------

type CompanyKind = "game_brand" | "bunko" | "publisher" | "anime_studio" | "doujin_circle" | "group"
const companyKinds: ReadonlyArray<CompanyKind> = [
  "game_brand",
  "publisher",
  "doujin_circle",
  "group",
  "bunko",
  "anime_studio"
]
const companyKindWeights = [55, 12, 22, 4, 4, 3]

interface Pool {
  /** Live ids (picked by works); merged duplicates are appended after them. */
  readonly live: number
  readonly total: number
  /** For each duplicate id (live + 1 .. total), the live id it was merged into. */
  readonly mergedInto: Int32Array
}

const makePool = (live: number, rng: Rng): Pool => {
  const dups = Math.max(1, Math.round(live * 0.01))
  const mergedInto = new Int32Array(live + dups + 1)
  for (let id = live + 1; id <= live + dups; id++) mergedInto[id] = 1 + rng.int(live)
  return { live, total: live + dups, mergedInto }
}

interface Pools {
  readonly companies: Pool
  readonly companyKind: Array<CompanyKind>
  readonly developers: Zipf<number>
  readonly publishers: Zipf<number>
  readonly persons: Pool
  readonly names: Pool
  readonly namePerson: Int32Array
  readonly voiceNames: Zipf<number>
  readonly staffNames: Zipf<number>
  readonly tags: Pool
  readonly tagCategory: Array<"content" | "sexual" | "technical">
  readonly tagSpoiler: Array<"none" | "minor" | "major">
  readonly tagNames: Array<string>
  readonly sfwTags: Zipf<number>
  readonly sexualTags: Zipf<number>
  readonly traits: ReadonlyArray<TraitDef>
  readonly sfwTraits: Zipf<number>
  readonly sexualTraits: Zipf<number>
  readonly engines: Pool
  readonly engineNames: Array<string>
  readonly enginePick: Zipf<number>
}

interface TraitDef {
  readonly id: number
  readonly name: string
  readonly rootId: number | null
  readonly rootName: string
  readonly rootJa: string
  readonly sexual: boolean
  readonly spoiler: "none" | "minor" | "major"
}

const idRange = (from: number, to: number) => {
  const out: Array<number> = []
  for (let i = from; i <= to; i++) out.push(i)
  return out
}

const buildTagNames = (): Array<readonly [string, "content" | "sexual" | "technical"]> => {
  const out: Array<readonly [string, "content" | "sexual" | "technical"]> = []
  for (const t of W.tagThemes) out.push([t, "content"])
  for (const s of W.tagSettings) out.push([`${s} Setting`, "content"])
  for (const t of W.tagTechnical) out.push([t, "technical"])
  for (const t of W.tagSexual) out.push([t, "sexual"])
  for (const s of W.tagSubjects) out.push([`${s} Route`, "content"])
  for (const m of W.tagModifiers) out.push([`${m} Protagonist`, "content"])
  for (const s of W.tagSubjects) out.push([`Intimacy with ${s}`, "sexual"])
  for (const m of W.tagModifiers) for (const s of W.tagSubjects) out.push([`${m} ${s}`, "content"])
  for (const t of W.tagThemes) for (const s of W.tagSettings) out.push([`${t} in ${s}`, "content"])
  return out
}
const allTagNames = buildTagNames()

const buildTraits = (): Array<TraitDef> => {
  const out: Array<TraitDef> = []
  let id = 0
  for (const [group, ja, children, sexual] of W.traitGroups) {
    const rootId = ++id
    out.push({ id: rootId, name: group, rootId: null, rootName: group, rootJa: ja, sexual, spoiler: "none" })
    for (const child of children) {
      const spoiler = group === "Subject of" ? "minor" : "none"
      out.push({ id: ++id, name: child, rootId, rootName: group, rootJa: ja, sexual, spoiler })
    }
  }
  return out
}
const traitDefs = buildTraits()

const buildPools = (seed: number, works: number): Pools => {
  const rng = Rng.for(seed, S.pool, 0)

  const nCompanies = Math.max(150, Math.round(works * 0.04))
  const companies = makePool(nCompanies, rng)
  const companyKind: Array<CompanyKind> = [companyKinds[0]]
  for (let id = 1; id <= companies.total; id++) {
    companyKind.push(id === 1 ? "group" : companyKinds[rng.weighted(companyKindWeights)])
  }
  const devCandidates = idRange(1, nCompanies).filter((id) =>
    companyKind[id] === "game_brand" || companyKind[id] === "doujin_circle"
  )
  const devIds = devCandidates.length > 0 ? devCandidates : idRange(1, nCompanies)
  const pubIds = idRange(1, nCompanies).filter((id) => companyKind[id] === "publisher")

  const nNames = Math.max(60, Math.round(works * 0.25))
  const names = makePool(nNames, rng)
  const namePerson = new Int32Array(names.total + 1)
  let person = 0
  let id = 1
  const linked = Math.round(nNames * 0.9)
  while (id <= linked) {
    person++
    const count = Math.min(linked - id + 1, 1 + rng.weighted([80, 15, 5]))
    for (let k = 0; k < count; k++) namePerson[id++] = person
  }
  const persons = makePool(person, rng)
  const voiceIds: Array<number> = []
  const staffIds: Array<number> = []
  for (let n = 1; n <= nNames; n++) (n <= 2 ? n === 1 : rng.chance(0.35)) ? voiceIds.push(n) : staffIds.push(n)

  const nTags = Math.min(allTagNames.length, 120 + Math.round(works / 1000))
  const tags = makePool(nTags, rng)
  const tagCategory: Array<"content" | "sexual" | "technical"> = ["content"]
  const tagSpoiler: Array<"none" | "minor" | "major"> = ["none"]
  const tagNames: Array<string> = [""]
  for (let t = 1; t <= tags.total; t++) {
    const [name, category] = allTagNames[(t - 1) % nTags]
    tagNames.push(t > nTags ? `${name} (duplicate)` : name)
    tagCategory.push(category)
    tagSpoiler.push((["none", "minor", "major"] as const)[rng.weighted([85, 10, 5])])
  }
  const sfwTagIds = idRange(1, nTags).filter((t) => tagCategory[t] !== "sexual")
  const sexualTagIds = idRange(1, nTags).filter((t) => tagCategory[t] === "sexual")

  const nEngines = clamp(Math.round(works / 5000), 20, W.engineNames.length * W.engineSuffixes.length)
  const engines = makePool(nEngines, rng)
  const engineNames: Array<string> = [""]
  for (let e = 1; e <= engines.total; e++) {
    const i = (e - 1) % nEngines
    const base = `${W.engineNames[i % W.engineNames.length]} ${
      W.engineSuffixes[Math.floor(i / W.engineNames.length) % W.engineSuffixes.length]
    }`
    engineNames.push(e > nEngines ? base.toLowerCase() : base)
  }

  const nonRoot = traitDefs.filter((t) => t.rootId !== null)
  return {
    companies,
    companyKind,
    developers: new Zipf(shuffled(devIds, rng), 0.9),
    publishers: new Zipf(shuffled(pubIds.length > 0 ? pubIds : devIds, rng), 0.8),
    persons,
    names,
    namePerson,
    voiceNames: new Zipf(shuffled(voiceIds, rng), 0.8),
    staffNames: new Zipf(shuffled(staffIds, rng), 0.8),
    tags,
    tagCategory,
    tagSpoiler,
    tagNames,
    sfwTags: new Zipf(shuffled(sfwTagIds, rng), 0.7),
    sexualTags: new Zipf(shuffled(sexualTagIds, rng), 0.7),
    traits: traitDefs,
    sfwTraits: new Zipf(shuffled(nonRoot.filter((t) => !t.sexual).map((t) => t.id), rng), 0.6),
    sexualTraits: new Zipf(nonRoot.filter((t) => t.sexual).map((t) => t.id), 0.6),
    engines,
    engineNames,
    enginePick: new Zipf(shuffled(idRange(1, nEngines), rng), 1.0)
  }
}

// ---------------------------------------------------------------------------------------------------
// Plan: per-work flags and row counts, so ids can be assigned before rows are produced
// ---------------------------------------------------------------------------------------------------

interface Plan {
  readonly flags: Uint8Array
  readonly into: Int32Array
  readonly current: Int32Array
  readonly releaseCount: Uint8Array
  readonly releaseBase: Float64Array
  readonly rosterCount: Uint8Array
  readonly characterBase: Float64Array
  readonly coverCount: Uint8Array
  readonly coverBase: Float64Array
}

const makePlan = (seed: number, n: number): Plan => {
  const flags = new Uint8Array(n + 1)
  const into = new Int32Array(n + 1)
  const current = new Int32Array(n + 1)
  const releaseCount = new Uint8Array(n + 1)
  const rosterCount = new Uint8Array(n + 1)
  const coverCount = new Uint8Array(n + 1)
  const releaseBase = new Float64Array(n + 2)
  const characterBase = new Float64Array(n + 2)
  const coverBase = new Float64Array(n + 2)
  for (let w = 1; w <= n; w++) {
    const rng = Rng.for(seed, S.plan, w)
    let f = 0
    if (w > 2 && rng.chance(0.01)) f |= F_MERGED
    else if (rng.chance(0.004)) f |= F_WITHDRAWN
    if (rng.chance(0.15)) f |= F_NSFW
    if (rng.chance(0.1)) f |= F_SEQUEL
    const live = (f & (F_MERGED | F_WITHDRAWN)) === 0
    if (live) {
      releaseCount[w] = 1 + rng.weighted([45, 25, 15, 10, 5])
      rosterCount[w] = rng.weighted([20, 15, 20, 20, 12, 6, 3, 2, 1, 1])
      coverCount[w] = rng.weighted([12, 68, 15, 5])
      if (rosterCount[w] > 0 && rng.chance(0.01)) f |= F_DUP_CHARACTER
      if (rng.chance(0.01)) f |= F_DUP_RELEASE
    }
    flags[w] = f
  }
  // Merge targets: the nearest live work before (or after) the merged one; a fifth of the merges
  // point at an earlier merged work instead, forming chains that the redirects flatten.
  let lastMerged = 0
  for (let w = 1; w <= n; w++) {
    if ((flags[w] & F_MERGED) === 0) continue
    const rng = Rng.for(seed, S.plan, -w)
    if (lastMerged > 0 && w - lastMerged < 2000 && rng.chance(0.2)) {
      into[w] = lastMerged
      current[w] = current[lastMerged]
    } else {
      let t = w - 1
      while (t >= 1 && (flags[t] & (F_MERGED | F_WITHDRAWN)) !== 0) t--
      if (t < 1) {
        t = w + 1
        while (t <= n && (flags[t] & (F_MERGED | F_WITHDRAWN)) !== 0) t++
      }
      if (t > n) {
        flags[w] &= ~F_MERGED
        continue
      }
      into[w] = t
      current[w] = t
    }
    lastMerged = w
  }
  releaseBase[1] = 1
  characterBase[1] = 1
  coverBase[1] = 1
  for (let w = 1; w <= n; w++) {
    releaseBase[w + 1] = releaseBase[w] + releaseCount[w] + ((flags[w] & F_DUP_RELEASE) ? 1 : 0)
    characterBase[w + 1] = characterBase[w] + rosterCount[w] + ((flags[w] & F_DUP_CHARACTER) ? 1 : 0)
    coverBase[w + 1] = coverBase[w] + coverCount[w]
  }
  return { flags, into, current, releaseCount, releaseBase, rosterCount, characterBase, coverCount, coverBase }
}

const isLive = (plan: Plan, w: number) => (plan.flags[w] & (F_MERGED | F_WITHDRAWN)) === 0

// ---------------------------------------------------------------------------------------------------
// The generator
// ---------------------------------------------------------------------------------------------------

const platformsFirst = ["win", "win", "win", "win", "win", "win", "win", "swi", "and", "ios", "web", "mac"]
const platformsPort = ["swi", "ps4", "ps5", "psv", "and", "ios", "lin", "mac", "xbo", "win"]
const consoles = new Set(["swi", "ps4", "ps5", "psv", "xbo"])

/** Pools and the per-work plan: computed once per process (deterministic, so workers recompute it). */
export interface PreparedCatalog {
  readonly seed: number
  readonly works: number
  readonly nowMs: number
  readonly pools: Pools
  readonly plan: Plan
}

export const prepareCatalog = (options: GenerateOptions): PreparedCatalog => {
  const works = Math.max(0, Math.floor(options.works))
  return {
    seed: options.seed,
    works,
    nowMs: options.now.getTime(),
    pools: buildPools(options.seed, works),
    plan: makePlan(options.seed, works)
  }
}

/** What the works pass tallies for the shared entities (summed over chunks). */
export interface WorkCounts {
  readonly company: Int32Array
  readonly companySfw: Int32Array
  readonly tag: Int32Array
  readonly tagSfw: Int32Array
  readonly engine: Int32Array
  readonly engineSfw: Int32Array
  liveWorks: number
  nsfwWorks: number
  mergedWorks: number
  withdrawnWorks: number
}

export const emptyCounts = (prepared: PreparedCatalog): WorkCounts => ({
  company: new Int32Array(prepared.pools.companies.total + 1),
  companySfw: new Int32Array(prepared.pools.companies.total + 1),
  tag: new Int32Array(prepared.pools.tags.total + 1),
  tagSfw: new Int32Array(prepared.pools.tags.total + 1),
  engine: new Int32Array(prepared.pools.engines.total + 1),
  engineSfw: new Int32Array(prepared.pools.engines.total + 1),
  liveWorks: 0,
  nsfwWorks: 0,
  mergedWorks: 0,
  withdrawnWorks: 0
})

export const addCounts = (into: WorkCounts, from: WorkCounts): void => {
  for (const key of ["company", "companySfw", "tag", "tagSfw", "engine", "engineSfw"] as const) {
    const target = into[key]
    const source = from[key]
    for (let i = 0; i < target.length; i++) target[i] += source[i]
  }
  into.liveWorks += from.liveWorks
  into.nsfwWorks += from.nsfwWorks
  into.mergedWorks += from.mergedWorks
  into.withdrawnWorks += from.withdrawnWorks
}

/** Row helpers shared by the passes. */
const writer = (prepared: PreparedCatalog, sink: Sink) => {
  const { nowMs, seed } = prepared
  const emit = (table: TableName, cells: ReadonlyArray<Cell>) => sink.row(table, cells)
  const pastTimestamp = (rng: Rng, maxDaysAgo: number) => nowMs - rng.float() * maxDaysAgo * DAY
  /** created_at within `maxDaysAgo`, updated_at between it and now. */
  const stamps = (rng: Rng, maxDaysAgo: number): readonly [string, string] => {
    const created = pastTimestamp(rng, maxDaysAgo)
    return [iso(created), iso(created + rng.float() * (nowMs - created))]
  }
  const image = (
    kind: string,
    id: number,
    rng: Rng,
    width: number,
    height: number,
    sexual: "safe" | "suggestive" | "explicit" | null,
    createdAt: string
  ) => {
    // Stands in for the SHA-256 of the image bytes (there are no bytes): 256 random bits.
    const hash = Rng.for(seed, S.image, id * 8 + imageKinds.indexOf(kind)).hex(8)
    emit("images", [
      hash,
      `${imageHost}/${kind}/${hash.slice(0, 2)}/${hash}.jpg`,
      width,
      height,
      rng.base64(21 + rng.int(6)),
      sexual,
      null,
      "shiori",
      createdAt
    ])
    return hash
  }
  const change = (object: string, id: number, updatedAt: string, gone: boolean) =>
    emit("catalog_changes", [object, id, updatedAt, gone])
  const refsFor = (object: string, id: number, rng: Rng, sources: ReadonlyArray<readonly [string, number]>) => {
    for (const [source, p] of sources) {
      if (!rng.chance(p)) continue
      const [externalId, url] = externalRef(object, source, id)
      emit("entity_refs", [object, id, source, externalId, url])
    }
  }
  return { emit, pastTimestamp, stamps, image, change, refsFor }
}

/** Rows of works `from`..`to` (inclusive) and everything that hangs off them. */
export const generateWorks = (prepared: PreparedCatalog, from: number, to: number, sink: Sink): WorkCounts => {
  const { nowMs, plan, pools, seed } = prepared
  const { change, emit, image, pastTimestamp, refsFor } = writer(prepared, sink)
  const counts = emptyCounts(prepared)
  const companyCount = counts.company
  const companyCountSfw = counts.companySfw
  const tagCount = counts.tag
  const tagCountSfw = counts.tagSfw
  const engineCount = counts.engine
  const engineCountSfw = counts.engineSfw

  // --- Works, and everything that hangs off a work ----------------------------------------------
  for (let w = from; w <= to; w++) {
    const flags = plan.flags[w]
    const live = isLive(plan, w)
    const nsfw = (flags & F_NSFW) !== 0
    const merged = (flags & F_MERGED) !== 0
    const rng = Rng.for(seed, S.work, w)
    const names = merged
      ? workNames(seed, plan.current[w], (plan.flags[plan.current[w]] & F_SEQUEL) !== 0)
      : workNames(seed, w, (flags & F_SEQUEL) !== 0)
    const titles = merged ? names.titles.slice(0, 1) : names.titles
    const main = titles[0]

    const createdMs = pastTimestamp(rng, 5000)
    const updatedMs = createdMs + rng.float() * (nowMs - createdMs)
    const createdAt = iso(createdMs)
    const updatedAt = iso(updatedMs)

    for (const t of titles) emit("work_titles", [w, t.lang, t.name.value, t.name.latin, t.isMain, t.isOfficial])
    const aliases = merged ? [] : names.aliases
    aliases.forEach((a, i) => emit("entity_aliases", ["work", w, i, a.lang, a.value, a.kind, false]))
    const searchNames: Array<string> = []
    for (const t of titles) {
      searchNames.push(t.name.value)
      if (t.name.latin !== null) searchNames.push(t.name.latin)
    }
    for (const a of aliases) searchNames.push(a.value)
    const doc = searchDocument(searchNames)
    const localized = localizedJson(titles.map((t) => [t.lang, t.name] as const))

    if (!live) {
      if (merged) {
        counts.mergedWorks++
        emit("catalog_redirects", ["work", w, plan.into[w], plan.current[w], updatedAt])
      } else {
        counts.withdrawnWorks++
      }
      emit("works", [
        w,
        main.name.value,
        main.name.latin,
        main.lang,
        localized,
        names.olang,
        null,
        null,
        null,
        nsfw,
        null,
        [],
        [],
        0,
        null,
        null,
        null,
        null,
        null,
        "finished",
        null,
        createdAt,
        updatedAt,
        merged ? plan.into[w] : null,
        !merged
      ])
      // The search row carries the work's ranking columns (migrations/0006).
      emit("work_search", [w, doc.norm, doc.key, 0, false, nsfw])
      // What the facets count (migrations/0008).
      emit("work_facets", [w, names.olang, [], [], [], []])
      change("work", w, updatedAt, true)
      continue
    }
    counts.liveWorks++
    if (nsfw) counts.nsfwWorks++

    // Popularity: a Zipf-like rank drawn per work.
    const rank = 1 + rng.float() * Math.max(1, prepared.works)
    const popularity = Math.round(100 * Math.pow(rank, -0.8) * 10000) / 10000
    emit("work_search", [w, doc.norm, doc.key, popularity, true, nsfw])
    const lengthMinutes = rng.chance(0.5) ? null : Math.round(Math.exp(Math.log(120) + rng.float() * Math.log(50)))
    const engineId = rng.chance(0.55) ? pools.enginePick.pick(rng) : null
    if (engineId !== null) {
      engineCount[engineId]++
      if (!nsfw) engineCountSfw[engineId]++
    }

    // Companies: one or two developers, a publisher (often the developer itself).
    const developers = new Set<number>([pools.developers.pick(rng)])
    if (rng.chance(0.1)) developers.add(pools.developers.pick(rng))
    const publisher = rng.chance(0.5) ? [...developers][0] : pools.publishers.pick(rng)
    const workCompanies = new Map<number, { dev: boolean; pub: boolean }>()
    for (const d of developers) workCompanies.set(d, { dev: true, pub: d === publisher })
    if (!workCompanies.has(publisher)) workCompanies.set(publisher, { dev: false, pub: true })
    for (const [companyId, roles] of workCompanies) {
      emit("work_companies", [w, companyId, roles.dev, roles.pub])
      companyCount[companyId]++
      if (!nsfw) companyCountSfw[companyId]++
    }

    // Releases.
    const rr = Rng.for(seed, S.release, w)
    const releaseCount = plan.releaseCount[w]
    const releaseBase = plan.releaseBase[w]
    const firstDate = firstReleaseDate(rr, nowMs)
    const voiced = (["none", "ero_only", "partial", "full"] as const)[rr.weighted([25, 10, 35, 30])]
    const platforms = new Set<string>()
    const media = new Set<string>()
    let bestKey = Infinity
    let released: PartialDate | null = null
    for (let i = 0; i < releaseCount; i++) {
      const id = releaseBase + i
      let date: PartialDate | null
      if (i === 0) date = firstDate
      else if (firstDate === null) date = null
      else {
        const ms = partialMs(firstDate) + rr.range(30, 1500) * DAY
        date = toPartial(ms, (["day", "month", "year"] as const)[rr.weighted([85, 10, 5])])
      }
      if (date !== null && dateKey(date) < bestKey) {
        bestKey = dateKey(date)
        released = date
      }
      const port = i > 0 && rr.chance(0.5)
      const releasePlatforms = port
        ? [rr.pick(platformsPort)]
        : i === 0
        ? [rr.pick(platformsFirst)]
        : ["win"]
      if (releasePlatforms[0] === "win" && rr.chance(0.15)) releasePlatforms.push(rr.pick(["mac", "lin"]))
      const releasePlatformsUnique = [...new Set(releasePlatforms)]
      const onConsole = releasePlatformsUnique.some((p) => consoles.has(p))
      const releaseMedia = onConsole
        ? [rr.chance(0.5) ? "cart" : "dl"]
        : rr.chance(0.6)
        ? ["dl"]
        : [rr.pick(["dvd", "dvd", "cd", "bd"])]
      for (const p of releasePlatformsUnique) platforms.add(p)
      for (const m of releaseMedia) media.add(m)
      const langs: Array<string> = i === 0
        ? [names.olang]
        : [rr.pick(["en", "en", "zh-Hans", names.olang, "ko", "ru"])]
      const title = titles.find((t) => t.lang === langs[0]) ?? main
      const releaseNsfw = nsfw && !onConsole && (i === 0 || rr.chance(0.6))
      const official = i === 0 || rr.chance(0.8)
      const packaged = releaseMedia[0] !== "dl"
      emit("releases", [
        id,
        w,
        title.name.value,
        title.name.latin,
        title.lang,
        emptyObject,
        date?.y ?? null,
        date?.m ?? null,
        date?.d ?? null,
        langs,
        releasePlatformsUnique,
        releaseMedia,
        releaseNsfw,
        releaseNsfw ? 18 : rr.chance(0.5) ? rr.pick([0, 12, 15, 17]) : null,
        rr.chance(0.08) ? "trial" : rr.chance(0.04) ? "partial" : "complete",
        official,
        !official && rr.chance(0.5),
        rr.chance(0.08),
        voiced,
        engineId,
        packaged && rr.chance(0.5) ? `45${String(rr.int(1e11)).padStart(11, "0")}` : null,
        packaged && rr.chance(0.5) ? `${rr.pick(["KID", "NSV", "PCG", "VNS"])}-${rr.range(1000, 9999)}` : null,
        createdAt,
        updatedAt,
        null,
        false
      ])
      emit("release_companies", [id, publisher, i === 0 && developers.has(publisher), true])
      if (i === 0) {
        for (const d of developers) if (d !== publisher) emit("release_companies", [id, d, true, false])
      }
      refsFor("release", id, rr, [["vndb", 0.35]])
      change("release", id, updatedAt, false)
    }
    if ((flags & F_DUP_RELEASE) !== 0) {
      const dup = releaseBase + releaseCount
      emit("releases", [
        dup,
        w,
        main.name.value,
        main.name.latin,
        main.lang,
        emptyObject,
        null,
        null,
        null,
        [names.olang],
        ["win"],
        [],
        false,
        null,
        "complete",
        true,
        false,
        false,
        null,
        null,
        null,
        null,
        createdAt,
        updatedAt,
        releaseBase,
        false
      ])
      emit("catalog_redirects", ["release", dup, releaseBase, releaseBase, updatedAt])
      change("release", dup, updatedAt, true)
    }
    const devStatus = firstDate === null
      ? (rng.chance(0.3) ? "cancelled" : "in_development")
      : dateKey(firstDate) > dateKey(toPartial(nowMs, "day"))
      ? "in_development"
      : "finished"

    // Ratings from the five sources, each with its own coverage; denormalized onto the work.
    const quality = rng.normal(66, 11)
    const ratingColumns: Array<number | null> = []
    const coverage = [0.75, olangOf(names) === "zh" ? 0.6 : 0.4, names.olang === "ja" ? 0.45 : 0.05, 0.12, 0.2]
    ratingSources.forEach((source, i) => {
      let p = coverage[i]
      if (source === "steam" && names.olang !== "ja") p = 0.3
      if (source === "dlsite" && nsfw) p = 0.45
      if (!rng.chance(Math.min(0.95, p + popularity / 200))) {
        ratingColumns.push(null)
        return
      }
      const score = round1(clamp(quality + rng.normal(0, 6), 5, 99))
      const votes = Math.max(1, Math.round((popularity * 40 + 3) * (0.3 + rng.float() * 1.4)))
      emit("ratings", [w, source, score, votes, updatedAt])
      ratingColumns.push(score)
    })

    emit("works", [
      w,
      main.name.value,
      main.name.latin,
      main.lang,
      localized,
      names.olang,
      released?.y ?? null,
      released?.m ?? null,
      released?.d ?? null,
      nsfw,
      lengthMinutes,
      [...platforms].sort(),
      [...media].sort(),
      popularity,
      ...ratingColumns,
      devStatus,
      engineId,
      createdAt,
      updatedAt,
      null,
      false
    ])
    change("work", w, updatedAt, false)

    // Tags.
    const tagIds = new Set<number>()
    const tagTarget = rng.range(2, 8)
    for (let i = 0; i < tagTarget * 2 && tagIds.size < tagTarget; i++) tagIds.add(pools.sfwTags.pick(rng))
    if (nsfw && pools.sexualTags.size > 0) {
      const extra = rng.range(1, 3)
      for (let i = 0; i < extra; i++) tagIds.add(pools.sexualTags.pick(rng))
    }
    for (const tagId of tagIds) {
      const spoiler = rng.chance(0.85) ? pools.tagSpoiler[tagId] : rng.pick(["none", "minor", "major"] as const)
      emit("work_tags", [w, tagId, spoiler, round1(0.5 + rng.float() * 2.5)])
      tagCount[tagId]++
      if (!nsfw) tagCountSfw[tagId]++
    }
    emit("work_facets", [
      w,
      names.olang,
      [...media].sort(),
      [...platforms].sort(),
      [...tagIds].sort((a, b) => a - b).map(String),
      [...workCompanies.keys()].sort((a, b) => a - b).map(String)
    ])

    // Covers.
    const rc = Rng.for(seed, S.cover, w)
    for (let i = 0; i < plan.coverCount[w]; i++) {
      const coverId = plan.coverBase[w] + i
      const digital = rc.chance(0.3)
      const sexual = nsfw
        ? (["safe", "suggestive", "explicit"] as const)[rc.weighted([60, 30, 10])]
        : rc.chance(0.9)
        ? "safe"
        : "suggestive"
      const hash = image("cv", coverId, rc, digital ? 1280 : 256, digital ? 720 : 362, sexual, createdAt)
      const votes = i === 0 ? Math.round(popularity * 3 * rc.float()) + rc.int(5) : rc.int(3)
      emit("covers", [
        coverId,
        w,
        hash,
        votes,
        i === 0 && rc.chance(0.05),
        digital ? "digital" : rc.pick(["package", "package", "limited", ""]),
        createdAt
      ])
    }

    // Refs, links, intros.
    refsFor("work", w, rng, [
      ["vndb", 0.85],
      ["egs", names.olang === "ja" ? 0.5 : 0.05],
      ["bangumi", 0.4],
      [
        "steam",
        0.1
      ],
      ["dlsite", nsfw ? 0.3 : 0.08],
      ["wikidata", 0.1]
    ])
    let linkPos = 0
    if (rng.chance(0.4)) {
      const slug = slugOf(main.name.latin ?? main.name.value, w)
      emit("entity_links", ["work", w, linkPos++, "official", `https://www.${slug}.example.jp/`, "", names.olang])
    }
    if (rng.chance(0.2)) emit("entity_links", ["work", w, linkPos++, "twitter", `https://x.example/work${w}`, "", null])
    let introPos = 0
    if (rng.chance(0.65)) {
      emit("entity_intros", ["work", w, introPos++, names.olang, introIn(names.olang, rng), false, "vndb"])
    }
    if (names.olang !== "en" && rng.chance(0.35)) {
      emit("entity_intros", ["work", w, introPos++, "en", introIn("en", rng), rng.chance(0.25), "official"])
    }

    // Characters: the roster (plus sequel guests), traits, images, voices.
    const rch = Rng.for(seed, S.character, w)
    const rcr = Rng.for(seed, S.credit, w)
    const rosterCount = plan.rosterCount[w]
    const characterBase = plan.characterBase[w]
    const roster: Array<{ id: number; female: boolean }> = []
    const cultureLang = names.olang === "zh-Hant" ? "zh-Hant" : names.olang
    for (let i = 0; i < rosterCount; i++) {
      const id = characterBase + i
      const protagonist = i === 0 && rch.chance(0.7)
      const female = protagonist ? rch.chance(0.3) : rch.chance(0.9)
      const name = personName(rch, rch.chance(0.9) ? cultureLang : "en", female)
      const role = protagonist ? "main" : i <= 3 ? "secondary" : "appears"
      const spoiler = (["none", "minor", "major"] as const)[rch.weighted([89, 8, 3])]
      roster.push({ id, female })
      emitCharacter(
        id,
        name,
        female,
        nsfw,
        rch,
        createdAt,
        updatedAt,
        i > 0 && rch.chance(0.005) ? characterBase : null
      )
      emit("work_characters", [w, id, role, spoiler, rch.opaque(), i])
      const traitCount = rch.weighted([15, 25, 25, 18, 10, 5, 2])
      const traitIds = new Set<number>()
      for (let k = 0; k < traitCount; k++) traitIds.add(pools.sfwTraits.pick(rch))
      if (nsfw && rch.chance(0.3)) traitIds.add(pools.sexualTraits.pick(rch))
      for (const t of traitIds) {
        const def = traitDefs[t - 1]
        const spoilerT = rch.chance(0.9) ? def.spoiler : rch.pick(["minor", "major"] as const)
        emit("character_traits", [id, t, spoilerT, rch.chance(0.01)])
      }
      if (rch.chance(0.5)) {
        const hash = image("ch", id, rch, 256, 300, nsfw && rch.chance(0.2) ? "suggestive" : "safe", createdAt)
        emit("entity_images", ["character", id, "image", hash])
      }
      if (rch.chance(0.03)) {
        const hash = image("cf", id, rch, 600, 1400, "safe", createdAt)
        emit("entity_images", ["character", id, "figure", hash])
      }
      if (rch.chance(0.1)) {
        const nick = (name.display.latin ?? name.display.value).split(" ").pop() ?? ""
        if (nick) {
          emit("entity_aliases", ["character", id, 0, "en", `${nick.slice(0, 3)}-chan`, "spelling_variant", false])
        }
      }
      if (rch.chance(0.25)) {
        emit("entity_intros", ["character", id, 0, "en", characterIntro(rch), false, "vndb"])
      }
      refsFor("character", id, rch, [["vndb", 0.35]])
      change("character", id, updatedAt, false)
    }
    if ((flags & F_DUP_CHARACTER) !== 0) {
      const dup = characterBase + rosterCount
      const name = personName(rch, cultureLang, roster[0].female)
      emitCharacter(dup, name, roster[0].female, nsfw, rch, createdAt, updatedAt, null, characterBase)
      emit("catalog_redirects", ["character", dup, characterBase, characterBase, updatedAt])
      change("character", dup, updatedAt, true)
    }
    // Sequel guests: characters of a recent work with the same content rating.
    const guests: Array<number> = []
    if ((flags & F_SEQUEL) !== 0) {
      for (let back = 1; back <= 30 && w - back >= 1; back++) {
        const prev = w - back
        if (!isLive(plan, prev) || plan.rosterCount[prev] === 0) continue
        if ((plan.flags[prev] & F_NSFW) !== (flags & F_NSFW)) continue
        const count = Math.min(plan.rosterCount[prev], rch.range(1, 2))
        for (let k = 0; k < count; k++) {
          const id = plan.characterBase[prev] + k
          guests.push(id)
          emit("work_characters", [w, id, k === 0 ? "secondary" : "appears", "none", rch.opaque(), rosterCount + k])
        }
        break
      }
    }

    // Credits: staff by role, voices for the roster.
    const creditKeys = new Set<string>()
    let position = 0
    const credit = (nameId: number, role: string, characterId: number | null, note: string) => {
      const key = `${nameId}/${role}/${characterId ?? ""}`
      if (creditKeys.has(key)) return
      creditKeys.add(key)
      emit("credits", [w, rcr.opaque(), nameId, role, characterId, note, position++])
    }
    if (rcr.chance(0.35)) credit(pools.staffNames.pick(rcr), "director", null, "")
    if (rcr.chance(0.9)) credit(pools.staffNames.pick(rcr), "scenario", null, "")
    if (rcr.chance(0.3)) credit(pools.staffNames.pick(rcr), "scenario", null, rcr.chance(0.5) ? "assistant" : "")
    if (rcr.chance(0.6)) credit(pools.staffNames.pick(rcr), "chardesign", null, "")
    if (rcr.chance(0.8)) credit(pools.staffNames.pick(rcr), "art", null, "")
    if (rcr.chance(0.25)) credit(pools.staffNames.pick(rcr), "art", null, "background art")
    if (rcr.chance(0.7)) credit(pools.staffNames.pick(rcr), "music", null, "")
    if (rcr.chance(0.4)) credit(pools.voiceNames.pick(rcr), "songs", null, rcr.pick(["opening song", "ending song"]))
    if (rcr.chance(0.2)) credit(pools.staffNames.pick(rcr), "staff", null, rcr.pick(["script", "testing", ""]))
    if (voiced !== "none") {
      for (const c of roster) if (rcr.chance(0.6)) credit(pools.voiceNames.pick(rcr), "voice", c.id, "")
      for (const g of guests) if (rcr.chance(0.5)) credit(pools.voiceNames.pick(rcr), "voice", g, "")
    }
  }

  // --- Character rows (a closure so the roster loop above stays readable) -------------------------
  function emitCharacter(
    id: number,
    name: { display: Name; localized: Json; lang: string },
    female: boolean,
    nsfw: boolean,
    rng: Rng,
    createdAt: string,
    updatedAt: string,
    instanceOf: number | null,
    mergedInto: number | null = null
  ) {
    const hasBirthday = rng.chance(0.55)
    const month = 1 + rng.int(12)
    const day = 1 + rng.int([31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1])
    const measured = female && rng.chance(0.15)
    emit("characters", [
      id,
      name.display.value,
      name.display.latin,
      name.lang,
      name.localized,
      hasBirthday ? `${String(month).padStart(2, "0")}-${String(day).padStart(2, "0")}` : null,
      rng.chance(0.25) ? rng.pick(["a", "b", "ab", "o"]) : null,
      rng.chance(0.95) ? (female ? "female" : "male") : "other",
      rng.chance(0.5) ? rng.range(female ? 140 : 160, female ? 175 : 190) : null,
      rng.chance(0.2) ? rng.range(38, 80) : null,
      measured ? rng.range(72, 98) : null,
      measured ? rng.range(52, 64) : null,
      measured ? rng.range(76, 94) : null,
      measured && rng.chance(0.7) ? rng.pick(["A", "B", "C", "D", "E", "F"]) : null,
      instanceOf,
      nsfw,
      createdAt,
      updatedAt,
      mergedInto,
      false
    ])
  }

  return counts
}

/** Rows of the shared entities: companies, persons and credit names, tags, traits, engines. */
export const generateShared = (prepared: PreparedCatalog, counts: WorkCounts, sink: Sink): void => {
  const { pools, seed } = prepared
  const { change, emit, image, refsFor, stamps } = writer(prepared, sink)
  const companyCount = counts.company
  const companyCountSfw = counts.companySfw
  const tagCount = counts.tag
  const tagCountSfw = counts.tagSfw
  const engineCount = counts.engine
  const engineCountSfw = counts.engineSfw

  // --- Companies ------------------------------------------------------------------------------------
  {
    const rng = Rng.for(seed, S.company, 0)
    const { companies, companyKind } = pools
    const heads = idRange(1, companies.live).filter((id) =>
      companyKind[id] === "group" || companyKind[id] === "publisher"
    )
    // A few heads get most of the families, so some families exceed the 60-node graph walk.
    const headPick = new Zipf(shuffled(heads.length > 0 ? heads : [1], rng), 1.3)
    for (let id = 1; id <= companies.total; id++) {
      const dup = id > companies.live
      const r = Rng.for(seed, S.company, id)
      const kind = companyKind[id]
      const name = companyName(Rng.for(seed, S.company, dup ? -companies.mergedInto[id] : -id))
      const [createdAt, updatedAt] = stamps(r, 6000)
      emit("companies", [
        id,
        name.display.value,
        name.display.latin,
        name.lang,
        name.localized,
        kind,
        dup ? 0 : companyCount[id],
        dup ? 0 : companyCountSfw[id],
        createdAt,
        updatedAt,
        dup ? companies.mergedInto[id] : null,
        false
      ])
      if (dup) {
        emit("catalog_redirects", ["company", id, companies.mergedInto[id], companies.mergedInto[id], updatedAt])
        change("company", id, updatedAt, true)
        continue
      }
      change("company", id, updatedAt, false)
      if (kind === "game_brand" || kind === "bunko" || kind === "anime_studio") {
        // Company 1 heads one family big enough to truncate the graph walk even in a small catalog.
        if (id <= 140 && r.chance(0.9)) {
          if (r.chance(0.85)) emit("company_relations", [id, "parent", 1])
          else emit("company_relations", [1, "imprint", id])
        } else if (r.chance(0.35)) {
          const head = headPick.pick(r)
          if (head !== id) emit("company_relations", [id, "parent", head])
        } else if (r.chance(0.12)) {
          const head = headPick.pick(r)
          if (head !== id) emit("company_relations", [head, "imprint", id])
        }
        if (id > 2 && r.chance(0.05)) emit("company_relations", [2 + r.int(id - 2), "spawned", id])
        if (id > 2 && r.chance(0.05)) emit("company_relations", [2 + r.int(id - 2), "succeeded_by", id])
      }
      if (r.chance(0.1) && name.display.latin !== null) {
        emit("entity_aliases", ["company", id, 0, "en", name.display.latin.toUpperCase(), "spelling_variant", false])
      }
      if (r.chance(0.2)) {
        emit("entity_intros", [
          "company",
          id,
          0,
          "en",
          `${name.display.latin ?? name.display.value} is a ${kind.replace("_", " ")} founded in ${1985 + r.int(38)}.`,
          false,
          "vndb"
        ])
      }
      if (r.chance(0.5)) {
        emit("entity_links", [
          "company",
          id,
          0,
          "official",
          `https://www.${slugOf(name.display.latin ?? name.display.value, id)}.example.jp/`,
          "",
          name.lang
        ])
      }
      if (r.chance(0.3)) {
        const hash = image("lg", id, r, 400, 200, "safe", createdAt)
        emit("entity_images", ["company", id, "logo", hash])
      }
      refsFor("company", id, r, [["vndb", 0.6], ["wikidata", 0.1]])
    }
  }

  // --- Persons and credit names ---------------------------------------------------------------------
  {
    const { persons, names, namePerson } = pools
    const personDisplay: Array<{ display: Name; localized: Json; lang: string } | null> = [null]
    for (let id = 1; id <= persons.total; id++) {
      const dup = id > persons.live
      const r = Rng.for(seed, S.person, id)
      const female = r.chance(0.55)
      const lang = (["ja", "ja", "ja", "ja", "ja", "ja", "zh-Hans", "ko", "en"] as const)[r.int(9)]
      const name = personName(r, lang, female)
      personDisplay.push(name)
      const isPublic = r.chance(0.85)
      const hasYear = isPublic && r.chance(0.4)
      const hasMonth = hasYear ? r.chance(0.7) : isPublic && r.chance(0.1)
      const [createdAt, updatedAt] = stamps(r, 6000)
      emit("persons", [
        id,
        name.display.value,
        name.display.latin,
        name.lang,
        name.localized,
        isPublic && r.chance(0.8) ? (female ? "female" : "male") : null,
        hasYear ? r.range(1955, 2002) : null,
        hasMonth ? r.range(1, 12) : null,
        hasMonth && r.chance(0.8) ? r.range(1, 28) : null,
        isPublic,
        createdAt,
        updatedAt,
        dup ? persons.mergedInto[id] : null,
        false
      ])
      if (dup) emit("catalog_redirects", ["person", id, persons.mergedInto[id], persons.mergedInto[id], updatedAt])
      change("person", id, updatedAt, dup)
    }
    for (let id = 1; id <= names.total; id++) {
      const dup = id > names.live
      const r = Rng.for(seed, S.person, -id)
      const personId = dup ? 0 : namePerson[id]
      const first = personId > 0 && (id === 1 || namePerson[id - 1] !== personId)
      const name = first
        ? personDisplay[personId]!
        : personName(r, (["ja", "ja", "ja", "zh-Hans", "en"] as const)[r.int(5)], r.chance(0.55))
      const [createdAt, updatedAt] = stamps(r, 6000)
      emit("credit_names", [
        id,
        personId > 0 ? personId : null,
        name.display.value,
        name.display.latin,
        name.lang,
        name.localized,
        createdAt,
        updatedAt,
        dup ? names.mergedInto[id] : null,
        false
      ])
      if (dup) {
        emit("catalog_redirects", ["credit_name", id, names.mergedInto[id], names.mergedInto[id], updatedAt])
        change("credit_name", id, updatedAt, true)
        continue
      }
      change("credit_name", id, updatedAt, false)
      if (r.chance(0.1)) {
        emit("entity_intros", [
          "credit_name",
          id,
          0,
          "en",
          `${name.display.latin ?? name.display.value} works as ${
            r.pick(["a scenario writer", "an illustrator", "a voice actor", "a composer", "a director"])
          }.`,
          false,
          "vndb"
        ])
      }
      if (r.chance(0.15)) {
        emit("entity_links", ["credit_name", id, 0, "twitter", `https://x.example/name${id}`, "", null])
      }
      if (r.chance(0.1)) {
        const hash = image("ph", id, r, 300, 400, "safe", createdAt)
        emit("entity_images", ["credit_name", id, "photo", hash])
      }
      refsFor("credit_name", id, r, [["vndb", 0.5]])
    }
  }

  // --- Tags, traits, engines --------------------------------------------------------------------------
  {
    const { tags } = pools
    for (let id = 1; id <= tags.total; id++) {
      const dup = id > tags.live
      const r = Rng.for(seed, S.tag, id)
      const category = pools.tagCategory[id]
      const parent = !dup && id > 20 && r.chance(0.6) ? 1 + r.int(20) : null
      const [createdAt, updatedAt] = stamps(r, 6000)
      emit("tags", [
        id,
        pools.tagNames[id],
        r.chance(0.3) ? localizedJson([["ja", { value: `タグ${id}`, latin: null }]]) : emptyObject,
        category,
        parent !== null && pools.tagCategory[parent] === category ? parent : null,
        pools.tagSpoiler[id],
        r.chance(0.7) ? `Works where ${pools.tagNames[id].toLowerCase()} plays a part.` : "",
        r.chance(0.15) ? [pools.tagNames[id].toLowerCase()] : [],
        dup ? 0 : tagCount[id],
        dup ? 0 : tagCountSfw[id],
        createdAt,
        updatedAt,
        dup ? tags.mergedInto[id] : null,
        false
      ])
      if (dup) emit("catalog_redirects", ["tag", id, tags.mergedInto[id], tags.mergedInto[id], updatedAt])
      change("tag", id, updatedAt, dup)
    }
    const r = Rng.for(seed, S.tag, 0)
    for (const t of traitDefs) {
      const [createdAt, updatedAt] = stamps(r, 6000)
      emit("traits", [
        t.id,
        t.name,
        t.rootId === null ? localizedJson([["ja", { value: t.rootJa, latin: null }]]) : emptyObject,
        t.rootId,
        t.spoiler,
        t.sexual,
        "",
        createdAt,
        updatedAt
      ])
    }
    const { engines } = pools
    for (let id = 1; id <= engines.total; id++) {
      const dup = id > engines.live
      const re = Rng.for(seed, S.engine, id)
      const [createdAt, updatedAt] = stamps(re, 6000)
      emit("engines", [
        id,
        pools.engineNames[id],
        re.chance(0.6) ? `${pools.engineNames[id]} is a scripting engine for visual novels.` : "",
        re.chance(0.3) ? [pools.engineNames[id].split(" ")[0]] : [],
        dup ? 0 : engineCount[id],
        dup ? 0 : engineCountSfw[id],
        createdAt,
        updatedAt,
        dup ? engines.mergedInto[id] : null,
        false
      ])
      if (dup) emit("catalog_redirects", ["engine", id, engines.mergedInto[id], engines.mergedInto[id], updatedAt])
      change("engine", id, updatedAt, dup)
    }
  }
}

/** The whole catalog in one pass (tests, small seeds). */
export const generateCatalog = (options: GenerateOptions, sink: Sink): GenerateSummary => {
  const rows = Object.fromEntries(tableNames.map((t) => [t, 0])) as Record<TableName, number>
  const counting: Sink = {
    row: (table, cells) => {
      rows[table]++
      sink.row(table, cells)
    }
  }
  const prepared = prepareCatalog(options)
  const counts = generateWorks(prepared, 1, prepared.works, counting)
  generateShared(prepared, counts, counting)
  return {
    rows,
    works: prepared.works,
    liveWorks: counts.liveWorks,
    nsfwWorks: counts.nsfwWorks,
    mergedWorks: counts.mergedWorks,
    withdrawnWorks: counts.withdrawnWorks
  }
}

// ---------------------------------------------------------------------------------------------------
// Pieces used above
// ---------------------------------------------------------------------------------------------------

const olangOf = (names: WorkNames) => names.olang.startsWith("zh") ? "zh" : names.olang

/** First release date relative to `now`: past (most), future months, year-only, or undated. */
const firstReleaseDate = (rng: Rng, nowMs: number): PartialDate | null => {
  const u = rng.float()
  const nowYear = new Date(nowMs).getUTCFullYear()
  if (u < 0.04) return null
  if (u < 0.07) {
    return { y: rng.chance(0.6) ? nowYear + rng.int(2) : nowYear - 1 - rng.int(25), m: null, d: null }
  }
  if (u < 0.11) {
    return toPartial(nowMs + rng.range(1, 240) * DAY, rng.chance(0.75) ? "day" : "month")
  }
  const daysAgo = Math.min(35 * 365, Math.floor(-Math.log(1 - rng.float()) * 1800) + 1)
  return toPartial(nowMs - daysAgo * DAY, (["day", "month", "year"] as const)[rng.weighted([90, 7, 3])])
}

const companyName = (nameRng: Rng): { display: Name; localized: Json; lang: string } => {
  const lang = (["ja", "ja", "ja", "ja", "ja", "ja", "ja", "zh-Hans", "ko", "en", "en"] as const)[nameRng.int(11)]
  switch (lang) {
    case "ja": {
      const word = nameRng.pick(W.jaKana)
      const suffix = nameRng.pick(W.companyJaSuffix)
      return {
        display: { value: `${word[0]}${suffix[0]}`, latin: `${capitalize(word[1])} ${suffix[1]}` },
        localized: localizedJson([["en", { value: `${capitalize(word[1])} ${suffix[1]}`, latin: null }]]),
        lang
      }
    }
    case "zh-Hans": {
      const a = nameRng.pick(W.zhWords)
      return { display: { value: `${a[0]}工作室`, latin: `${a[1]} Studio` }, localized: emptyObject, lang }
    }
    case "ko": {
      const a = nameRng.pick(W.koWords)
      return { display: { value: `${a[0]} 게임즈`, latin: `${a[1]} Games` }, localized: emptyObject, lang }
    }
    case "en":
      return {
        display: { value: `${nameRng.pick(W.enAdjectives)} ${nameRng.pick(W.companyEnSuffix)}`, latin: null },
        localized: emptyObject,
        lang
      }
  }
}

const introIn = (lang: string, rng: Rng): string => {
  const pool = lang === "ja" ? W.introJa : lang.startsWith("zh") ? W.introZh : lang === "ko" ? W.introKo : W.introEn
  const count = rng.range(1, 3)
  const parts: Array<string> = []
  for (let i = 0; i < count; i++) parts.push(rng.pick(pool))
  return parts.join(lang === "ja" || lang.startsWith("zh") ? "" : " ")
}

const characterIntro = (rng: Rng): string => {
  const personality = rng.pick(W.traitGroups[4][2]).toLowerCase()
  const role = rng.pick(W.traitGroups[5][2]).toLowerCase()
  const hobby = rng.pick(W.traitGroups[6][2]).toLowerCase()
  return `A ${personality} ${role} who spends every free moment on ${hobby}.`
}

const slugOf = (text: string, id: number) => {
  const slug = text.toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "").slice(0, 40)
  return slug.length >= 3 ? `${slug}-${id}` : `work-${id}`
}

/** External ids are bijections of the catalog id, so (entity type, source, external id) is unique. */
const externalRef = (object: string, source: string, id: number): readonly [string, string | null] => {
  const prefix = { work: "v", release: "r", character: "c", credit_name: "s", company: "p" }[object] ?? "x"
  switch (source) {
    case "vndb": {
      const ext = `${prefix}${id * 3 + 7}`
      return [ext, `https://vndb.example/${ext}`]
    }
    case "egs":
      return [String(100000 + id), `https://egs.example/game/${100000 + id}`]
    case "bangumi":
      return [String(1000 + id * 2), `https://bangumi.example/subject/${1000 + id * 2}`]
    case "steam":
      return [String(200000 + id * 10), `https://store.steam.example/app/${200000 + id * 10}`]
    case "dlsite": {
      const ext = `RJ${String(100000 + id).padStart(8, "0")}`
      return [ext, `https://www.dlsite.example/work/${ext}`]
    }
    default: {
      const ext = `Q${(object === "work" ? 5_000_000 : 90_000_000) + id * 11}`
      return [ext, `https://www.wikidata.example/wiki/${ext}`]
    }
  }
}
