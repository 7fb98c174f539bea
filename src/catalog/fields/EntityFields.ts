/**
 * The field registry at work (docs/writing.md, "Field keys"): checking a field-key -> value map
 * against the registry's schemas, reading an entity's current values (snapshots, FieldDiffs) and
 * writing new ones (merges, minting), all through the same storage (FieldStore.ts).
 */
import { Context, Effect, Layer, Result, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { EntityType, RegisteredField } from "../../../schema/Catalog/Fields.js"
import { entityObject, fieldOf, fieldsOf } from "../../../schema/Catalog/Fields.js"
import type { FieldError } from "../../../schema/Problem.js"
import { type Collected, collectFieldErrors } from "../../platform/FieldErrors.js"
import { bigintId } from "../shared/Lanes.js"
import { entityTable, refreshWorkSearch, searchedWorkFields, snapshotJson, storageOf } from "./FieldStore.js"

/** Decoded values by field name (`titles`), in the order they were given. */
export type FieldValuesOf = ReadonlyMap<string, unknown>

/** A JSON Pointer token (RFC 6901 section 4). */
export const pointerToken = (token: string) => token.replaceAll("~", "~0").replaceAll("/", "~1")

/**
 * Checks `values` (full keys) against the registry's keys of `entityType`: an unknown key (or a key
 * of another type) is `UNKNOWN_VALUE`, a read-only one `IMMUTABLE`, a bad value the reason its schema
 * fails with (a member its records do not have: `UNKNOWN_VALUE`); each at `/<base>/<key>`. Answers the decoded values and the errors.
 */
export const decodeFields = (
  entityType: EntityType,
  values: Readonly<Record<string, unknown>>,
  base: string
): { readonly values: FieldValuesOf; readonly errors: ReadonlyArray<FieldError> } => {
  const out = new Map<string, unknown>()
  const collected: Collected = { errors: [], code: undefined }
  const allowed = fieldsOf(entityType).map((f) => f.key)
  for (const [key, value] of Object.entries(values)) {
    const pointer = `/${base}/${pointerToken(key)}`
    const field = fieldOf(key)
    if (field === undefined || field.entityType !== entityType) {
      collected.errors.push({
        reason: "UNKNOWN_VALUE",
        detail: `\`${pointer}\`: \`${key}\` is not a field key of ${entityType}.`,
        pointer,
        params: { allowed }
      } as FieldError)
      continue
    }
    if (!field.writable) {
      collected.errors.push({
        reason: "IMMUTABLE",
        detail: `\`${pointer}\`: \`${key}\` is derived by the catalog and cannot be set.`,
        pointer
      } as FieldError)
      continue
    }
    // A member a value's records do not have is refused, as in every request body.
    const decoded = Schema.decodeUnknownResult(field.schema)(value, { errors: "all", onExcessProperty: "error" })
    if (Result.isFailure(decoded)) {
      collectFieldErrors(decoded.failure.issue, "pointer", collected, [base, key])
    } else {
      out.set(field.field, decoded.success)
    }
  }
  return { values: out, errors: collected.errors }
}

/** The visibility of an entity id. */
export type Located =
  | { readonly _tag: "Live"; readonly id: string; readonly nsfw: boolean }
  | { readonly _tag: "Merged"; readonly currentId: string }
  | { readonly _tag: "Missing" }

/** Types whose rows carry the content gate's `nsfw`. */
const gated = new Set<EntityType>(["catalog.work", "catalog.release", "catalog.character"])

export class EntityFields extends Context.Service<EntityFields>()("catalog/EntityFields", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const table = (entityType: EntityType) => sql(entityTable[entityType])
    const nsfwOf = (entityType: EntityType) => gated.has(entityType) ? sql`e.nsfw` : sql`false`

    /**
     * Where `id` stands (`lock`: the row is locked for the rest of the transaction): served, merged
     * away (with the surviving id, following the merge chain), or neither.
     */
    const locate = (entityType: EntityType, id: string, lock = false) =>
      Effect.gen(function*() {
        const key = bigintId(id)
        if (key === undefined) return { _tag: "Missing" } as Located
        const [row] = yield* sql<{ id: string; live: boolean; nsfw: boolean; merged: boolean }>`
          SELECT e.id::text AS id, e.live, ${nsfwOf(entityType)} AS nsfw, e.merged_into IS NOT NULL AS merged
          FROM ${table(entityType)} e WHERE e.id = ${key}::bigint ${lock ? sql`FOR UPDATE` : sql``}`
        if (row === undefined) return { _tag: "Missing" } as Located
        if (row.live) return { _tag: "Live", id: row.id, nsfw: row.nsfw } as Located
        if (!row.merged) return { _tag: "Missing" } as Located
        const [redirect] = yield* sql<{ current_id: string }>`
          SELECT current_id::text AS current_id FROM catalog_redirects
          WHERE target_object = ${entityObject[entityType]} AND from_id = ${key}::bigint`
        return redirect === undefined
          ? { _tag: "Missing" } as Located
          : { _tag: "Merged", currentId: redirect.current_id } as Located
      }).pipe(Effect.orDie)

    /** Whether the content gate hides the entity row (merged away or not). */
    const nsfw = (entityType: EntityType, id: string) =>
      gated.has(entityType)
        ? Effect.map(
          sql<{ nsfw: boolean }>`SELECT e.nsfw FROM ${table(entityType)} e WHERE e.id = ${id}::bigint`,
          ([row]) => row?.nsfw ?? false
        ).pipe(Effect.orDie)
        : Effect.succeed(false)

    /** The current values of `fields` (all of the type's when absent), keyed by full key. */
    const snapshot = (entityType: EntityType, id: string, fields?: ReadonlyArray<string>) =>
      Effect.gen(function*() {
        const names = fields ?? fieldsOf(entityType).map((f) => f.field)
        const [row] = yield* sql<{ v: string }>`
          SELECT (${sql.literal(snapshotJson(entityType, names))})::text AS v
          FROM ${table(entityType)} e WHERE e.id = ${id}::bigint`
        return row === undefined ? undefined : JSON.parse(row.v) as Record<string, unknown>
      }).pipe(Effect.orDie)

    /** The field errors of values that name rows that do not exist (`UNKNOWN_REFERENCE`). */
    const references = (entityType: EntityType, id: string, values: FieldValuesOf, base: string) =>
      Effect.gen(function*() {
        const errors: Array<FieldError> = []
        for (const [field, value] of values) {
          const check = storageOf(entityType, field).references
          if (check === undefined) continue
          const pointer = `/${base}/${pointerToken(`${entityType}.${field}`)}`
          errors.push(...(yield* check({ sql, entityType, id }, value, pointer)))
        }
        return errors
      }).pipe(Effect.orDie)

    /**
     * Writes `values` to the entity (locked by the caller): its columns in one statement with its
     * `updated_at`, then the rows of other tables, then what follows from them (the work's search
     * document), and the entity's change-feed row, whose notification empties every process's caches.
     */
    const apply = (entityType: EntityType, id: string, values: FieldValuesOf) =>
      Effect.gen(function*() {
        const ctx = { sql, entityType, id }
        const columns = [...values].flatMap(([field, value]) =>
          storageOf(entityType, field).columns?.(sql, value) ?? []
        )
        yield* sql`UPDATE ${table(entityType)} SET ${
          sql.csv([...columns.map(([name, v]) => sql`${sql(name)} = ${v}`), sql`updated_at = now()`])
        } WHERE id = ${id}::bigint`
        for (const [field, value] of values) {
          const write = storageOf(entityType, field).write
          if (write !== undefined) yield* write(ctx, value)
        }
        if (entityType === "catalog.work" && [...values.keys()].some((f) => searchedWorkFields.has(f))) {
          yield* refreshWorkSearch(sql, id)
        }
        yield* sql`SELECT catalog_touch(${entityObject[entityType]}, ${id}::bigint)`
      }).pipe(Effect.orDie)

    return { locate, nsfw, snapshot, references, apply } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}

export type { RegisteredField }
