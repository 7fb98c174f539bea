/**
 * Where each key of the field registry (schema/Catalog/Fields.ts) lives in the catalog's tables: the
 * SQL that reads its current value, in the shape the key's schema describes, and the statements that
 * write a new one (docs/writing.md, "Field keys").
 *
 * A value is read with the same SQL before and after a merge writes it, so a FieldDiff's `from` and
 * `to` are exactly what the snapshot shows. Lists are read in the order the entity's reads list them
 * (titles main first, then by language; tags by score; aliases, intros and links as written).
 *
 * Every read expression is SQL text over `e`, the entity's row; it is generated from constants here
 * (and the record schemas, through `objectSql`), never from input. Values reach the database as
 * parameters only.
 */
import { Effect } from "effect"
import type { SqlClient } from "effect/sql"
import type { Fragment } from "effect/sql/Statement"
import { EntityName, Intro, WorkLink } from "../../../schema/Catalog/Common.js"
import type { EntityType } from "../../../schema/Catalog/Fields.js"
import { entityObject, type FieldsOf, FieldSpecs } from "../../../schema/Catalog/Fields.js"
import { WorkTitle } from "../../../schema/Catalog/Work.js"
import type { FieldError } from "../../../schema/Problem.js"
import { refreshCharacterNsfwSql } from "../merge/MergeRepo.js"
import { searchDocument } from "../search/SearchKey.js"
import { objectSql } from "../shared/JsonSql.js"
import { rfc3339Sql } from "../shared/Rfc3339.js"

type Sql = SqlClient.SqlClient

/** What a write knows: the entity and the statements' client. */
export interface WriteContext {
  readonly sql: Sql
  readonly entityType: EntityType
  readonly id: string
}

/** How one key is stored. */
export interface Storage {
  /** The current value as JSON, over the entity row `e`. */
  readonly read: string
  /**
   * Columns of the entity row the value sets (written in one UPDATE with every other column of the
   * patch), or a write of its own (rows of other tables).
   */
  readonly columns?: (sql: Sql, value: any) => ReadonlyArray<readonly [column: string, value: Fragment]>
  readonly write?: (ctx: WriteContext, value: any) => Effect.Effect<void, unknown>
  /** Values that must name rows that exist: the field errors of the ones that do not (pointer under `base`). */
  readonly references?: (
    ctx: WriteContext,
    value: any,
    base: string
  ) => Effect.Effect<ReadonlyArray<FieldError>, unknown>
}

/** The entity tables, by entity type. */
export const entityTable = {
  "catalog.work": "works",
  "catalog.release": "releases",
  "catalog.character": "characters",
  "catalog.credit_name": "credit_names",
  "catalog.company": "companies",
  "catalog.tag": "tags",
  "catalog.engine": "engines"
} as const satisfies Record<EntityType, string>

// -------------------------------------------------------------------------------------------------
// Kinds of storage
// -------------------------------------------------------------------------------------------------

/** A column of the entity row, as the reads write it. */
const column = (name: string, read: string = `e.${name}`): Storage => ({
  read,
  columns: (sql, value) => [[name, sql`${value}`]]
})
const jsonColumn = (name: string): Storage => ({
  read: `e.${name}`,
  columns: (sql, value) => [[name, sql`${JSON.stringify(value)}::jsonb`]]
})
const arrayColumn = (name: string): Storage => ({
  read: `to_json(e.${name})`,
  columns: (sql, value) => [[name, sql`${value as ReadonlyArray<string>}::text[]`]]
})
const derived = (read: string): Storage => ({ read })

/** An empty JSON array where an aggregate found no rows. */
const list = (aggregate: string) => `coalesce((${aggregate}), '[]'::json)`

/**
 * The shared satellites (`entity_aliases`, `entity_intros`, `entity_links`), numbered by `position`
 * in the order written. A write replaces the entity's rows, except those `kept` (the internal search
 * hints of aliases), which the new rows are numbered after. Tables, columns and filters are
 * constants of this file; values reach the database as one JSON parameter.
 */
