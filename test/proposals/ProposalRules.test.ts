/**
 * The rules of edit proposals through real HTTP (docs/writing.md, "Edit proposals" and "Field keys";
 * "Who may write", "The write runner" and "Conditional writes" for the rules every write shares):
 * what a patch or an amendment may hold and where a refusal points, which entities may be edited,
 * the states and who moves a proposal between them, `If-Match` on amendments, withdrawals and
 * decisions (RFC 9110 section 13.1.1), the proposal's `ETag` and 304 (RFC 9110 sections 8.8.3,
 * 13.1.2, 15.4.5), a site's proposals and the moderation queue, idempotent retries, and the
 * revisions a merge records.
 *
 * Every test edits entities of its own (`take`), so none depends on another's writes.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { TargetObject } from "../../schema/Catalog/Change.js"
import { Merges } from "../../src/catalog/merge/Merges.js"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape } from "../support/Claims.js"
import {
  amend,
  decide,
  expectProblemCode,
  expectStatus,
  proposalKeys,
  proposalScopes,
  propose,
  proposeAndMerge,
  type Reply
} from "../support/Proposals.js"
import { serverLayerOptions } from "../support/TestServers.js"

const WORK = "catalog.work"

/** The entity types proposals edit (docs/writing.md, "Field keys"). */
const entityTypes = [
  "catalog.work",
  "catalog.release",
  "catalog.character",
  "catalog.credit_name",
  "catalog.company",
  "catalog.tag",
  "catalog.engine"
]

/** The tables of the entity types, for picking entities. */
const tables: Record<string, string> = {
  work: "works",
  release: "releases",
  character: "characters",
  credit_name: "credit_names",
  company: "companies",
  tag: "tags",
  engine: "engines"
}
const gated = new Set(["work", "release", "character"])

/** A 422 `VALIDATION_FAILED` whose `errors` are exactly `errors` (each with some `detail`). */
const expectErrors = (
  res: Reply,
  errors: ReadonlyArray<{ readonly reason: string; readonly pointer: string; readonly params?: unknown }>
) => {
  const body = expectProblemCode(res, 422, "VALIDATION_FAILED")
  expect(body.errors).toEqual(errors.map((e) => ({ detail: expect.any(String), ...e })))
}

/** The proposal's id and ETag from a 201. */
const opened = (res: Reply) => {
  const body = expectStatus(res, 201)
  const etag = res.headers.get("etag")
  expect(etag).toBe(`"proposal-${body.id}-1"`)
  return { id: body.id as string, etag: etag!, body }
}

const etagOf = (res: Reply) => {
  const etag = res.headers.get("etag")
  expect(etag, JSON.stringify(res.body)).not.toBeNull()
  return etag!
}

/** Ids handed out once each, per entity object. */
const taken = new Map<string, Set<string>>()

/**
 * A served entity no test had before: sfw unless `nsfw`; `where` narrows it (SQL over `e`, a
 * constant of this file).
 */
const take = (object: string, options: { readonly nsfw?: boolean; readonly where?: string } = {}) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const used = taken.get(object) ?? new Set<string>()
    taken.set(object, used)
    const gate = gated.has(object) ? sql`AND e.nsfw = ${options.nsfw === true}` : sql``
    const [row] = yield* sql<{ id: string }>`
      SELECT e.id::text AS id FROM ${sql(tables[object]!)} e
      WHERE e.live ${gate} AND NOT (e.id::text = ANY(${[...used]}::text[]))
        ${options.where === undefined ? sql`` : sql.literal(`AND ${options.where}`)}
      ORDER BY e.id LIMIT 1`
    expect(row, `a ${object} for this test`).toBeDefined()
    used.add(row!.id)
    return row!.id
  }).pipe(Effect.orDie)

const takeWork = (options: { readonly nsfw?: boolean; readonly where?: string } = {}) => take("work", options)

/** How many proposals name the entity. */
const proposalsOn = (entityType: string, id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ n: number }>`
      SELECT count(*)::int AS n FROM proposals WHERE entity_type = ${entityType} AND entity_id = ${id}::bigint`).pipe(
      Effect.map(([row]) => row!.n),
      Effect.orDie
    )

/** A proposal's stored version, counts and state. */
const stored = (id: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ version: number; amendment_count: number; amendments: number; state: string }>`
      SELECT p.version, p.amendment_count, p.state,
        (SELECT count(*)::int FROM proposal_amendments a WHERE a.proposal_id = p.id) AS amendments
      FROM proposals p WHERE p.id = ${id}::bigint`
  ).pipe(Effect.map(([row]) => ({ ...row! })), Effect.orDie)

/** How many revisions were recorded on the entity. */
const revisionsOn = (entityType: string, id: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ n: number }>`
      SELECT count(*)::int AS n FROM revisions WHERE entity_type = ${entityType} AND entity_id = ${id}::bigint`).pipe(
      Effect.map(([row]) => row!.n),
      Effect.orDie
    )

/** The keys of an entity type, as `GET /v2/catalog/fields` lists them (writable or not). */
const keysOf = (f: ClaimsFixtureShape, key: string, entityType: string, writable?: boolean) =>
  Effect.map(f.call("GET", "/v2/catalog/fields", { key }), (res) =>
    (expectStatus(res, 200).items as ReadonlyArray<any>)
      .filter((i) => i.entity_type === entityType && (writable === undefined || i.writable === writable))
      .map((i) => i.key as string))

const snapshotOf = (f: ClaimsFixtureShape, key: string, object: string, id: string) =>
  Effect.map(f.call("GET", `/v2/moderation/snapshots/${object}/${id}`, { key }), (res) => expectStatus(res, 200))

