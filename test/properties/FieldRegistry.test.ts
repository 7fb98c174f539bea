/**
 * The field registry (docs/writing.md, "Field keys") against its own schemas, through real HTTP
 * (docs/writing.md, "Edit proposals"). For every writable key of every entity type:
 *
 * - values generated from the key's value schema (Effect's `Arbitrary` derivation, as in
 *   test/properties/Generate.ts) are proposed and merged by a moderator, and read back equal through
 *   the entity's own read route and through the moderation snapshot; the revision of each merge holds
 *   the key's FieldDiff (from the value before, to the value after) exactly when the value changed;
 * - values the key's schema rejects (wrong JSON type, too long, out of range, outside an enumeration,
 *   unstorable text, too many items, a missing member) are 422 `VALIDATION_FAILED` with every error at a
 *   pointer under `/patch/<key>`, never a 5xx.
 *
 * Read-only keys are 422 `IMMUTABLE` even with their current value, and random JSON for random keys
 * (proposals and amendments) is never a 5xx.
 *
 * Repeatable: the values of a key are sampled from `PROPERTY_SEED` (test/properties/Generate.ts);
 * `PROPERTY_RUNS` scales the runs per key (6 by default).
 */
import { describe, expect, it } from "@effect/vitest"
import { Arbitrary, Effect, Result, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { Spoiler } from "../../schema/Catalog/Common.js"
import { type EntityType, EntityTypes, type RegisteredField, registeredFields } from "../../schema/Catalog/Fields.js"
import { pointerToken } from "../../src/catalog/fields/EntityFields.js"
import { entityTable } from "../../src/catalog/fields/FieldStore.js"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape } from "../support/Claims.js"
import { amend, expectStatus, proposalKeys, propose, proposeAndMerge, type Reply } from "../support/Proposals.js"
import { serverLayerOptions } from "../support/TestServers.js"
import { PROPERTY_RUNS, PROPERTY_SEED } from "./Generate.js"

/** Merges per key: 6 by default (the file stays near a minute), more with the long run's `PROPERTY_RUNS`. */
const RUNS = Math.max(6, Math.round(PROPERTY_RUNS / 40))
/** Rejected values sent per key, at most. */
const REJECTIONS = 12
/** Random proposals and amendments of the garbage test, each. */
const GARBAGE = 100

const writable = registeredFields.filter((f) => f.writable)
const readOnly = registeredFields.filter((f) => !f.writable)

// ---------------------------------------------------------------------------------------------
// The entities edited, and the rows a value may name
// ---------------------------------------------------------------------------------------------

interface World {
  readonly keys: { readonly site: string; readonly moderator: string }
  /** One live entity per type. */
  readonly ids: Readonly<Record<EntityType, string>>
  /** Live tags, by id. */
  readonly tags: ReadonlyArray<string>
  /** Hashes of images some work has as a cover. */
  readonly covers: ReadonlyArray<string>
  /** The identities of the edited work's roster and credit rows, as its read emits them with nothing suppressed. */
  readonly roster: ReadonlyArray<string>
  readonly credits: ReadonlyArray<string>
}

/** The read of each entity type that shows every writable key of it (with an nsfw moderator key). */
const readPath: Record<EntityType, (id: string) => string> = {
  "catalog.work": (id) => `/v2/catalog/works/${id}?view=full&include=titles,intros,tags,covers,credits`,
  "catalog.release": (id) => `/v2/catalog/releases/${id}`,
  "catalog.character": (id) => `/v2/catalog/characters/${id}?view=full&include=aliases,intros`,
  "catalog.credit_name": (id) => `/v2/catalog/credit-names/${id}?include=aliases,intros,links`,
  "catalog.company": (id) => `/v2/catalog/companies/${id}?include=aliases,intros,links`,
  "catalog.tag": (id) => `/v2/catalog/tags/${id}`,
  "catalog.engine": (id) => `/v2/catalog/engines/${id}`
}

const objectOf = (type: EntityType) => type.slice("catalog.".length)

const rosterOf = (work: any): Array<string> => (work.characters ?? []).map((c: any) => c.identity)
const creditsOf = (work: any): Array<string> =>
  (work.credits ?? []).flatMap((g: any) => g.credits.map((c: any) => c.identity))