const satellite = (spec: {
  readonly table: "entity_aliases" | "entity_intros" | "entity_links"
  readonly json: string
  /** The value's members with their column types, in the read record's order. */
  readonly columns: ReadonlyArray<readonly [name: string, type: string]>
  /** Rows a write leaves in place (SQL over the table's own columns), if any. */
  readonly kept?: string
}) =>
(object: string): Storage => {
  const names = spec.columns.map(([name]) => name).join(", ")
  const typed = spec.columns.map(([name, type]) => `${name} ${type}`).join(", ")
  const replaced = spec.kept === undefined ? "" : ` AND NOT (${spec.kept})`
  return {
    read: list(`SELECT json_agg(${spec.json} ORDER BY s.position) FROM ${spec.table} s
      WHERE s.entity_type = '${object}' AND s.entity_id = e.id${replaced}`),
    write: ({ id, sql }, value: ReadonlyArray<unknown>) =>
      Effect.gen(function*() {
        yield* sql`DELETE FROM ${sql(spec.table)} WHERE entity_type = ${object} AND entity_id = ${id}::bigint
          ${sql.literal(replaced)}`
        if (value.length === 0) return
        yield* sql`
          INSERT INTO ${sql(spec.table)} (entity_type, entity_id, position, ${sql.literal(names)})
          SELECT ${object}, ${id}::bigint,
            coalesce((SELECT max(position) + 1 FROM ${sql(spec.table)} WHERE entity_type = ${object}
              AND entity_id = ${id}::bigint), 0) + x.n - 1,
            ${sql.literal(spec.columns.map(([name]) => `x.${name}`).join(", "))}
          FROM ROWS FROM (jsonb_to_recordset(${JSON.stringify(value)}::jsonb) AS (${sql.literal(typed)}))
            WITH ORDINALITY AS x (${sql.literal(names)}, n)`
      })
  }
}

const aliases = satellite({
  table: "entity_aliases",
  json: objectSql(EntityName, {
    lang: "s.lang",
    value: "s.value",
    alias_kind: "s.alias_kind",
    is_machine: "s.is_machine"
  }),
  columns: [["lang", "text"], ["value", "text"], ["alias_kind", "text"], ["is_machine", "boolean"]],
  kept: "alias_kind = 'search_hint'"
})
const intros = satellite({
  table: "entity_intros",
  json: objectSql(Intro, { lang: "s.lang", value: "s.value", is_machine: "s.is_machine", source: "s.source" }),
  columns: [["lang", "text"], ["value", "text"], ["is_machine", "boolean"], ["source", "text"]]
})
const links = satellite({
  table: "entity_links",
  json: objectSql(WorkLink, { site: "s.site", url: "s.url", label: "s.label", lang: "s.lang" }),
  columns: [["site", "text"], ["url", "text"], ["label", "text"], ["lang", "text"]]
})

/** The name columns every entity but tags and engines has. */
const names = {
  display_name: column("display_name"),
  latin: column("latin"),
  lang: column("lang"),
  localized: jsonColumn("localized")
}

const partialDate =
  `CASE WHEN e.released_year IS NULL THEN NULL ELSE concat_ws('-', lpad(e.released_year::text, 4, '0'),
    lpad(e.released_month::text, 2, '0'), lpad(e.released_day::text, 2, '0')) END`
const contentRating = "CASE WHEN e.nsfw THEN 'nsfw' ELSE 'sfw' END"

// -------------------------------------------------------------------------------------------------
// Works
// -------------------------------------------------------------------------------------------------

const titleJson = objectSql(WorkTitle, {
  lang: "t.lang",
  value: "t.value",
  latin: "t.latin",
  is_main: "t.is_main",
  is_official: "t.is_official"
})

const titles: Storage = {
  read: list(`SELECT json_agg(${titleJson} ORDER BY t.is_main DESC, t.lang) FROM work_titles t WHERE t.work_id = e.id`),
  write: ({ id, sql }, value: ReadonlyArray<typeof WorkTitle.Type>) =>
    Effect.gen(function*() {
      yield* sql`DELETE FROM work_titles WHERE work_id = ${id}::bigint`
      if (value.length === 0) return
      yield* sql`
        INSERT INTO work_titles (work_id, lang, value, latin, is_main, is_official)
        SELECT ${id}::bigint, x.lang, x.value, x.latin, x.is_main, x.is_official
        FROM jsonb_to_recordset(${JSON.stringify(value)}::jsonb)
          AS x (lang text, value text, latin text, is_main boolean, is_official boolean)`
    })
}

interface TagEntry {
  readonly tag: { readonly id: string }
  readonly spoiler: string
  readonly score: number
}

/**
 * A work's tags. The tags' work counts follow (a served work counts; `work_count_sfw` only when the
 * work is sfw); the facet rows follow by their triggers (migrations/0008).
 */