/** Every item of a list, following `next_cursor` with `limit`. */
const pages = (f: ClaimsFixtureShape, key: string, path: string, limit: number) =>
  Effect.gen(function*() {
    const seen: Array<Array<any>> = []
    let cursor: string | undefined
    do {
      const sep = path.includes("?") ? "&" : "?"
      const url = `${path}${sep}limit=${limit}${cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`}`
      const body = expectStatus(yield* f.call("GET", url, { key }), 200)
      seen.push(body.items)
      cursor = body.next_cursor
    } while (cursor !== undefined && seen.length < 20)
    return seen
  })

const ids = (items: ReadonlyArray<any>) => items.map((item) => item.id as string)

let sites = 0
/** A site of its own for a test that lists a site's proposals. */
const freshSite = (label: string) => `${label}_${Date.now()}_${++sites}`

const Env = Merges.layer.pipe(Layer.provideMerge(ClaimsFixtureLive({ works: 60 })))

describe("proposal rules (docs/writing.md, \"Edit proposals\")", () => {
  it.layer(Env, serverLayerOptions("240 seconds"))((it) => {
    // ---------------------------------------------------------------------------------------------
    // What a patch may hold
    // ---------------------------------------------------------------------------------------------

    it.effect("an unknown entity type, an empty patch, an unknown body member, a long note: 422 at the pointer, nothing written", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const patch = { "catalog.work.display_name": "Never written" }
        expectErrors(yield* propose(f, keys.site, { entity_type: "catalog.trait", entity_id: work, patch }), [{
          reason: "UNKNOWN_VALUE",
          pointer: "/entity_type",
          params: { allowed: entityTypes }
        }])
        expectErrors(yield* propose(f, keys.site, { entity_type: WORK, entity_id: work, patch: {} }), [{
          reason: "TOO_FEW_ITEMS",
          pointer: "/patch",
          params: { min_items: 1 }
        }])
        expectErrors(
          yield* f.call("POST", "/v2/proposals", {
            key: keys.site,
            body: { entity_type: WORK, entity_id: work, patch, reason: "typo" }
          }),
          [{
            reason: "UNKNOWN_VALUE",
            pointer: "/reason",
            params: { allowed: ["entity_type", "entity_id", "patch", "note"] }
          }]
        )
        expectErrors(
          yield* propose(f, keys.site, { entity_type: WORK, entity_id: work, patch, note: "n".repeat(2001) }),
          [{
            reason: "TOO_LONG",
            pointer: "/note",
            params: { max_length: 2000 }
          }]
        )
        // A note of exactly 2000 characters is one.
        const longest = opened(
          yield* propose(f, keys.site, { entity_type: WORK, entity_id: work, patch, note: "n".repeat(2000) })
        )
        expect(longest.body.note).toHaveLength(2000)
        expect(yield* proposalsOn(WORK, work)).toBe(1)
      }))

    it.effect("docs/writing.md, \"Field keys\": a key the entity type lacks is UNKNOWN_VALUE with the type's keys; a derived key is IMMUTABLE", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const workKeys = yield* keysOf(f, keys.site, WORK)
        expect(workKeys).toContain("catalog.work.titles")
        expect(workKeys).not.toContain("catalog.release.gtin")
        const unknown = yield* propose(f, keys.site, {
          entity_type: WORK,
          entity_id: work,
          patch: {
            "catalog.work.colour": "blue",
            // A key of another entity type.
            "catalog.release.gtin": "4006381333931",
            "catalog.work.display_name": "Fine"
          }
        })
        expectErrors(unknown, [
          { reason: "UNKNOWN_VALUE", pointer: "/patch/catalog.work.colour", params: { allowed: workKeys } },
          { reason: "UNKNOWN_VALUE", pointer: "/patch/catalog.release.gtin", params: { allowed: workKeys } }
        ])
        const derived = [
          "catalog.work.released",
          "catalog.work.content_rating",
          "catalog.work.platforms",
          "catalog.work.media",
          "catalog.work.popularity",
          "catalog.work.created_at",
          "catalog.work.updated_at"
        ]
        expect(yield* keysOf(f, keys.site, WORK, false)).toEqual(derived)
        const snapshot = yield* snapshotOf(f, keys.moderator, "work", work)
        // The values as the snapshot shows them: the key is refused whatever the value.
        const immutable = yield* propose(f, keys.site, {
          entity_type: WORK,
          entity_id: work,
          patch: Object.fromEntries(derived.map((key) => [key, snapshot[key]]))
        })
        expectErrors(immutable, derived.map((key) => ({ reason: "IMMUTABLE", pointer: `/patch/${key}` })))
        // The read-only keys of the other entity types.
        const others: ReadonlyArray<readonly [string, string, string]> = [
          ["release", "catalog.release", "catalog.release.work_id"],
          ["character", "catalog.character", "catalog.character.instance_of_id"],
          ["credit_name", "catalog.credit_name", "catalog.credit_name.person_id"],
          ["tag", "catalog.tag", "catalog.tag.category"],
          ["tag", "catalog.tag", "catalog.tag.parent_id"]
        ]
        for (const [object, entityType, key] of others) {
          const id = yield* take(object)
          expectErrors(
            yield* propose(f, keys.site, { entity_type: entityType, entity_id: id, patch: { [key]: null } }),
            [
              { reason: "IMMUTABLE", pointer: `/patch/${key}` }
            ]
          )
          expect(yield* proposalsOn(entityType, id)).toBe(0)
        }
        expect(yield* proposalsOn(WORK, work)).toBe(0)
      }))

    it.effect("docs/writing.md, \"Field keys\": a bad value is refused with its schema's reason and params at /patch/<key>/...", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const title = (lang: string, value: string, is_main = false) => ({
          lang,
          value,
          latin: null,
          is_main,
          is_official: true
        })
        const cases: ReadonlyArray<readonly [Record<string, unknown>, ReadonlyArray<any>]> = [
          [{ "catalog.work.display_name": "x".repeat(513) }, [{
            reason: "TOO_LONG",
            pointer: "/patch/catalog.work.display_name",
            params: { max_length: 512 }
          }]],
          [{ "catalog.work.display_name": "" }, [{
            reason: "TOO_SHORT",
            pointer: "/patch/catalog.work.display_name",
            params: { min_length: 1 }
          }]],
          [{ "catalog.work.display_name": " \u200b\t " }, [{
            reason: "INVALID_FORMAT",
            pointer: "/patch/catalog.work.display_name"
          }]],
          [{ "catalog.work.development_status": "abandoned" }, [{
            reason: "UNKNOWN_VALUE",
            pointer: "/patch/catalog.work.development_status",
            params: { allowed: ["finished", "in_development", "cancelled"] }
          }]],
          [{ "catalog.work.length_minutes": -1 }, [{
            reason: "OUT_OF_RANGE",
            pointer: "/patch/catalog.work.length_minutes",
            params: { minimum: 0 }
          }]],
          [{ "catalog.work.length_minutes": 2_147_483_648 }, [{
            reason: "OUT_OF_RANGE",
            pointer: "/patch/catalog.work.length_minutes",
            params: { maximum: 2_147_483_647 }
          }]],
          [{ "catalog.work.titles": [title("ja", "一", true), title("en", "One"), title("ja", "二")] }, [{
            reason: "DUPLICATE_ITEM",
            pointer: "/patch/catalog.work.titles"
          }]],
          [{ "catalog.work.titles": [title("en", "One"), title("fr", " ")] }, [{
            reason: "INVALID_FORMAT",
            pointer: "/patch/catalog.work.titles/1/value"
          }]],
          [{ "catalog.work.cover": "0".repeat(63) }, [{
            reason: "INVALID_FORMAT",
            pointer: "/patch/catalog.work.cover"
          }]],
          // Every bad entry at once, in the patch's order.
          [{ "catalog.work.display_name": "x".repeat(513), "catalog.work.development_status": "abandoned" }, [
            { reason: "TOO_LONG", pointer: "/patch/catalog.work.display_name", params: { max_length: 512 } },
            {
              reason: "UNKNOWN_VALUE",
              pointer: "/patch/catalog.work.development_status",
              params: { allowed: ["finished", "in_development", "cancelled"] }
            }
          ]]
        ]
        for (const [patch, errors] of cases) {
          expectErrors(yield* propose(f, keys.site, { entity_type: WORK, entity_id: work, patch }), errors)
        }
        // The bounds themselves are values.
        opened(
          yield* propose(f, keys.site, {
            entity_type: WORK,
            entity_id: work,
            patch: { "catalog.work.display_name": "x".repeat(512), "catalog.work.length_minutes": 2_147_483_647 }
          })
        )
        expect(yield* proposalsOn(WORK, work)).toBe(1)
      }))

    it.effect("docs/writing.md, \"Field keys\": a tag, cover or roster row that does not exist is UNKNOWN_REFERENCE at its deep pointer", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork({
          where: "EXISTS (SELECT 1 FROM work_characters r WHERE r.work_id = e.id) " +
            "AND EXISTS (SELECT 1 FROM credits c WHERE c.work_id = e.id)"
        })
        const [tag] = yield* sql<{ id: string }>`SELECT id::text AS id FROM tags WHERE live ORDER BY id LIMIT 1`
        const [rostered] = yield* sql<{ own: string; other: string }>`
          SELECT (SELECT identity FROM work_characters WHERE work_id = ${work}::bigint ORDER BY identity LIMIT 1) AS own,
            (SELECT identity FROM work_characters WHERE work_id <> ${work}::bigint ORDER BY identity LIMIT 1) AS other`
        const [credited] = yield* sql<{ other: string }>`
          SELECT identity AS other FROM credits WHERE work_id <> ${work}::bigint ORDER BY identity LIMIT 1`
        const entry = (id: string) => ({ tag: { id }, spoiler: "none", score: 2.5 })
        const cases: ReadonlyArray<readonly [Record<string, unknown>, ReadonlyArray<any>]> = [
          [{ "catalog.work.tags": [entry(tag!.id), entry("999999999")] }, [{
            reason: "UNKNOWN_REFERENCE",
            pointer: "/patch/catalog.work.tags/1/tag/id"
          }]],
          [{ "catalog.work.cover": "f".repeat(64) }, [{
            reason: "UNKNOWN_REFERENCE",
            pointer: "/patch/catalog.work.cover"
          }]],
          // Another work's row is no row of this one.
          [{ "catalog.work.roster_suppressed": [rostered!.own, rostered!.other] }, [{
            reason: "UNKNOWN_REFERENCE",
            pointer: "/patch/catalog.work.roster_suppressed/1"
          }]],
          [{ "catalog.work.credits_suppressed": [credited!.other] }, [{
            reason: "UNKNOWN_REFERENCE",
            pointer: "/patch/catalog.work.credits_suppressed/0"
          }]]
        ]
        for (const [patch, errors] of cases) {
          expectErrors(yield* propose(f, keys.site, { entity_type: WORK, entity_id: work, patch }), errors)
        }
        expect(yield* proposalsOn(WORK, work)).toBe(0)
        // The same values without the missing rows are a proposal.
        opened(
          yield* propose(f, keys.site, {
            entity_type: WORK,
            entity_id: work,
            patch: { "catalog.work.tags": [entry(tag!.id)], "catalog.work.roster_suppressed": [rostered!.own] }
          })
        )
      }))

    it.effect("an amendment's entries are checked at /set/<key> and /unset/<n>; a refused amendment changes nothing", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const workKeys = yield* keysOf(f, keys.site, WORK)
        const p = opened(
          yield* propose(f, keys.site, {
            entity_type: WORK,
            entity_id: work,
            patch: { "catalog.work.display_name": "Amend me", "catalog.work.latin": "Amend me" }
          })
        )
        const refusals: ReadonlyArray<readonly [Parameters<typeof amend>[4], ReadonlyArray<any>]> = [
          [{ set: { "catalog.work.colour": "blue", "catalog.company.company_kind": "publisher" } }, [
            { reason: "UNKNOWN_VALUE", pointer: "/set/catalog.work.colour", params: { allowed: workKeys } },
            { reason: "UNKNOWN_VALUE", pointer: "/set/catalog.company.company_kind", params: { allowed: workKeys } }
          ]],
          [{ set: { "catalog.work.popularity": 1 } }, [{
            reason: "IMMUTABLE",
            pointer: "/set/catalog.work.popularity"
          }]],
          [{ set: { "catalog.work.display_name": "x".repeat(513) } }, [{
            reason: "TOO_LONG",
            pointer: "/set/catalog.work.display_name",
            params: { max_length: 512 }
          }]],
          [{ set: { "catalog.work.tags": [{ tag: { id: "999999999" }, spoiler: "none", score: 1 }] } }, [{
            reason: "UNKNOWN_REFERENCE",
            pointer: "/set/catalog.work.tags/0/tag/id"
          }]],
          [{ unset: ["catalog.work.latin", "catalog.work.colour", "catalog.work.media", "catalog.release.gtin"] }, [
            { reason: "UNKNOWN_VALUE", pointer: "/unset/1", params: { allowed: workKeys } },
            { reason: "IMMUTABLE", pointer: "/unset/2" },
            { reason: "UNKNOWN_VALUE", pointer: "/unset/3", params: { allowed: workKeys } }
          ]],
          [{ set: { "catalog.work.latin": "Both" }, unset: ["catalog.work.display_name", "catalog.work.latin"] }, [{
            reason: "INCONSISTENT_WITH",
            pointer: "/unset/1"
          }]],
          [{ unset: Array.from({ length: 101 }, () => "catalog.work.latin") }, [{
            reason: "TOO_MANY_ITEMS",
            pointer: "/unset",
            params: { max_items: 100 }
          }]],
          [{ set: { "catalog.work.latin": "Fine" }, note: "n".repeat(2001) }, [{
            reason: "TOO_LONG",
            pointer: "/note",
            params: { max_length: 2000 }
          }]],
          // An amendment that neither changes the patch nor says anything.
          [{}, [{ reason: "REQUIRED", pointer: "/set" }]],
          [{ set: {}, unset: [] }, [{ reason: "REQUIRED", pointer: "/set" }]]
        ]
        for (const [body, errors] of refusals) {
          expectErrors(yield* amend(f, keys.site, p.id, p.etag, body), errors)
        }
        expectErrors(
          yield* f.call("POST", `/v2/proposals/${p.id}/amendments`, {
            key: keys.site,
            headers: { "if-match": p.etag },
            body: { set: {}, remove: ["catalog.work.latin"] }
          }),
          [{ reason: "UNKNOWN_VALUE", pointer: "/remove", params: { allowed: ["set", "unset", "note"] } }]
        )
        expect(yield* stored(p.id)).toEqual({ version: 1, amendment_count: 0, amendments: 0, state: "open" })
        const read = yield* f.call("GET", `/v2/proposals/${p.id}`, { key: keys.site })
        expect(etagOf(read)).toBe(p.etag)
        expect(read.body.effective_patch).toEqual(p.body.patch)
        // At most 100 keys is an amendment.
        const hundred = yield* amend(f, keys.site, p.id, p.etag, {
          unset: Array.from({ length: 100 }, () => "catalog.work.latin")
        })
        expect(expectStatus(hundred, 201).seq).toBe(1)
        expect(yield* stored(p.id)).toEqual({ version: 2, amendment_count: 1, amendments: 1, state: "open" })
      }))

    // ---------------------------------------------------------------------------------------------
    // Which entities
    // ---------------------------------------------------------------------------------------------

    it.effect("an entity that does not exist is 404 NOT_FOUND, whatever its type", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const cases: ReadonlyArray<readonly [string, string]> = [
          [WORK, "999999999"],
          // Beyond any bigint.
          [WORK, "99999999999999999999"],
          ["catalog.company", "999999999"],
          ["catalog.engine", "999999999"]
        ]
        for (const [entityType, id] of cases) {
          const patch = { [`${entityType}.display_name`]: "Nobody" }
          expectProblemCode(
            yield* propose(f, keys.site, { entity_type: entityType, entity_id: id, patch }),
            404,
            "NOT_FOUND"
          )
        }
        const sql = yield* SqlClient.SqlClient
        const [none] = yield* sql<{ n: number }>`SELECT count(*)::int AS n FROM proposals WHERE entity_id >= 999999999`
        expect(none!.n).toBe(0)
      }))

    it.effect("a merged-away entity is 404 ENTITY_MERGED with current_id; an open proposal on it no longer merges (409) but declines", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const merges = yield* Merges
        const keys = yield* proposalKeys(f)
        const loser = yield* takeWork()
        const survivor = yield* takeWork()
        const pending = opened(
          yield* propose(f, keys.site, {
            entity_type: WORK,
            entity_id: loser,
            patch: { "catalog.work.display_name": "Before the merge" }
          })
        )
        yield* merges.merge("work", loser, survivor)
        const merged = expectProblemCode(
          yield* propose(f, keys.site, {
            entity_type: WORK,
            entity_id: loser,
            patch: { "catalog.work.display_name": "After the merge" }
          }),
          404,
          "ENTITY_MERGED"
        )
        expect(merged).toMatchObject({ object: "work", current_id: survivor })
        expect(yield* proposalsOn(WORK, loser)).toBe(1)
        // The same for another type.
        const [company, into] = [yield* take("company"), yield* take("company")]
        yield* merges.merge("company", company, into)
        expect(
          expectProblemCode(
            yield* propose(f, keys.site, {
              entity_type: "catalog.company",
              entity_id: company,
              patch: { "catalog.company.display_name": "Gone" }
            }),
            404,
            "ENTITY_MERGED"
          )
        ).toMatchObject({ object: "company", current_id: into })
        // The proposal made before: merging it is refused and writes nothing; declining closes it.
        expectProblemCode(
          yield* decide(f, keys.moderator, pending.id, pending.etag, { decision: "merge" }),
          409,
          "INVALID_STATE_TRANSITION"
        )
        expect(yield* stored(pending.id)).toMatchObject({ version: 1, state: "open" })
        expect(yield* revisionsOn(WORK, loser)).toBe(0)
        expect(yield* revisionsOn(WORK, survivor)).toBe(0)
        const declined = yield* decide(f, keys.moderator, pending.id, pending.etag, { decision: "decline" })
        expect(expectStatus(declined, 200).state).toBe("declined")
      }))

    it.effect("a proposal whose tag no longer exists is 409 on merge (docs/writing.md, \"Edit proposals\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const merges = yield* Merges
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const [tag, into] = [yield* take("tag"), yield* take("tag")]
        const p = opened(
          yield* propose(f, keys.site, {
            entity_type: WORK,
            entity_id: work,
            patch: { "catalog.work.tags": [{ tag: { id: tag }, spoiler: "none", score: 1 }] }
          })
        )
        yield* merges.merge("tag", tag, into)
        const refused = expectProblemCode(
          yield* decide(f, keys.moderator, p.id, p.etag, { decision: "merge" }),
          409,
          "INVALID_STATE_TRANSITION"
        )
        expect(refused.errors).toEqual([{
          reason: "UNKNOWN_REFERENCE",
          detail: expect.any(String),
          pointer: "/patch/catalog.work.tags/0/tag/id"
        }])
        expect(yield* stored(p.id)).toMatchObject({ version: 1, state: "open" })
        expect(yield* revisionsOn(WORK, work)).toBe(0)
      }))

    it.effect("an nsfw work is 404 to a sfw credential and editable with an nsfw one; its revisions are hidden from sfw credentials", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sfw = yield* proposalKeys(f)
        const nsfw = yield* proposalKeys(f, { nsfw: true })
        const work = yield* takeWork({ nsfw: true })
        const patch = { "catalog.work.length_minutes": 777 }
        expectProblemCode(yield* propose(f, sfw.site, { entity_type: WORK, entity_id: work, patch }), 404, "NOT_FOUND")
        expect(yield* proposalsOn(WORK, work)).toBe(0)
        const p = opened(yield* propose(f, nsfw.site, { entity_type: WORK, entity_id: work, patch }))
        // A sfw moderator does not see the entity: 404 before anything else.
        expectProblemCode(yield* decide(f, sfw.moderator, p.id, p.etag, { decision: "merge" }), 404, "NOT_FOUND")
        expect(yield* stored(p.id)).toMatchObject({ version: 1, state: "open" })
        const merged = expectStatus(yield* decide(f, nsfw.moderator, p.id, p.etag, { decision: "merge" }), 200)
        expect(merged.state).toBe("merged")
        expectProblemCode(
          yield* f.call("GET", `/v2/revisions/${merged.revision_id}`, { key: sfw.site }),
          404,
          "NOT_FOUND"
        )
        expectProblemCode(
          yield* f.call("GET", `/v2/catalog/works/${work}/revisions`, { key: sfw.site }),
          404,
          "NOT_FOUND"
        )
        const revision = expectStatus(
          yield* f.call("GET", `/v2/revisions/${merged.revision_id}`, { key: nsfw.site }),
          200
        )
        expect(revision.diff).toEqual([expect.objectContaining({ key: "catalog.work.length_minutes", to: 777 })])
        const listed = expectStatus(
          yield* f.call("GET", `/v2/catalog/works/${work}/revisions`, { key: nsfw.site }),
          200
        )
        expect(ids(listed.items)).toEqual([merged.revision_id])
      }))

    // ---------------------------------------------------------------------------------------------
    // States
    // ---------------------------------------------------------------------------------------------

    /** Amending, withdrawing and deciding a closed proposal are 409 and change nothing. */
    const expectClosed = (f: ClaimsFixtureShape, keys: { site: string; moderator: string }, id: string) =>
      Effect.gen(function*() {
        const before = yield* stored(id)
        const etag = etagOf(yield* f.call("GET", `/v2/proposals/${id}`, { key: keys.site }))
        expectProblemCode(
          yield* amend(f, keys.site, id, etag, { set: { "catalog.work.latin": "Too late" } }),
          409,
          "INVALID_STATE_TRANSITION"
        )
        expectProblemCode(
          yield* f.call("POST", `/v2/proposals/${id}/withdrawal`, { key: keys.site, headers: { "if-match": etag } }),
          409,
          "INVALID_STATE_TRANSITION"
        )
        for (const decision of ["merge", "decline"] as const) {
          expectProblemCode(yield* decide(f, keys.moderator, id, etag, { decision }), 409, "INVALID_STATE_TRANSITION")
        }
        expect(yield* stored(id)).toEqual(before)
      })

    it.effect("withdrawing an open proposal makes it withdrawn; a withdrawn proposal cannot be amended, withdrawn or decided", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const p = opened(
          yield* propose(f, keys.site, {
            entity_type: WORK,
            entity_id: work,
            patch: { "catalog.work.display_name": "Withdraw me" }
          })
        )
        expect(p.body).toMatchObject({ state: "open", closed_at: null, moderator_uid: null, revision_id: null })
        const withdrawn = yield* f.call("POST", `/v2/proposals/${p.id}/withdrawal`, { key: keys.site })
        expect(expectStatus(withdrawn, 200)).toMatchObject({
          id: p.id,
          state: "withdrawn",
          moderator_uid: null,
          decision_note: null,
          revision_id: null
        })
        expect(withdrawn.body.closed_at).toEqual(expect.any(String))
        expect(etagOf(withdrawn)).toBe(`"proposal-${p.id}-2"`)
        yield* expectClosed(f, keys, p.id)
        expect(yield* revisionsOn(WORK, work)).toBe(0)
      }))

    it.effect("a decline records the moderator and the note, no revision, and leaves the entity as it was; then the proposal is closed", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const before = yield* snapshotOf(f, keys.moderator, "work", work)
        const p = opened(
          yield* propose(f, keys.site, {
            entity_type: WORK,
            entity_id: work,
            patch: { "catalog.work.display_name": "Decline me" }
          })
        )
        const declined = yield* decide(f, keys.moderator, p.id, p.etag, { decision: "decline", note: "Not the title." })
        expect(expectStatus(declined, 200)).toMatchObject({
          state: "declined",
          moderator_uid: String(f.moderator.id),
          decision_note: "Not the title.",
          revision_id: null,
          proposer_uid: String(f.siteUser.id)
        })
        expect(declined.body.closed_at).toEqual(expect.any(String))
        expect(etagOf(declined)).toBe(`"proposal-${p.id}-2"`)
        expect(yield* revisionsOn(WORK, work)).toBe(0)
        expect(yield* snapshotOf(f, keys.moderator, "work", work)).toEqual(before)
        const listed = expectStatus(
          yield* f.call("GET", `/v2/catalog/works/${work}/revisions`, { key: keys.site }),
          200
        )
        expect(listed.items).toEqual([])
        yield* expectClosed(f, keys, p.id)
      }))

    it.effect("a merged proposal cannot be amended, withdrawn or decided again", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const merged = yield* proposeAndMerge(f, keys, { type: WORK, id: work }, {
          "catalog.work.display_name": "Merged once"
        })
        expect(merged).toMatchObject({ state: "merged", moderator_uid: String(f.moderator.id), decision_note: null })
        yield* expectClosed(f, keys, merged.id)
        expect(yield* revisionsOn(WORK, work)).toBe(1)
      }))

    // ---------------------------------------------------------------------------------------------
    // Preconditions (docs/writing.md, "Conditional writes"; RFC 9110 section 13.1.1)
    // ---------------------------------------------------------------------------------------------

    it.effect("an amendment or a decision without If-Match is 428 at the header If-Match; with a stale one 412; nothing written", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const p = opened(
          yield* propose(f, keys.site, { entity_type: WORK, entity_id: work, patch: { "catalog.work.latin": "Once" } })
        )
        const required = [{ reason: "REQUIRED", detail: expect.any(String), header: "If-Match" }]
        const bare = yield* f.call("POST", `/v2/proposals/${p.id}/amendments`, {
          key: keys.site,
          body: { set: { "catalog.work.latin": "Twice" } }
        })
        expect(expectProblemCode(bare, 428, "PRECONDITION_REQUIRED").errors).toEqual(required)
        const undecided = yield* f.call("POST", `/v2/moderation/proposals/${p.id}/decisions`, {
          key: keys.moderator,
          body: { decision: "merge" }
        })
        expect(expectProblemCode(undecided, 428, "PRECONDITION_REQUIRED").errors).toEqual(required)
        expect(yield* stored(p.id)).toEqual({ version: 1, amendment_count: 0, amendments: 0, state: "open" })
        // A malformed value names no tag.
        expectProblemCode(yield* amend(f, keys.site, p.id, "proposal-1-1", { set: {} }), 412, "PRECONDITION_FAILED")
        const first = yield* amend(f, keys.site, p.id, p.etag, { set: { "catalog.work.latin": "Twice" } })
        expectStatus(first, 201)
        expect(etagOf(first)).toBe(`"proposal-${p.id}-2"`)
        expectProblemCode(
          yield* amend(f, keys.site, p.id, p.etag, { set: { "catalog.work.latin": "Thrice" } }),
          412,
          "PRECONDITION_FAILED"
        )
        expectProblemCode(
          yield* decide(f, keys.moderator, p.id, p.etag, { decision: "merge" }),
          412,
          "PRECONDITION_FAILED"
        )
        expect(yield* stored(p.id)).toEqual({ version: 2, amendment_count: 1, amendments: 1, state: "open" })
        expect(yield* revisionsOn(WORK, work)).toBe(0)
        // `*` matches the proposal, whatever its version (RFC 9110 section 13.1.1).
        const any = yield* amend(f, keys.site, p.id, "*", { set: { "catalog.work.latin": "Thrice" } })
        expect(expectStatus(any, 201).seq).toBe(2)
        // A list of tags passes when one of them is current.
        const listed = `"proposal-${p.id}-1", ${etagOf(any)}`
        expect(expectStatus(yield* decide(f, keys.moderator, p.id, listed, { decision: "merge" }), 200).state)
          .toBe("merged")
      }))

    it.effect("docs/writing.md, \"Conditional writes\": of two moderators deciding with the same ETag at once, exactly one wins; the other is 412", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const p = opened(
          yield* propose(f, keys.site, {
            entity_type: WORK,
            entity_id: work,
            patch: { "catalog.work.display_name": "Raced" }
          })
        )
        const [a, b] = yield* Effect.all([
          decide(f, keys.moderator, p.id, p.etag, { decision: "merge" }),
          decide(f, keys.moderator2, p.id, p.etag, { decision: "merge" })
        ], { concurrency: 2 })
        // The proposal row is locked before If-Match is compared: the second sees the first's version.
        expect([a.status, b.status].sort(), JSON.stringify([a.body, b.body])).toEqual([200, 412])
        const [winner, winnerUid] = a.status === 200 ? [a, f.moderator.id] : [b, f.moderator2.id]
        expect(winner.body).toMatchObject({ state: "merged", moderator_uid: String(winnerUid) })
        expect(yield* revisionsOn(WORK, work)).toBe(1)
        expect(yield* stored(p.id)).toMatchObject({ version: 2, state: "merged" })
      }))

    it.effect("a withdrawal honours If-Match when sent: stale is 412; without it the withdrawal is made", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const p = opened(
          yield* propose(f, keys.site, { entity_type: WORK, entity_id: work, patch: { "catalog.work.latin": "W" } })
        )
        expectStatus(yield* amend(f, keys.site, p.id, p.etag, { set: { "catalog.work.latin": "W2" } }), 201)
        expectProblemCode(
          yield* f.call("POST", `/v2/proposals/${p.id}/withdrawal`, {
            key: keys.site,
            headers: { "if-match": p.etag }
          }),
          412,
          "PRECONDITION_FAILED"
        )
        expect(yield* stored(p.id)).toMatchObject({ version: 2, state: "open" })
        const withdrawn = yield* f.call("POST", `/v2/proposals/${p.id}/withdrawal`, { key: keys.site })
        expect(expectStatus(withdrawn, 200).state).toBe("withdrawn")
        expect(yield* stored(p.id)).toMatchObject({ version: 3, state: "withdrawn" })
      }))

    // ---------------------------------------------------------------------------------------------
    // Whose proposal (docs/writing.md, "Who may write")
    // ---------------------------------------------------------------------------------------------

    it.effect("another site's user can neither read, amend, withdraw nor list the amendments of a proposal: 403 TENANT_MISMATCH", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const p = opened(
          yield* propose(f, keys.site, { entity_type: WORK, entity_id: work, patch: { "catalog.work.latin": "Mine" } })
        )
        const calls: ReadonlyArray<Effect.Effect<Reply>> = [
          f.call("GET", `/v2/proposals/${p.id}`, { key: keys.other }),
          amend(f, keys.other, p.id, p.etag, { set: { "catalog.work.latin": "Theirs" } }),
          f.call("POST", `/v2/proposals/${p.id}/withdrawal`, { key: keys.other }),
          f.call("GET", `/v2/proposals/${p.id}/amendments`, { key: keys.other })
        ]
        for (const call of calls) expectProblemCode(yield* call, 403, "TENANT_MISMATCH")
        expect(yield* stored(p.id)).toEqual({ version: 1, amendment_count: 0, amendments: 0, state: "open" })
        // A proposal that does not exist is 404 to anyone.
        expectProblemCode(yield* f.call("GET", "/v2/proposals/999999999", { key: keys.other }), 404, "NOT_FOUND")
        // Another user of the same site acts on the site's proposal.
        const amended = expectStatus(
          yield* amend(f, keys.site2, p.id, p.etag, { set: { "catalog.work.latin": "Ours" } }),
          201
        )
        expect(amended.amender_uid).toBe(String(f.siteUser2.id))
        const listed = expectStatus(yield* f.call("GET", `/v2/proposals/${p.id}/amendments`, { key: keys.site }), 200)
        expect(ids(listed.items)).toEqual([amended.id])
      }))

    it.effect("GET /v2/proposals lists the site's own proposals, newest first, with cursor pages and filters", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const site = freshSite("lists")
        const key = yield* f.makeKey(site, proposalScopes, f.siteUser.id)
        const keys = yield* proposalKeys(f)
        const [w1, w2] = [yield* takeWork(), yield* takeWork()]
        const company = yield* take("company")
        const name = (label: string) => ({ "catalog.work.latin": label })
        const p1 = opened(yield* propose(f, key, { entity_type: WORK, entity_id: w1, patch: name("1") }))
        const p2 = opened(yield* propose(f, key, { entity_type: WORK, entity_id: w2, patch: name("2") }))
        const p3 = opened(yield* propose(f, key, { entity_type: WORK, entity_id: w1, patch: name("3") }))
        const p4 = opened(
          yield* propose(f, key, {
            entity_type: "catalog.company",
            entity_id: company,
            patch: { "catalog.company.latin": "4" }
          })
        )
        // Another site's proposal on the same work.
        const theirs = opened(yield* propose(f, keys.other, { entity_type: WORK, entity_id: w1, patch: name("x") }))
        expectStatus(yield* f.call("POST", `/v2/proposals/${p2.id}/withdrawal`, { key }), 200)
        const all = expectStatus(yield* f.call("GET", "/v2/proposals", { key }), 200)
        expect(ids(all.items)).toEqual([p4.id, p3.id, p2.id, p1.id])
        expect(all.next_cursor).toBeUndefined()
        expect(all.items.map((i: any) => i.site)).toEqual([site, site, site, site])
        expect(yield* pages(f, key, "/v2/proposals", 3)).toEqual([
          [p4.body, p3.body, expect.objectContaining({ id: p2.id, state: "withdrawn" })],
          [p1.body]
        ])
        const filtered = (query: string) =>
          Effect.map(f.call("GET", `/v2/proposals?${query}`, { key }), (res) => ids(expectStatus(res, 200).items))
        expect(yield* filtered("state=open")).toEqual([p4.id, p3.id, p1.id])
        expect(yield* filtered("state=withdrawn")).toEqual([p2.id])
        expect(yield* filtered("state=merged")).toEqual([])
        expect(yield* filtered("entity_type=catalog.company")).toEqual([p4.id])
        expect(yield* filtered(`entity_type=catalog.work&entity_id=${w1}`)).toEqual([p3.id, p1.id])
        expect(yield* filtered(`entity_type=catalog.work&entity_id=${w1}&state=open&limit=1`)).toEqual([p3.id])
        // Pages of a filtered list.
        expect((yield* pages(f, key, `/v2/proposals?state=open`, 2)).map(ids)).toEqual([[p4.id, p3.id], [p1.id]])
        // A cursor belongs to its filters.
        const first = expectStatus(yield* f.call("GET", "/v2/proposals?state=open&limit=1", { key }), 200)
        const elsewhere = `/v2/proposals?state=withdrawn&limit=1&cursor=${encodeURIComponent(first.next_cursor)}`
        expectProblemCode(yield* f.call("GET", elsewhere, { key }), 400, "INVALID_CURSOR")
        // The other site sees its own only.
        const other = expectStatus(
          yield* f.call("GET", `/v2/proposals?entity_type=catalog.work&entity_id=${w1}`, { key: keys.other }),
          200
        )
        expect(ids(other.items)).toEqual([theirs.id])
      }))

    it.effect("the moderation queue lists open proposals oldest first, with a state filter and pages; it needs a moderator", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const site = freshSite("queue")
        const key = yield* f.makeKey(site, proposalScopes, f.siteUser.id)
        const keys = yield* proposalKeys(f)
        const queued = (label: string) =>
          Effect.flatMap(takeWork(), (work) =>
            Effect.map(
              propose(f, key, { entity_type: WORK, entity_id: work, patch: { "catalog.work.latin": label } }),
              opened
            ))
        const q1 = yield* queued("Queue 1")
        const q2 = yield* queued("Queue 2")
        const q3 = yield* queued("Queue 3")
        const q4 = yield* queued("Queue 4")
        expectStatus(yield* f.call("POST", `/v2/proposals/${q2.id}/withdrawal`, { key }), 200)
        expectStatus(yield* decide(f, keys.moderator, q4.id, q4.etag, { decision: "decline" }), 200)
        const queue = (query: string) =>
          Effect.map(
            f.call("GET", `/v2/moderation/proposals?site=${site}${query}`, { key: keys.moderator }),
            (res) => ids(expectStatus(res, 200).items)
          )
        expect(yield* queue("")).toEqual([q1.id, q3.id])
        expect(yield* queue("&state=open")).toEqual([q1.id, q3.id])
        expect(yield* queue("&state=withdrawn")).toEqual([q2.id])
        expect(yield* queue("&state=declined")).toEqual([q4.id])
        expect(yield* queue("&entity_type=catalog.company")).toEqual([])
        expect((yield* pages(f, keys.moderator, `/v2/moderation/proposals?site=${site}`, 1)).map(ids)).toEqual([
          [q1.id],
          [q3.id]
        ])
        // Unfiltered: every site's open proposals, oldest first.
        const open = expectStatus(
          yield* f.call("GET", "/v2/moderation/proposals?limit=100", { key: keys.moderator }),
          200
        )
        expect(open.items.every((i: any) => i.state === "open")).toBe(true)
        const order = ids(open.items).map(Number)
        expect(order).toEqual([...order].sort((x, y) => x - y))
        // The site's user has the scope but not the role.
        expectProblemCode(
          yield* f.call("GET", `/v2/moderation/proposals?site=${site}`, { key }),
          403,
          "PERMISSION_REQUIRED"
        )
      }))

    it.effect("a moderator reads any site's proposal with its ETag, and the decision accepts that ETag, gzip-encoded or not", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const [w1, w2] = [yield* takeWork(), yield* takeWork()]
        const small = opened(
          yield* propose(f, keys.other, { entity_type: WORK, entity_id: w1, patch: { "catalog.work.latin": "Small" } })
        )
        const read = yield* f.call("GET", `/v2/moderation/proposals/${small.id}`, { key: keys.moderator })
        expect(expectStatus(read, 200)).toEqual(small.body)
        expect(read.body.site).toBe("site_b")
        expect(etagOf(read)).toBe(small.etag)
        // RFC 9110 section 13.1.2: If-None-Match with the tag read is 304 without a body.
        const again = yield* f.call("GET", `/v2/moderation/proposals/${small.id}`, {
          key: keys.moderator,
          headers: { "if-none-match": small.etag }
        })
        expect(again.status).toBe(304)
        expect(again.body).toBeNull()
        const declined = yield* decide(f, keys.moderator, small.id, etagOf(read), { decision: "decline" })
        expect(expectStatus(declined, 200).state).toBe("declined")
        // A proposal of at least 1 KB goes out gzip-encoded with the gzip representation's own tag
        // (RFC 9110 sections 8.8.3 and 12.5.3; docs/api-contract.md): that tag names the same
        // version of the proposal, so an amendment and a decision accept it.
        const titles = ["en", "fr", "de", "es", "it", "ko", "zh-Hans", "pt-BR"].map((lang, i) => ({
          lang,
          value: `A rather long title of the work in ${lang}, number ${i}`,
          latin: null,
          is_main: false,
          is_official: true
        }))
        const large = opened(
          yield* propose(f, keys.other, {
            entity_type: WORK,
            entity_id: w2,
            patch: { "catalog.work.titles": titles },
            note: "Titles from the box."
          })
        )
        const own = yield* f.call("GET", `/v2/proposals/${large.id}`, { key: keys.other })
        expect(expectStatus(own, 200)).toEqual(large.body)
        expect(etagOf(own)).toBe(`"proposal-${large.id}-1-gzip"`)
        const amended = yield* amend(f, keys.other, large.id, etagOf(own), { set: { "catalog.work.latin": "Large" } })
        expect(expectStatus(amended, 201).seq).toBe(1)
        const moderated = yield* f.call("GET", `/v2/moderation/proposals/${large.id}`, { key: keys.moderator })
        expect(expectStatus(moderated, 200).amendment_count).toBe(1)
        expect(etagOf(moderated)).toBe(`"proposal-${large.id}-2-gzip"`)
        expect(
          (yield* f.call("GET", `/v2/moderation/proposals/${large.id}`, {
            key: keys.moderator,
            headers: { "if-none-match": etagOf(moderated) }
          })).status
        ).toBe(304)
        // The superseded tag, gzip or not, is stale.
        expectProblemCode(
          yield* decide(f, keys.moderator, large.id, etagOf(own), { decision: "merge" }),
          412,
          "PRECONDITION_FAILED"
        )
        const merged = yield* decide(f, keys.moderator, large.id, etagOf(moderated), { decision: "merge" })
        expect(expectStatus(merged, 200).state).toBe("merged")
        expect((yield* snapshotOf(f, keys.moderator, "work", w2))["catalog.work.titles"]).toHaveLength(titles.length)
      }))

    // ---------------------------------------------------------------------------------------------
    // ETag and amendments
    // ---------------------------------------------------------------------------------------------

    it.effect("GET /v2/proposals/:id carries the ETag; If-None-Match with it is 304 (RFC 9110 sections 13.1.2, 15.4.5); an amendment changes it", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const p = opened(
          yield* propose(f, keys.site, { entity_type: WORK, entity_id: work, patch: { "catalog.work.latin": "E" } })
        )
        const read = yield* f.call("GET", `/v2/proposals/${p.id}`, { key: keys.site })
        expect(expectStatus(read, 200)).toEqual(p.body)
        expect(etagOf(read)).toBe(p.etag)
        const notModified = yield* f.call("GET", `/v2/proposals/${p.id}`, {
          key: keys.site,
          headers: { "if-none-match": p.etag }
        })
        expect(notModified.status).toBe(304)
        expect(notModified.body).toBeNull()
        expect(notModified.headers.get("etag")).toBe(p.etag)
        const amended = yield* amend(f, keys.site, p.id, p.etag, { set: { "catalog.work.latin": "E2" } })
        const next = etagOf(amended)
        expect(next).not.toBe(p.etag)
        // The old tag no longer matches: the whole proposal, with the new tag.
        const changed = yield* f.call("GET", `/v2/proposals/${p.id}`, {
          key: keys.site,
          headers: { "if-none-match": p.etag }
        })
        expect(expectStatus(changed, 200).effective_patch).toEqual({ "catalog.work.latin": "E2" })
        expect(changed.body.amendment_count).toBe(1)
        expect(etagOf(changed)).toBe(next)
        const current = yield* f.call("GET", `/v2/proposals/${p.id}`, {
          key: keys.site,
          headers: { "if-none-match": next }
        })
        expect(current.status).toBe(304)
      }))

    it.effect("amendments are numbered 1, 2, 3 and listed in seq order; the effective patch applies them in order", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const before = yield* snapshotOf(f, keys.moderator, "work", work)
        const p = opened(
          yield* propose(f, keys.site, {
            entity_type: WORK,
            entity_id: work,
            patch: {
              "catalog.work.display_name": "First",
              "catalog.work.latin": "First",
              "catalog.work.length_minutes": 10
            }
          })
        )
        const bodies = [
          { set: { "catalog.work.display_name": "Second" }, unset: ["catalog.work.latin"], note: "one" },
          { set: { "catalog.work.latin": "Back", "catalog.work.olang": "ja" }, unset: ["catalog.work.length_minutes"] },
          { set: { "catalog.work.display_name": "Third" } }
        ]
        let etag = p.etag
        const made: Array<any> = []
        for (const [i, body] of bodies.entries()) {
          const res = yield* amend(f, i === 1 ? keys.site2 : keys.site, p.id, etag, body)
          const amendment = expectStatus(res, 201)
          expect(amendment).toMatchObject({
            object: "amendment",
            seq: i + 1,
            amender_uid: String(i === 1 ? f.siteUser2.id : f.siteUser.id),
            note: body.note ?? "",
            set: body.set,
            unset: body.unset ?? []
          })
          etag = etagOf(res)
          expect(etag).toBe(`"proposal-${p.id}-${i + 2}"`)
          made.push(amendment)
        }
        const listed = expectStatus(yield* f.call("GET", `/v2/proposals/${p.id}/amendments`, { key: keys.site }), 200)
        expect(listed.items).toEqual(made)
        expect(
          (yield* pages(f, keys.site, `/v2/proposals/${p.id}/amendments`, 2)).map((page) => page.map((a) => a.seq))
        ).toEqual([[1, 2], [3]])
        const read = expectStatus(yield* f.call("GET", `/v2/proposals/${p.id}`, { key: keys.site }), 200)
        expect(read.patch).toEqual(p.body.patch)
        expect(read.amendment_count).toBe(3)
        expect(read.effective_patch).toEqual({
          "catalog.work.display_name": "Third",
          "catalog.work.latin": "Back",
          "catalog.work.olang": "ja"
        })
        // A merge writes the effective patch.
        const merged = expectStatus(yield* decide(f, keys.moderator, p.id, etag, { decision: "merge" }), 200)
        const after = yield* snapshotOf(f, keys.moderator, "work", work)
        expect(after).toMatchObject(read.effective_patch)
        // Its diff holds the effective keys whose values changed, and no key an amendment took out.
        const revision = expectStatus(
          yield* f.call("GET", `/v2/revisions/${merged.revision_id}`, { key: keys.site }),
          200
        )
        const byKey = (a: { key: string }, b: { key: string }) => a.key < b.key ? -1 : 1
        expect([...revision.diff].sort(byKey)).toEqual(
          Object.entries(read.effective_patch as Record<string, unknown>)
            .filter(([key, to]) => JSON.stringify(before[key]) !== JSON.stringify(to))
            .map(([key, to]) => ({ key, from: before[key], to }))
            .sort(byKey)
        )
        expect(revision.diff.length).toBeGreaterThanOrEqual(2)
      }))

    // ---------------------------------------------------------------------------------------------
    // Idempotency (docs/writing.md, "The write runner")
    // ---------------------------------------------------------------------------------------------

    it.effect("the same Idempotency-Key and body replay the proposal; another body under the key is 409 IDEMPOTENCY_KEY_REUSED", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const idem = { "idempotency-key": `propose-${work}` }
        const body = {
          entity_type: WORK,
          entity_id: work,
          patch: { "catalog.work.latin": "Once", "catalog.work.length_minutes": 5 },
          note: "retry"
        }
        const first = yield* propose(f, keys.site, body, idem)
        const p = opened(first)
        expect(first.headers.get("idempotent-replayed")).toBeNull()
        // The same request, its members in another order.
        const reordered = {
          note: "retry",
          patch: { "catalog.work.length_minutes": 5, "catalog.work.latin": "Once" },
          entity_id: work,
          entity_type: WORK
        }
        const replay = yield* propose(f, keys.site, reordered, idem)
        expect(expectStatus(replay, 201)).toEqual(p.body)
        expect(replay.headers.get("idempotent-replayed")).toBe("true")
        expect(replay.headers.get("etag")).toBe(p.etag)
        expect(replay.headers.get("location")).toBe(`/v2/proposals/${p.id}`)
        expect(yield* proposalsOn(WORK, work)).toBe(1)
        expectProblemCode(
          yield* propose(f, keys.site, { ...body, note: "another" }, idem),
          409,
          "IDEMPOTENCY_KEY_REUSED"
        )
        expect(yield* proposalsOn(WORK, work)).toBe(1)
        // An amendment's key too.
        const amendKey = { "idempotency-key": `amend-${work}` }
        const a = yield* amend(f, keys.site, p.id, p.etag, { set: { "catalog.work.latin": "Twice" } }, amendKey)
        expectStatus(a, 201)
        const again = yield* amend(f, keys.site, p.id, p.etag, { set: { "catalog.work.latin": "Twice" } }, amendKey)
        expect(expectStatus(again, 201)).toEqual(a.body)
        expect(again.headers.get("idempotent-replayed")).toBe("true")
        expect(yield* stored(p.id)).toMatchObject({ version: 2, amendment_count: 1, amendments: 1 })
      }))

    it.effect("a retried decision replays its answer although its If-Match is stale by then", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const p = opened(
          yield* propose(f, keys.site, { entity_type: WORK, entity_id: work, patch: { "catalog.work.latin": "D" } })
        )
        const idem = { "idempotency-key": `decide-${p.id}` }
        const first = yield* decide(f, keys.moderator, p.id, p.etag, { decision: "merge" }, idem)
        expect(expectStatus(first, 200).state).toBe("merged")
        const retry = yield* decide(f, keys.moderator, p.id, p.etag, { decision: "merge" }, idem)
        expect(expectStatus(retry, 200)).toEqual(first.body)
        expect(retry.headers.get("idempotent-replayed")).toBe("true")
        expect(retry.headers.get("etag")).toBe(first.headers.get("etag"))
        expect(yield* revisionsOn(WORK, work)).toBe(1)
        // Without the key the same request is judged afresh: its If-Match is stale.
        expectProblemCode(
          yield* decide(f, keys.moderator, p.id, p.etag, { decision: "merge" }),
          412,
          "PRECONDITION_FAILED"
        )
      }))

    // ---------------------------------------------------------------------------------------------
    // Revisions
    // ---------------------------------------------------------------------------------------------

    it.effect("GET /v2/revisions/:id reads a revision; an entity's revisions are listed newest first with a cursor; an unknown one is 404", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork()
        const before = yield* snapshotOf(f, keys.moderator, "work", work)
        const merged = []
        for (const minutes of [101, 102, 103]) {
          merged.push(
            yield* proposeAndMerge(f, keys, { type: WORK, id: work }, { "catalog.work.length_minutes": minutes })
          )
        }
        const revision = expectStatus(
          yield* f.call("GET", `/v2/revisions/${merged[0].revision_id}`, { key: keys.site }),
          200
        )
        expect(revision).toEqual({
          object: "revision",
          id: merged[0].revision_id,
          entity_type: WORK,
          entity_id: work,
          proposal_id: merged[0].id,
          proposer_uid: String(f.siteUser.id),
          moderator_uid: String(f.moderator.id),
          created_at: expect.any(String),
          diff: [{ key: "catalog.work.length_minutes", from: before["catalog.work.length_minutes"], to: 101 }]
        })
        // The next merge's `from` is what the previous one wrote.
        const second = expectStatus(
          yield* f.call("GET", `/v2/revisions/${merged[1].revision_id}`, { key: keys.site }),
          200
        )
        expect(second.diff).toEqual([{ key: "catalog.work.length_minutes", from: 101, to: 102 }])
        const newestFirst = merged.map((m) => m.revision_id).reverse()
        const listed = expectStatus(
          yield* f.call("GET", `/v2/catalog/works/${work}/revisions`, { key: keys.site }),
          200
        )
        expect(ids(listed.items)).toEqual(newestFirst)
        expect(listed.items[1]).toEqual(second)
        expect((yield* pages(f, keys.site, `/v2/catalog/works/${work}/revisions`, 2)).map(ids)).toEqual([
          newestFirst.slice(0, 2),
          newestFirst.slice(2)
        ])
        expectProblemCode(yield* f.call("GET", "/v2/revisions/999999999", { key: keys.site }), 404, "NOT_FOUND")
        expectProblemCode(
          yield* f.call("GET", "/v2/catalog/works/999999999/revisions", { key: keys.site }),
          404,
          "NOT_FOUND"
        )
      }))

    it.effect("a merge whose values equal the current ones records a revision with an empty diff", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork({ where: "EXISTS (SELECT 1 FROM work_tags x WHERE x.work_id = e.id)" })
        const before = yield* snapshotOf(f, keys.moderator, "work", work)
        const same = {
          "catalog.work.display_name": before["catalog.work.display_name"],
          "catalog.work.titles": before["catalog.work.titles"],
          "catalog.work.tags": before["catalog.work.tags"],
          "catalog.work.length_minutes": before["catalog.work.length_minutes"]
        }
        const merged = yield* proposeAndMerge(f, keys, { type: WORK, id: work }, same)
        expect(merged.revision_id).toEqual(expect.any(String))
        const revision = expectStatus(
          yield* f.call("GET", `/v2/revisions/${merged.revision_id}`, { key: keys.site }),
          200
        )
        expect(revision.diff).toEqual([])
        const listed = expectStatus(
          yield* f.call("GET", `/v2/catalog/works/${work}/revisions`, { key: keys.site }),
          200
        )
        expect(ids(listed.items)).toEqual([merged.revision_id])
        const after = yield* snapshotOf(f, keys.moderator, "work", work)
        const { ["catalog.work.updated_at"]: _a, ...rest } = after
        const { ["catalog.work.updated_at"]: _b, ...was } = before
        expect(rest).toEqual(was)
      }))

    it.effect("docs/writing.md, \"Field keys\": merged tags keep their scores, whole or fractional, and the tags' work counts follow", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const keys = yield* proposalKeys(f)
        const work = yield* takeWork({ where: "EXISTS (SELECT 1 FROM work_tags x WHERE x.work_id = e.id)" })
        const counts = (tagIds: ReadonlyArray<string>) =>
          sql<{ id: string; n: number; s: number }>`
            SELECT id::text AS id, work_count AS n, work_count_sfw AS s FROM tags
            WHERE id = ANY(${tagIds}::bigint[]) ORDER BY id`
        const old = (yield* sql<{ id: string }>`
          SELECT tag_id::text AS id FROM work_tags WHERE work_id = ${work}::bigint ORDER BY tag_id`).map((r) => r.id)
        const fresh = (yield* sql<{ id: string }>`
          SELECT id::text AS id FROM tags WHERE live
            AND id NOT IN (SELECT tag_id FROM work_tags WHERE work_id = ${work}::bigint)
          ORDER BY id LIMIT 2`).map((r) => r.id)
        expect(fresh).toHaveLength(2)
        const [oldBefore, freshBefore] = [yield* counts(old), yield* counts(fresh)]
        const tags = [
          { tag: { id: fresh[0]! }, spoiler: "none", score: 3 },
          { tag: { id: fresh[1]! }, spoiler: "minor", score: 1.25 }
        ]
        const merged = yield* proposeAndMerge(f, keys, { type: WORK, id: work }, { "catalog.work.tags": tags })
        expect((yield* snapshotOf(f, keys.moderator, "work", work))["catalog.work.tags"]).toEqual(tags)
        const revision = expectStatus(
          yield* f.call("GET", `/v2/revisions/${merged.revision_id}`, { key: keys.site }),
          200
        )
        expect(revision.diff).toEqual([expect.objectContaining({ key: "catalog.work.tags", to: tags })])
        // The work is served and sfw: it counts for its new tags and no longer for its old ones.
        expect(yield* counts(fresh)).toEqual(freshBefore.map((t) => ({ ...t, n: t.n + 1, s: t.s + 1 })))
        expect(yield* counts(old)).toEqual(oldBefore.map((t) => ({ ...t, n: t.n - 1, s: t.s - 1 })))
      }))

    it.effect("revisions recorded on a merged-away entity are listed under the survivor; the loser's revisions are 404 ENTITY_MERGED", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const merges = yield* Merges
        const keys = yield* proposalKeys(f)
        const loser = yield* takeWork()
        const survivor = yield* takeWork()
        const onSurvivor = yield* proposeAndMerge(f, keys, { type: WORK, id: survivor }, { "catalog.work.latin": "S" })
        const onLoser = yield* proposeAndMerge(f, keys, { type: WORK, id: loser }, { "catalog.work.latin": "L" })
        yield* merges.merge("work", loser, survivor)
        const listed = expectStatus(
          yield* f.call("GET", `/v2/catalog/works/${survivor}/revisions`, { key: keys.site }),
          200
        )
        expect(ids(listed.items)).toEqual([onLoser.revision_id, onSurvivor.revision_id])
        // The revision keeps the id it was recorded on.
        expect(listed.items[0].entity_id).toBe(loser)
        const gone = expectProblemCode(
          yield* f.call("GET", `/v2/catalog/works/${loser}/revisions`, { key: keys.site }),
          404,
          "ENTITY_MERGED"
        )
        expect(gone).toMatchObject({ object: "work", current_id: survivor })
        expectStatus(yield* f.call("GET", `/v2/revisions/${onLoser.revision_id}`, { key: keys.site }), 200)
        // A later merge on the survivor comes first.
        const later = yield* proposeAndMerge(f, keys, { type: WORK, id: survivor }, { "catalog.work.latin": "S2" })
        const again = expectStatus(
          yield* f.call("GET", `/v2/catalog/works/${survivor}/revisions`, { key: keys.site }),
          200
        )
        expect(ids(again.items)).toEqual([later.revision_id, onLoser.revision_id, onSurvivor.revision_id])
      }))

    it.effect("every collection lists its entities' revisions: releases, characters, credit names, companies, tags, engines", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const collections: ReadonlyArray<readonly [string, string, TargetObject]> = [
          ["releases", "catalog.release", "release"],
          ["characters", "catalog.character", "character"],
          ["credit-names", "catalog.credit_name", "credit_name"],
          ["companies", "catalog.company", "company"],
          ["tags", "catalog.tag", "tag"],
          ["engines", "catalog.engine", "engine"]
        ]
        for (const [collection, entityType, object] of collections) {
          const id = yield* take(object)
          const name = `Renamed ${object} ${id}`
          const merged = yield* proposeAndMerge(f, keys, { type: entityType, id }, {
            [`${entityType}.display_name`]: name
          })
          const listed = expectStatus(
            yield* f.call("GET", `/v2/catalog/${collection}/${id}/revisions`, { key: keys.site }),
            200
          )
          expect(listed.items, collection).toEqual([expect.objectContaining({
            id: merged.revision_id,
            entity_type: entityType,
            entity_id: id,
            diff: [expect.objectContaining({ key: `${entityType}.display_name`, to: name })]
          })])
          expect((yield* snapshotOf(f, keys.moderator, object, id))[`${entityType}.display_name`]).toBe(name)
          expect(yield* revisionsOn(entityType, id)).toBe(1)
        }
      }))
  })
})