let cachedWorld: World | undefined

const worldOf = (f: ClaimsFixtureShape) =>
  Effect.gen(function*() {
    if (cachedWorld !== undefined) return cachedWorld
    const sql = yield* SqlClient.SqlClient
    const keys = yield* proposalKeys(f, { nsfw: true })
    // The work: one whose roster and credits have rows to suppress and whose covers can be pinned.
    const [work] = yield* sql<{ id: string }>`
      SELECT w.id::text AS id FROM works w
      WHERE w.live
        AND (SELECT count(*) FROM work_characters wc WHERE wc.work_id = w.id) >= 3
        AND (SELECT count(*) FROM credits c WHERE c.work_id = w.id) >= 3
      ORDER BY w.id LIMIT 1`
    expect(work, "a seeded work with roster and credit rows").toBeDefined()
    const ids: Record<string, string> = { "catalog.work": work!.id }
    for (const type of EntityTypes) {
      if (type === "catalog.work") continue
      const [row] = yield* sql<{ id: string }>`
        SELECT id::text AS id FROM ${sql(entityTable[type])} WHERE live ORDER BY id LIMIT 1`
      expect(row, `a live ${type}`).toBeDefined()
      ids[type] = row!.id
    }
    const tags = (yield* sql<{ id: string }>`SELECT id::text AS id FROM tags WHERE live ORDER BY id`).map((r) => r.id)
    const covers = (yield* sql<{ hash: string }>`SELECT DISTINCT image_hash AS hash FROM covers ORDER BY 1`)
      .map((r) => r.hash)
    expect(tags.length, "live tags").toBeGreaterThanOrEqual(8)
    expect(covers.length, "cover images").toBeGreaterThanOrEqual(2)
    // Nothing suppressed: the read then emits every row's identity.
    const entity = { type: "catalog.work", id: work!.id }
    yield* proposeAndMerge(f, keys, entity, {
      "catalog.work.roster_suppressed": [],
      "catalog.work.credits_suppressed": []
    })
    const read = expectStatus(
      yield* f.call("GET", readPath["catalog.work"](work!.id), { key: keys.moderator }),
      200
    )
    const roster = rosterOf(read)
    const credits = creditsOf(read)
    expect(roster.length, "roster rows the work's read shows").toBeGreaterThanOrEqual(2)
    expect(credits.length, "credit rows the work's read shows").toBeGreaterThanOrEqual(2)
    cachedWorld = { keys, ids: ids as Record<EntityType, string>, tags, covers, roster, credits }
    return cachedWorld
  })

// ---------------------------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------------------------

/** A deterministic index of a generated string into `n` choices (FNV-1a). */
const indexOf = (text: string, n: number) => {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return (h >>> 0) % n
}

/** The distinct items of `items` by `key`, first kept. */
const distinctBy = <A>(items: ReadonlyArray<A>, key: (a: A) => unknown): Array<A> => {
  const seen = new Set<unknown>()
  return items.filter((item) => {
    const k = key(item)
    if (seen.has(k)) return false
    seen.add(k)
    return true
  })
}

interface TagEntry {
  readonly tag: { readonly id: string }
  readonly spoiler: string
  readonly score: number
}

/**
 * Values that name rows cannot be random: a random id names nothing (the merge would be 422
 * `UNKNOWN_REFERENCE`, which says nothing about storage). So the generated tag ids, cover hash and
 * suppressed identities are mapped onto existing ones, each generated value always onto the same.
 */
const onto = (field: RegisteredField, world: World, value: unknown): unknown => {
  switch (field.key) {
    case "catalog.work.tags":
      return distinctBy(
        (value as ReadonlyArray<TagEntry>).map((entry) => ({
          ...entry,
          tag: { id: world.tags[indexOf(entry.tag.id, world.tags.length)]! }
        })),
        (entry) => entry.tag.id
      )
    case "catalog.work.cover":
      return world.covers[indexOf(value as string, world.covers.length)]
    case "catalog.work.roster_suppressed":
      return distinctBy(
        (value as ReadonlyArray<string>).map((v) => world.roster[indexOf(v, world.roster.length)]!),
        (v) => v
      )
    case "catalog.work.credits_suppressed":
      return distinctBy(
        (value as ReadonlyArray<string>).map((v) => world.credits[indexOf(v, world.credits.length)]!),
        (v) => v
      )
    default:
      return value
  }
}