const tags: Storage = {
  read: list(`SELECT json_agg(json_build_object('tag', json_build_object('id', wt.tag_id::text), 'spoiler', wt.spoiler,
    'score', wt.score) ORDER BY wt.score DESC, wt.tag_id) FROM work_tags wt WHERE wt.work_id = e.id`),
  write: ({ id, sql }, value: ReadonlyArray<TagEntry>) =>
    Effect.gen(function*() {
      const count = (sign: 1 | -1) =>
        sql<{ id: string }>`
          UPDATE tags t SET work_count = t.work_count + ${sign}::int,
            work_count_sfw = t.work_count_sfw + (CASE WHEN w.nsfw THEN 0 ELSE ${sign}::int END)
          FROM work_tags wt JOIN works w ON w.id = wt.work_id AND w.live
          WHERE wt.work_id = ${id}::bigint AND t.id = wt.tag_id
          RETURNING t.id::text AS id`
      const removed = yield* count(-1)
      yield* sql`DELETE FROM work_tags WHERE work_id = ${id}::bigint`
      if (value.length > 0) {
        // As JSON: a parameter array of numbers mixing integers and fractions (3, 2.5) has no one type.
        const rows = JSON.stringify(value.map((v) => ({ tag_id: v.tag.id, spoiler: v.spoiler, score: v.score })))
        yield* sql`
          INSERT INTO work_tags (work_id, tag_id, spoiler, score)
          SELECT ${id}::bigint, x.tag_id::bigint, x.spoiler, x.score
          FROM jsonb_to_recordset(${rows}::jsonb) AS x (tag_id text, spoiler text, score real)`
      }
      const added = yield* count(1)
      // A tag whose count moved changed its record: the feed tells mirrors (once per tag).
      const before = new Set(removed.map((r) => r.id))
      const after = new Set(added.map((r) => r.id))
      const moved = [...before].filter((t) => !after.has(t)).concat([...after].filter((t) => !before.has(t)))
      if (moved.length > 0) {
        yield* sql`SELECT catalog_touch('tag', x) FROM unnest(${moved}::bigint[]) AS x`
      }
    }),
  references: ({ sql }, value: ReadonlyArray<TagEntry>, base) =>
    Effect.map(
      sql<{ id: string }>`SELECT id::text AS id FROM tags WHERE live AND id = ANY(${
        value.map((v) => v.tag.id).filter((t) => t.length <= 18)
      }::bigint[])`,
      (rows) => {
        const live = new Set(rows.map((r) => r.id))
        return value.flatMap((entry, i) =>
          live.has(String(BigInt(entry.tag.id)))
            ? []
            : [unknownReference(`${base}/${i}/tag/id`, `names no tag in the catalog`)]
        )
      }
    )
}

const coverOrder = "c.portrait_pinned DESC, c.vote_count DESC, c.id DESC"

/**
 * The work's cover: the first of its covers (the order of `include=covers`). Writing a hash pins that
 * image's cover row (adding one when the work has none with it) and unpins the others.
 */
const cover: Storage = {
  read: `(SELECT c.image_hash FROM covers c WHERE c.work_id = e.id ORDER BY ${coverOrder} LIMIT 1)`,
  write: ({ id, sql }, hash: string) =>
    Effect.gen(function*() {
      yield* sql`
        INSERT INTO covers (work_id, image_hash)
        SELECT ${id}::bigint, ${hash}
        WHERE NOT EXISTS (SELECT 1 FROM covers WHERE work_id = ${id}::bigint AND image_hash = ${hash})`
      // The newest row of the hash is the pinned one, so the order above reads it back first.
      yield* sql`
        UPDATE covers c SET portrait_pinned = (c.id = (
          SELECT max(id) FROM covers WHERE work_id = ${id}::bigint AND image_hash = ${hash}))
        WHERE c.work_id = ${id}::bigint`
    }),
  // An image some work already has as a cover, or one an editor uploaded as a cover (docs/writing.md,
  // "Editor images").
  references: ({ sql }, hash: string, base) =>
    Effect.map(
      sql<{ found: boolean }>`
        SELECT EXISTS (SELECT 1 FROM covers WHERE image_hash = ${hash})
          OR EXISTS (SELECT 1 FROM images WHERE hash = ${hash} AND source = 'upload' AND preset = 'cover') AS found`,
      ([row]) => row?.found ? [] : [unknownReference(base, "names no cover image in the catalog")]
    )
}