/**
 * What a key's values are generated from: its value schema. A work tag's score is stored as `real` and
 * so has at most two decimals (a multiple of 0.01), which Effect's derivation cannot construct (it
 * would discard nearly every list): scores are drawn in hundredths and divided. Every value is still
 * checked against the key's own schema before it is sent.
 */
const TagScoreHundredths = Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 300 }))
const generatorOf = (field: RegisteredField): Arbitrary.Arbitrary<unknown> =>
  field.key === "catalog.work.tags"
    ? Arbitrary.map(
      Arbitrary.schema(
        Schema.Array(
          Schema.Struct({ tag: Schema.Struct({ id: Schema.String }), spoiler: Spoiler, score: TagScoreHundredths })
        )
      ),
      (entries) => entries.map((entry) => ({ ...entry, score: entry.score / 100 }))
    )
    : Arbitrary.schema(field.schema)

/** The value as it goes on the wire (its encoded JSON). */
const wire = (field: RegisteredField, value: unknown): unknown =>
  JSON.parse(JSON.stringify(Schema.encodeUnknownSync(field.schema)(value)))

/** `RUNS` values of a key: small ones first, then larger, mapped onto existing rows where they name rows. */
const valuesOf = (field: RegisteredField, world: World) =>
  Effect.gen(function*() {
    const arbitrary = generatorOf(field)
    const out: Array<unknown> = []
    const sizes = [3, 8, 16]
    for (let block = 0; out.length < RUNS; block++) {
      const sample = yield* Arbitrary.sampleEffect(arbitrary, {
        count: Math.min(4, RUNS - out.length),
        size: sizes[block % sizes.length]!,
        seed: `${PROPERTY_SEED}/fields/${field.key}/${block}`
      }).pipe(Effect.orDie)
      for (const value of sample) out.push(wire(field, onto(field, world, value)))
    }
    return out
  })

/**
 * Lists in the order the reads list them: titles main first then by language, tags by score (highest
 * first) then id, suppressed identities sorted; the others as written.
 */
const ordered = (field: RegisteredField, value: unknown): unknown => {
  if (!Array.isArray(value)) return value
  switch (field.field) {
    case "titles":
      return [...value].sort((a, b) =>
        a.is_main !== b.is_main ? (a.is_main ? -1 : 1) : a.lang < b.lang ? -1 : a.lang > b.lang ? 1 : 0
      )
    case "tags":
      return [...value].sort((a, b) =>
        b.score - a.score || (BigInt(a.tag.id) < BigInt(b.tag.id) ? -1 : BigInt(a.tag.id) > BigInt(b.tag.id) ? 1 : 0)
      )
    case "roster_suppressed":
    case "credits_suppressed":
      return [...value].sort()
    default:
      return value
  }
}

/**
 * A list as a read or the snapshot shows it, ready to compare with `ordered(value)`. Titles (by language)
 * and suppressed identities are sorted in the database's collation: they are compared after the same
 * ordering, with the main title checked to come first. Tags are compared in the order shown.
 */
const comparable = (field: RegisteredField, listed: unknown): unknown => {
  if (field.field === "titles" && Array.isArray(listed) && listed.some((t) => t.is_main)) {
    expect(listed[0].is_main, `main title first: ${JSON.stringify(listed)}`).toBe(true)
  }
  return field.field === "titles" || field.field.endsWith("_suppressed") ? ordered(field, listed) : listed
}

/** The key's value as the entity's read shows it: the read's member, decoded with the key's schema. */
const readMember = (field: RegisteredField, read: any): unknown => {
  const member = field.key === "catalog.work.cover" ? read.covers?.[0]?.hash ?? null : read[field.field]
  const decoded = Schema.decodeUnknownResult(field.schema)(member)
  if (Result.isFailure(decoded)) {
    throw new Error(`${field.key}: the read's member does not decode: ${JSON.stringify(member)}\n${decoded.failure}`)
  }
  // Decoding drops the members the read embeds beyond the key's value (a work tag's whole tag).
  return wire(field, decoded.success)
}

// ---------------------------------------------------------------------------------------------
// Values the schema rejects
// ---------------------------------------------------------------------------------------------

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [k: string]: Json }
type Path = ReadonlyArray<string | number>

const wrongTypes: ReadonlyArray<Json> = [null, true, 0, -1, 0.5, 1e12, "", "x", [], [null], [1], {}, { x: 1 }]

const leafReplacements = (leaf: Json): ReadonlyArray<Json> => {
  if (typeof leaf === "string") return ["x".repeat(20_001), "a\u0000b", "\ud800", "not-a-listed-value", 42, null]
  if (typeof leaf === "number") return [-1, 0.5, 1e12, 40_000, 3.001, 1.0000000001, 1e-300, "1", null]
  if (typeof leaf === "boolean") return ["true", 1, null]
  return ["x", 1.5, false]
}

const setAt = (value: Json, path: Path, next: Json | undefined): Json => {
  if (path.length === 0) return next ?? null
  const [head, ...rest] = path
  if (Array.isArray(value)) {
    const copy = [...value]
    if (next === undefined && rest.length === 0) copy.splice(head as number, 1)
    else copy[head as number] = setAt(copy[head as number]!, rest, next)
    return copy
  }
  const copy: Record<string, Json> = { ...(value as Record<string, Json>) }
  if (next === undefined && rest.length === 0) delete copy[head as string]
  else copy[head as string] = setAt(copy[head as string]!, rest, next)
  return copy
}

/**
 * Every change of one place of `root` (the place at `path`, and each place under it) into something of
 * another type, length or range: a leaf replaced, a list grown past its maximum, an object's member
 * dropped, a list replaced by an object and an object by a list.
 */
const mutationsOf = (root: Json, path: Path = []): Array<Json> => {
  const value = path.reduce<any>((v, k) => v[k], root) as Json
  const at = (next: Json | undefined, where: Path = path) => setAt(root, where, next)
  if (Array.isArray(value)) {
    return [
      ...(value.length > 0 ? [at(Array.from({ length: 501 }, () => value[0]!))] : []),
      at({ 0: "x" }),
      ...value.flatMap((_, i) => mutationsOf(root, [...path, i]))
    ]
  }
  if (value !== null && typeof value === "object") {
    const names = Object.keys(value)
    return [
      at([]),
      ...names.slice(0, 1).map((k) => at(undefined, [...path, k])),
      ...names.flatMap((k) => mutationsOf(root, [...path, k]))
    ]
  }
  return leafReplacements(value).map((r) => at(r))
}

/** Values `field`'s schema rejects: wrong JSON types and changes of one place of valid values. */
const rejectedOf = (field: RegisteredField, valid: ReadonlyArray<unknown>): Array<Json> => {
  const fails = (candidate: Json) => Result.isFailure(Schema.decodeUnknownResult(field.schema)(candidate))
  // The valid value with the most places to change.
  const richest = [...valid].sort((a, b) => JSON.stringify(b).length - JSON.stringify(a).length)[0] as Json
  const candidates = distinctBy([...wrongTypes, ...mutationsOf(richest)], (c) => JSON.stringify(c)).filter(fails)
  // Spread over the candidates: wrong types first, then changes from the top of the value to its leaves.
  const step = Math.max(1, Math.ceil(candidates.length / REJECTIONS))
  return candidates.filter((_, i) => i % step === 0).slice(0, REJECTIONS)
}

// ---------------------------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------------------------

const describeReply = (res: Reply) => `${res.status} ${JSON.stringify(res.body)?.slice(0, 600)}`

/** Never a 5xx (nor a dropped connection); a refusal is a problem document. */
const expectNoServerError = (res: Reply, sent: unknown) => {
  const context = `sent ${JSON.stringify(sent)?.slice(0, 400)}: ${describeReply(res)}`
  expect(res.status, context).toBeGreaterThanOrEqual(200)
  expect(res.status, context).toBeLessThan(500)
  if (res.status >= 400) expect(res.headers.get("content-type"), context).toBe("application/problem+json")
}