/** Roster or credit rows hidden from every read, by their opaque identity. */
const suppressed = (table: "work_characters" | "credits"): Storage => ({
  read: list(`SELECT json_agg(r.identity ORDER BY r.identity) FROM ${table} r WHERE r.work_id = e.id AND r.suppressed`),
  write: ({ id, sql }, identities: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const changed = yield* sql<{ character_id: string | null }>`
        UPDATE ${sql(table)} SET suppressed = (identity = ANY(${identities}::text[]))
        WHERE work_id = ${id}::bigint AND suppressed <> (identity = ANY(${identities}::text[]))
        RETURNING character_id::text AS character_id`
      // A character seen only through suppressed roster rows of nsfw works (or no longer) changes its
      // content gate; its record changed for the feed too.
      const characters = table === "work_characters"
        ? [...new Set(changed.flatMap((r) => r.character_id === null ? [] : [r.character_id]))]
        : []
      if (characters.length === 0) return
      const refreshed = yield* refreshCharacterNsfwSql(sql, characters)
      for (const { id: character } of refreshed) yield* sql`SELECT catalog_touch('character', ${character}::bigint)`
    }),
  references: ({ id, sql }, identities: ReadonlyArray<string>, base) =>
    Effect.map(
      sql<{ identity: string }>`SELECT identity FROM ${sql(table)}
        WHERE work_id = ${id}::bigint AND identity = ANY(${identities}::text[])`,
      (rows) => {
        const found = new Set(rows.map((r) => r.identity))
        return identities.flatMap((identity, i) =>
          found.has(identity) ? [] : [unknownReference(`${base}/${i}`, "names no row of this work")]
        )
      }
    )
})

const unknownReference = (pointer: string, what: string): FieldError => ({
  reason: "UNKNOWN_REFERENCE",
  detail: `\`${pointer}\` ${what}.`,
  pointer
})

const work = {
  display_name: names.display_name,
  latin: names.latin,
  olang: column("olang"),
  localized: names.localized,
  length_minutes: column("length_minutes"),
  development_status: column("development_status"),
  titles,
  aliases: aliases("work"),
  intros: intros("work"),
  links: links("work"),
  tags,
  cover,
  roster_suppressed: suppressed("work_characters"),
  credits_suppressed: suppressed("credits"),
  released: derived(partialDate),
  content_rating: derived(contentRating),
  platforms: derived("to_json(e.platforms)"),
  media: derived("to_json(e.media)"),
  popularity: derived("e.popularity"),
  created_at: derived(rfc3339Sql("e.created_at")),
  updated_at: derived(rfc3339Sql("e.updated_at"))
} satisfies Record<FieldsOf<"catalog.work">, Storage>

const release = {
  ...names,
  languages: arrayColumn("languages"),
  min_age: column("min_age"),
  release_kind: column("release_kind"),
  is_official: column("is_official"),
  is_patch: column("is_patch"),
  is_freeware: column("is_freeware"),
  voiced: column("voiced"),
  gtin: column("gtin"),
  catalog_number: column("catalog_number"),
  work_id: derived("e.work_id::text"),
  released: derived(partialDate),
  platforms: derived("to_json(e.platforms)"),
  media: derived("to_json(e.media)"),
  content_rating: derived(contentRating),
  updated_at: derived(rfc3339Sql("e.updated_at"))
} satisfies Record<FieldsOf<"catalog.release">, Storage>

interface MeasurementsValue {
  readonly bust_cm: number | null
  readonly waist_cm: number | null
  readonly hips_cm: number | null
  readonly cup: string | null
}

const character = {
  ...names,
  birthday: column("birthday"),
  blood_type: column("blood_type"),
  gender: column("gender"),
  height_cm: column("height_cm"),
  weight_kg: column("weight_kg"),
  measurements: {
    read: `CASE WHEN e.bust_cm IS NULL AND e.waist_cm IS NULL AND e.hips_cm IS NULL AND e.cup IS NULL THEN NULL
      ELSE json_build_object('bust_cm', e.bust_cm, 'waist_cm', e.waist_cm, 'hips_cm', e.hips_cm, 'cup', e.cup) END`,
    columns: (sql, value: MeasurementsValue | null) => [
      ["bust_cm", sql`${value?.bust_cm ?? null}`],
      ["waist_cm", sql`${value?.waist_cm ?? null}`],
      ["hips_cm", sql`${value?.hips_cm ?? null}`],
      ["cup", sql`${value?.cup ?? null}`]
    ]
  },
  aliases: aliases("character"),
  intros: intros("character"),
  instance_of_id: derived("e.instance_of_id::text")
} satisfies Record<FieldsOf<"catalog.character">, Storage>