describe("field registry: every writable key round-trips through proposals (docs/writing.md, \"Field keys\")", () => {
  it("the registry has writable keys for every entity type", () => {
    expect(new Set(writable.map((f) => f.entityType))).toEqual(new Set(EntityTypes))
  })

  it.layer(
    ClaimsFixtureLive({
      works: 20,
      // Hundreds of proposals and merges: the day's quotas must not answer them first.
      config: { CATALOG_QUOTA_PROPOSALS: "100000000", CATALOG_QUOTA_DECISIONS: "100000000" }
    }),
    serverLayerOptions("300 seconds")
  )((it) => {
    for (const field of writable) {
      it.effect(
        `${field.key}: ${RUNS} generated values merge and read back equal through the read and the snapshot ` +
          `(docs/writing.md, "Edit proposals")`,
        () =>
          Effect.gen(function*() {
            const f = yield* ClaimsFixture
            const world = yield* worldOf(f)
            const id = world.ids[field.entityType]
            const mod = world.keys.moderator
            const snapshotPath = `/v2/moderation/snapshots/${objectOf(field.entityType)}/${id}`
            let before = expectStatus(yield* f.call("GET", snapshotPath, { key: mod }), 200)[field.key]
            for (const value of yield* valuesOf(field, world)) {
              const context = `${field.key} = ${JSON.stringify(value).slice(0, 400)}`
              expect(Schema.is(field.schema)(value), `generated value passes the key's schema: ${context}`).toBe(true)
              const merged = yield* proposeAndMerge(f, world.keys, { type: field.entityType, id }, {
                [field.key]: value
              })
              expect(merged.state, context).toBe("merged")
              const expected = ordered(field, value)
              const [snapshotReply, readReply, revisionReply] = yield* Effect.all([
                f.call("GET", snapshotPath, { key: mod }),
                f.call("GET", readPath[field.entityType](id), { key: mod }),
                f.call("GET", `/v2/revisions/${merged.revision_id}`, { key: mod })
              ], { concurrency: "unbounded" })

              const snapshot = expectStatus(snapshotReply, 200)
              expect(comparable(field, snapshot[field.key]), `snapshot: ${context}`).toEqual(expected)

              const read = expectStatus(readReply, 200)
              if (field.key === "catalog.work.roster_suppressed" || field.key === "catalog.work.credits_suppressed") {
                // Suppressed rows vanish from the read; the others stay.
                const [all, shown] = field.field === "roster_suppressed"
                  ? [world.roster, rosterOf(read)]
                  : [world.credits, creditsOf(read)]
                const hidden = new Set(value as ReadonlyArray<string>)
                expect([...shown].sort(), `read: ${context}`).toEqual(all.filter((i) => !hidden.has(i)).sort())
              } else {
                expect(comparable(field, readMember(field, read)), `read: ${context}`).toEqual(expected)
              }

              // The revision holds the key's FieldDiff exactly when the value changed.
              const revision = expectStatus(revisionReply, 200)
              const after = snapshot[field.key]
              expect(revision.diff, `revision: ${context}`).toEqual(
                JSON.stringify(before) === JSON.stringify(after) ? [] : [{ key: field.key, from: before, to: after }]
              )
              before = after
            }
          }),
        120_000
      )

      it.effect(
        `${field.key}: values its schema rejects are 422 VALIDATION_FAILED at /patch/<key>, never a 5xx`,
        () =>
          Effect.gen(function*() {
            const f = yield* ClaimsFixture
            const world = yield* worldOf(f)
            const id = world.ids[field.entityType]
            const rejected = rejectedOf(field, yield* valuesOf(field, world))
            expect(rejected.length, `rejected values derived for ${field.key}`).toBeGreaterThanOrEqual(5)
            const base = `/patch/${pointerToken(field.key)}`
            yield* Effect.forEach(rejected, (value) =>
              Effect.gen(function*() {
                const res = yield* propose(f, world.keys.site, {
                  entity_type: field.entityType,
                  entity_id: id,
                  patch: { [field.key]: value }
                })
                const context = `${field.key} = ${JSON.stringify(value).slice(0, 300)}: ${describeReply(res)}`
                expectNoServerError(res, value)
                expect(res.status, context).toBe(422)
                expect(res.body.code, context).toBe("VALIDATION_FAILED")
                expect(res.body.errors.length, context).toBeGreaterThanOrEqual(1)
                for (const error of res.body.errors) {
                  expect(error.pointer === base || String(error.pointer).startsWith(`${base}/`), context).toBe(true)
                }
              }), { concurrency: 4, discard: true })
          }),
        120_000
      )
    }

    it.effect("read-only keys are 422 IMMUTABLE at /patch/<key>, even with the value they hold", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const world = yield* worldOf(f)
        for (const field of readOnly) {
          const id = world.ids[field.entityType]
          const snapshot = expectStatus(
            yield* f.call("GET", `/v2/moderation/snapshots/${objectOf(field.entityType)}/${id}`, {
              key: world.keys.moderator
            }),
            200
          )
          const res = yield* propose(f, world.keys.site, {
            entity_type: field.entityType,
            entity_id: id,
            patch: { [field.key]: snapshot[field.key] }
          })
          expect(res.status, `${field.key}: ${describeReply(res)}`).toBe(422)
          expect(res.body.errors, field.key).toEqual([
            expect.objectContaining({ reason: "IMMUTABLE", pointer: `/patch/${pointerToken(field.key)}` })
          ])
        }
      }))

    it.effect(
      `random JSON for random keys: ${GARBAGE} proposals and ${GARBAGE} amendments, never a 5xx`,
      () =>
        Effect.gen(function*() {
          const f = yield* ClaimsFixture
          const world = yield* worldOf(f)
          const keyPool = [
            ...registeredFields.map((r) => r.key),
            "catalog.work",
            "catalog.work.nope",
            "catalog.work.display_name.value",
            "catalog.person.display_name",
            "__proto__",
            "constructor",
            "",
            "x".repeat(200)
          ]
          const typePool = [...EntityTypes, "catalog.person", "work", ""]
          const idPool = [...Object.values(world.ids), "0", "1", "99999999999999999999", "9223372036854775808"]
          const Patch = Schema.Record(Schema.Literals(keyPool), Schema.Json)
          const Request = Schema.Struct({
            entity_type: Schema.Literals(typePool),
            entity_id: Schema.Literals(idPool),
            patch: Patch,
            unset: Schema.Array(Schema.Literals(keyPool))
          })
          const requests = yield* Arbitrary.sampleEffect(Arbitrary.schema(Request), {
            count: GARBAGE,
            size: 8,
            seed: `${PROPERTY_SEED}/fields/garbage`
          }).pipe(Effect.orDie)
          const statuses: Record<number, number> = {}
          yield* Effect.forEach(requests, (request) => {
            const body = { entity_type: request.entity_type, entity_id: request.entity_id, patch: request.patch }
            return Effect.map(propose(f, world.keys.site, body), (res) => {
              statuses[res.status] = (statuses[res.status] ?? 0) + 1
              expectNoServerError(res, body)
            })
          }, { concurrency: 4, discard: true })
          // Amendments of open proposals of every type, with the proposal's current ETag.
          const open = new Map<string, { id: string; etag: string }>()
          for (const type of EntityTypes) {
            const name = `${type}.display_name`
            const created = yield* propose(f, world.keys.site, {
              entity_type: type,
              entity_id: world.ids[type],
              patch: { [name]: "Garbage target" }
            })
            expectStatus(created, 201)
            open.set(type, { id: created.body.id, etag: created.headers.get("etag")! })
          }
          for (const [i, request] of requests.entries()) {
            const target = open.get(EntityTypes[i % EntityTypes.length]!)!
            const body = {
              ...(i % 3 === 2 ? {} : { set: request.patch }),
              ...(i % 3 === 0 ? {} : { unset: request.unset })
            }
            const res = yield* amend(f, world.keys.site, target.id, target.etag, body)
            statuses[res.status] = (statuses[res.status] ?? 0) + 1
            expectNoServerError(res, body)
            if (res.status === 201) target.etag = res.headers.get("etag")!
          }
          console.log(`field registry garbage: statuses ${JSON.stringify(statuses)}`)
        }),
      120_000
    )
  })
})