const creditName = {
  ...names,
  aliases: aliases("credit_name"),
  intros: intros("credit_name"),
  links: links("credit_name"),
  person_id: derived("e.person_id::text")
} satisfies Record<FieldsOf<"catalog.credit_name">, Storage>

const company = {
  ...names,
  company_kind: column("company_kind"),
  aliases: aliases("company"),
  intros: intros("company"),
  links: links("company")
} satisfies Record<FieldsOf<"catalog.company">, Storage>

const tag = {
  display_name: names.display_name,
  localized: names.localized,
  default_spoiler: column("default_spoiler"),
  description: column("description"),
  aliases: arrayColumn("aliases"),
  category: derived("e.category"),
  parent_id: derived("e.parent_id::text")
} satisfies Record<FieldsOf<"catalog.tag">, Storage>

const engine = {
  display_name: names.display_name,
  description: column("description"),
  aliases: arrayColumn("aliases")
} satisfies Record<FieldsOf<"catalog.engine">, Storage>

/** The storage of every key, by entity type and field (the same keys as the registry's). */
export const FieldStorage = {
  "catalog.work": work,
  "catalog.release": release,
  "catalog.character": character,
  "catalog.credit_name": creditName,
  "catalog.company": company,
  "catalog.tag": tag,
  "catalog.engine": engine
} as const satisfies { readonly [T in EntityType]: Record<FieldsOf<T>, Storage> }

// Every key of the registry has its storage, and nothing else does (the types say so; this also
// holds for a registry built at run time).
for (const [type, fields] of Object.entries(FieldSpecs)) {
  const stored = Object.keys(FieldStorage[type as EntityType])
  const declared = Object.keys(fields)
  if (stored.length !== declared.length || declared.some((f) => !stored.includes(f))) {
    throw new Error(`the storage of ${type} does not cover exactly its registered fields`)
  }
}

export const storageOf = (entityType: EntityType, field: string): Storage =>
  (FieldStorage[entityType] as Record<string, Storage>)[field]!

/**
 * The SQL text of a JSON object of `fields`' current values keyed by their full keys, over the
 * entity row `e`. `json_build_object` takes at most 100 arguments: larger sets are merged from parts.
 */
export const snapshotJson = (entityType: EntityType, fields: ReadonlyArray<string>): string => {
  const pairs = fields.map((field) => `'${entityType}.${field}', ${storageOf(entityType, field).read}`)
  const parts: Array<string> = []
  for (let i = 0; i < pairs.length; i += 40) parts.push(`jsonb_build_object(${pairs.slice(i, i + 40).join(", ")})`)
  return parts.length === 0 ? "'{}'::jsonb" : parts.join(" || ")
}

/** The names the title search finds a work by (src/catalog/search/SearchKey.ts). */
export const refreshWorkSearch = (sql: Sql, id: string) =>
  Effect.gen(function*() {
    const rows = yield* sql<{ name: string }>`
      SELECT name FROM (
        SELECT 0 AS o, 0 AS p, w.display_name AS name FROM works w WHERE w.id = ${id}::bigint
        UNION ALL SELECT 0, 1, w.latin FROM works w WHERE w.id = ${id}::bigint AND w.latin IS NOT NULL
        UNION ALL SELECT 1, row_number() OVER (ORDER BY t.is_main DESC, t.lang), t.value
          FROM work_titles t WHERE t.work_id = ${id}::bigint
        UNION ALL SELECT 2, row_number() OVER (ORDER BY t.is_main DESC, t.lang), t.latin
          FROM work_titles t WHERE t.work_id = ${id}::bigint AND t.latin IS NOT NULL
        UNION ALL SELECT 3, a.position, a.value FROM entity_aliases a
          WHERE a.entity_type = 'work' AND a.entity_id = ${id}::bigint
      ) names ORDER BY o, p`
    const document = searchDocument(rows.map((r) => r.name))
    yield* sql`UPDATE work_search SET norm = ${document.norm}, key = ${document.key} WHERE work_id = ${id}::bigint`
  })

/** The fields whose change moves a work's search document. */
export const searchedWorkFields: ReadonlySet<string> = new Set(["display_name", "latin", "titles", "aliases"])

export { entityObject }
