/**
 * Claims through real HTTP, rule by rule (docs/writing.md, "Claims": creation and minting, the state
 * machine, the bearer's faces, the moderation queue, minted works in the change feed; "The claim-event
 * log never skips": the event log; "Who may write"; docs/api-contract.md, "Errors: catalog problem
 * documents": every refusal is a problem document with its code). Every success body of a claim
 * route is decoded with its schema.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import {
  ClaimDecisionRecord,
  ClaimRecord,
  ListClaimEvent,
  ListClaimRecord,
  Snapshot
} from "../../schema/Catalog/Claim.js"
import { fieldsOf } from "../../schema/Catalog/Fields.js"
import { FieldError, type ProblemCode, ProblemCodes } from "../../schema/Problem.js"
import { hashKey } from "../../src/catalog/auth/ApiKeys.js"
import { idempotencyLockName } from "../../src/catalog/writes/Writes.js"
import { AdvisoryLockClass } from "../../src/platform/AdvisoryLocks.js"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape, writeScopes } from "../support/Claims.js"
import { serverLayerOptions } from "../support/TestServers.js"

type Reply = Effect.Success<ReturnType<ClaimsFixtureShape["call"]>>

const decodeClaim = Schema.decodeUnknownSync(ClaimRecord)
const decodeDecision = Schema.decodeUnknownSync(ClaimDecisionRecord)
const decodeClaimList = Schema.decodeUnknownSync(ListClaimRecord)
const decodeEvents = Schema.decodeUnknownSync(ListClaimEvent)
const decodeSnapshot = Schema.decodeUnknownSync(Snapshot)

/** A problem document (docs/api-contract.md, "Errors: catalog problem documents") with `code`; answers the body. */
const expectProblem = (res: Reply, code: ProblemCode) => {
  const { status, title } = ProblemCodes[code]
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  expect(res.headers.get("content-type")).toBe("application/problem+json")
  expect(res.body.code).toBe(code)
  expect(res.body.status).toBe(status)
  expect(res.body.title).toBe(title)
  expect(Array.isArray(res.body.errors)).toBe(true)
  for (const error of res.body.errors) expect(Schema.is(FieldError)(error), JSON.stringify(error)).toBe(true)
  return res.body
}

/** 422 VALIDATION_FAILED naming `reason` at `pointer`. */
const expectInvalid = (res: Reply, reason: string, pointer: string) => {
  const body = expectProblem(res, "VALIDATION_FAILED")
  expect(body.errors, JSON.stringify(body)).toContainEqual(expect.objectContaining({ reason, pointer }))
  return body
}

/** A success of a claim route: status, and the body as its schema decodes it. */
const expectClaim = (res: Reply, status = 200) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  return decodeClaim(res.body)
}

const STRONG_ETAG = /^"[\x21\x23-\x7e]+"$/

// Tests run in order against one fixture: each takes works nobody used before.
let used = 0
const freshWork = (f: ClaimsFixtureShape) => {
  const work = f.works[used++]
  if (work === undefined) throw new Error("the fixture ran out of works")
  return work
}
let names = 0
const uniqueName = (label: string) => `Minted ${label} ${++names} ${Date.now()}`

const create = (f: ClaimsFixtureShape, key: string, body: unknown, headers: Record<string, string> = {}) =>
  f.call("POST", "/v2/claims", { key, body, headers })

const getClaim = (f: ClaimsFixtureShape, key: string, work: string, headers: Record<string, string> = {}) =>
  f.call("GET", `/v2/claims/${work}`, { key, headers })

const etagOf = (f: ClaimsFixtureShape, key: string, work: string) =>
  Effect.map(getClaim(f, key, work), (res) => {
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    return res.headers.get("etag")!
  })

const submit = (f: ClaimsFixtureShape, key: string, work: string, headers: Record<string, string> = {}) =>
  f.call("POST", `/v2/claims/${work}/submission`, { key, headers })

const release = (f: ClaimsFixtureShape, key: string, work: string, headers: Record<string, string> = {}) =>
  f.call("DELETE", `/v2/claims/${work}`, { key, headers })

const decide = (
  f: ClaimsFixtureShape,
  work: string,
  body: unknown,
  headers: Record<string, string>,
  key = f.moderator.key
) => f.call("POST", `/v2/moderation/claims/${work}/decisions`, { key, body, headers })

/** Decides with the current ETag (as the site reads it) and expects the outcome. */
const decideOk = (f: ClaimsFixtureShape, work: string, body: unknown, reader = f.siteUser.key) =>
  Effect.gen(function*() {
    const etag = yield* etagOf(f, reader, work)
    const res = yield* decide(f, work, body, { "if-match": etag })
    expect(res.status, JSON.stringify(res.body)).toBe(201)
    return decodeDecision(res.body)
  })

/** Claims an existing work as `key` (pending, or live for a creator). */
const claimExisting = (f: ClaimsFixtureShape, key = f.siteUser.key, extra: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const work = freshWork(f)
    const record = expectClaim(yield* create(f, key, { work_id: work, ...extra }), 201)
    return { work, record }
  })

/** Mints a work as `key`: its claim starts in `draft`. */
const mint = (f: ClaimsFixtureShape, key = f.siteUser.key, extra: Record<string, unknown> = {}) =>
  Effect.gen(function*() {
    const name = uniqueName("work")
    const record = expectClaim(yield* create(f, key, { site_work_id: "9001", display_name: name, ...extra }), 201)
    expect(record.state).toBe("draft")
    return { work: record.id, name, record }
  })

const workVisible = (f: ClaimsFixtureShape, work: string) =>
  Effect.map(f.call("GET", `/v2/catalog/works/${work}`, { key: f.siteUser.key }), (res) => res.status)

const eventsOf = (f: ClaimsFixtureShape, work: string) =>
  Effect.map(f.call("GET", `/v2/catalog/claim-events?work_id=${work}&limit=100`, { key: f.siteUser.key }), (res) => {
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    return decodeEvents(res.body).items
  })

/** The work rows of the change feed from `cursor` (or a cold start) to its end, and the cursor to poll with. */
const feedWorks = (f: ClaimsFixtureShape, from: string | undefined) =>
  Effect.gen(function*() {
    const works: Array<{ id: string; gone?: true }> = []
    let cursor = from
    for (let pages = 0; pages < 200; pages++) {
      const query = cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`
      const page = yield* f.call("GET", `/v2/catalog/changes?limit=100${query}`, { key: f.siteUser.key })
      expect(page.status, JSON.stringify(page.body)).toBe(200)
      for (const item of page.body.items) if (item.target_object === "work") works.push(item)
      if (page.body.next_cursor === undefined) return { works, cursor }
      cursor = page.body.next_cursor
    }
    throw new Error("the change feed did not end")
  })

describe("claims (docs/writing.md, \"Claims\", \"Who may write\")", () => {
  it.layer(ClaimsFixtureLive(), serverLayerOptions())((it) => {
    // ---------------------------------------------------------------------------------------------
    // Creation
    // ---------------------------------------------------------------------------------------------

    it.effect("work_id claims an existing work: 201 pending, Location, strong ETag, the bearer's face (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const work = freshWork(f)
        const res = yield* create(f, f.siteUser.key, { work_id: work, site_work_id: "123" })
        const record = expectClaim(res, 201)
        expect(res.headers.get("location")).toBe(`/v2/claims/${work}`)
        expect(res.headers.get("etag")).toMatch(STRONG_ETAG)
        expect(record).toMatchObject({
          object: "claim",
          id: work,
          state: "pending",
          site: "site_a",
          product_work_id: "123",
          acted_count: 1
        })
        expect(record.first_acted_at).not.toBeNull()
        expect(record.last_event).toMatchObject({
          object: "claim_event",
          from_state: null,
          to_state: "pending",
          actor_uid: String(f.siteUser.id)
        })
        const read = yield* getClaim(f, f.siteUser.key, work)
        expect(expectClaim(read)).toEqual(record)
        expect(read.headers.get("etag")).toBe(res.headers.get("etag"))
      }))

    it.effect("a creator's claim on an existing work is live at once; site= and owner_uid= list it (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { record, work } = yield* claimExisting(f, f.creator.key)
        expect(record.state).toBe("live")
        const bySite = yield* f.call("GET", "/v2/catalog/works?site=site_a&limit=100", { key: f.siteUser.key })
        expect(bySite.status, JSON.stringify(bySite.body)).toBe(200)
        expect(bySite.body.items.map((w: any) => w.id)).toContain(work)
        const byOwner = yield* f.call("GET", `/v2/catalog/works?owner_uid=${f.creator.id}&limit=100`, {
          key: f.siteUser.key
        })
        expect(byOwner.status, JSON.stringify(byOwner.body)).toBe(200)
        expect(byOwner.body.items.map((w: any) => w.id)).toEqual([work])
        const otherSite = yield* f.call("GET", "/v2/catalog/works?site=site_b&limit=100", { key: f.siteUser.key })
        expect(otherSite.body.items.map((w: any) => w.id)).not.toContain(work)
      }))

    it.effect("a pending claim is not in the works list of its site or owner until approved (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* claimExisting(f, f.siteUser2.key)
        const owned = () =>
          Effect.map(
            f.call("GET", `/v2/catalog/works?owner_uid=${f.siteUser2.id}&limit=100`, { key: f.siteUser.key }),
            (res) => res.body.items.map((w: any) => w.id)
          )
        expect(yield* owned()).toEqual([])
        yield* decideOk(f, work, { decision: "approve" }, f.siteUser2.key)
        expect(yield* owned()).toEqual([work])
      }))

    it.effect("an unknown work_id is 422 VALIDATION_FAILED, UNKNOWN_REFERENCE at /work_id (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        expectInvalid(yield* create(f, f.siteUser.key, { work_id: "987654321" }), "UNKNOWN_REFERENCE", "/work_id")
      }))

    it.effect("refs naming exactly one work claim that work (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const work = freshWork(f)
        const refs = yield* sql<{ source: string; external_id: string }>`
          SELECT source, external_id FROM entity_refs r
          WHERE entity_type = 'work' AND entity_id = ${work}::bigint
            AND NOT EXISTS (SELECT 1 FROM entity_refs o WHERE o.entity_type = 'work' AND o.source = r.source
                              AND o.external_id = r.external_id AND o.entity_id <> r.entity_id)
          ORDER BY source LIMIT 1`
        expect(refs.length, `work ${work} has no upstream reference of its own`).toBe(1)
        const res = yield* create(f, f.siteUser.key, {
          refs: [{ ...refs[0]! }, { source: "nowhere", external_id: "x1" }]
        })
        const record = expectClaim(res, 201)
        expect(record.id).toBe(work)
        expect(record.state).toBe("pending")
      }))

    it.effect("refs naming several works are 422 INCONSISTENT_WITH at /refs (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const a = freshWork(f)
        const b = freshWork(f)
        const refs = yield* sql<{ source: string; external_id: string }>`
          SELECT DISTINCT ON (entity_id) source, external_id FROM entity_refs
          WHERE entity_type = 'work' AND entity_id IN (${a}::bigint, ${b}::bigint)
          ORDER BY entity_id, source`
        expect(refs.length).toBe(2)
        const res = yield* create(f, f.siteUser.key, { refs: refs.map((r) => ({ ...r })), display_name: "Two" })
        expectInvalid(res, "INCONSISTENT_WITH", "/refs")
        // Nothing was claimed.
        for (const work of [a, b]) expect(expectClaim(yield* getClaim(f, f.siteUser.key, work)).state).toBe("none")
      }))

    it.effect("refs matching nothing mint a draft work; without display_name 422 REQUIRED at /display_name (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const ref = { source: "site_a_shop", external_id: `sku-${Date.now()}` }
        expectInvalid(yield* create(f, f.siteUser.key, { refs: [ref] }), "REQUIRED", "/display_name")
        const record = expectClaim(
          yield* create(f, f.siteUser.key, { refs: [ref], display_name: uniqueName("refs") }),
          201
        )
        expect(record.state).toBe("draft")
        // The draft keeps the ref with its claim; it belongs to no work until the draft goes live.
        const stored = yield* sql<{ id: string }>`
          SELECT work_id::text AS id FROM claim_refs WHERE source = ${ref.source} AND external_id = ${ref.external_id}`
        expect(stored.map((r) => r.id)).toEqual([record.id])
        const anchored = yield* sql`
          SELECT 1 FROM entity_refs
          WHERE entity_type = 'work' AND source = ${ref.source} AND external_id = ${ref.external_id}`
        expect(anchored).toEqual([])
      }))

    it.effect("site_work_id with display_name alone mints a draft anchored to the site's id (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { record, work } = yield* mint(f, f.siteUser.key, { site_work_id: "4242" })
        expect(record).toMatchObject({ site: "site_a", product_work_id: "4242", acted_count: 1 })
        expect(f.works).not.toContain(work)
      }))

    it.effect("a body naming no work nor anything to mint is 422 REQUIRED (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const body = expectProblem(yield* create(f, f.siteUser.key, {}), "VALIDATION_FAILED")
        expect(body.errors[0].reason).toBe("REQUIRED")
        expectInvalid(yield* create(f, f.siteUser.key, { site_work_id: "55" }), "REQUIRED", "/display_name")
      }))

    it.effect("field_values mint a work; the snapshot serves the same keys once it is live (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const name = uniqueName("fields")
        const fields = {
          "catalog.work.display_name": name,
          "catalog.work.latin": "Latin Name",
          "catalog.work.olang": "ja",
          "catalog.work.length_minutes": 321,
          "catalog.work.development_status": "in_development"
        }
        const record = expectClaim(yield* create(f, f.siteUser.key, { field_values: fields }), 201)
        expect(record.state).toBe("draft")
        expect(record.display_name).toBe(name)
        // Invisible to the snapshot while the work is not served.
        expectProblem(
          yield* f.call("GET", `/v2/moderation/snapshots/work/${record.id}`, { key: f.moderator.key }),
          "NOT_FOUND"
        )
        expectClaim(yield* submit(f, f.siteUser.key, record.id))
        yield* decideOk(f, record.id, { decision: "approve" })
        const snapshot = yield* f.call("GET", `/v2/moderation/snapshots/work/${record.id}`, { key: f.moderator.key })
        expect(snapshot.status, JSON.stringify(snapshot.body)).toBe(200)
        // The snapshot holds every field key of works (schema/Catalog/Fields.ts); the minted ones read back.
        const served = decodeSnapshot(snapshot.body)
        expect(Object.keys(served).sort()).toEqual(fieldsOf("catalog.work").map((field) => field.key).sort())
        expect(Object.fromEntries(Object.keys(fields).map((key) => [key, served[key]]))).toEqual(fields)
      }))

    it.effect("top-level display_name wins over the catalog.work.display_name key (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const name = uniqueName("top")
        const record = expectClaim(
          yield* create(f, f.siteUser.key, {
            display_name: name,
            field_values: { "catalog.work.display_name": "Loses" }
          }),
          201
        )
        expect(record.display_name).toBe(name)
      }))

    it.effect("an unknown field_values key is 422 UNKNOWN_VALUE at /field_values/<key> (README, \"Writing to the catalog\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const res = yield* create(f, f.siteUser.key, {
          field_values: { "catalog.work.display_name": "X", "catalog.work.colour": "blue" }
        })
        expectInvalid(res, "UNKNOWN_VALUE", "/field_values/catalog.work.colour")
      }))

    it.effect("field_values with work_id is 422 INCONSISTENT_WITH (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const work = freshWork(f)
        const res = yield* create(f, f.siteUser.key, {
          work_id: work,
          field_values: { "catalog.work.display_name": "X" }
        })
        const body = expectProblem(res, "VALIDATION_FAILED")
        expect(body.errors[0].reason).toBe("INCONSISTENT_WITH")
        expect(expectClaim(yield* getClaim(f, f.siteUser.key, work)).state).toBe("none")
      }))

    it.effect("claiming a claimed work is 409 ALREADY_EXISTS, for any site (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* claimExisting(f)
        expectProblem(yield* create(f, f.siteUser.key, { work_id: work }), "ALREADY_EXISTS")
        expectProblem(yield* create(f, f.otherSiteUser.key, { work_id: work }), "ALREADY_EXISTS")
        expectProblem(yield* create(f, f.creator.key, { work_id: work }), "ALREADY_EXISTS")
      }))

    // ---------------------------------------------------------------------------------------------
    // Minted works: invisible until live
    // ---------------------------------------------------------------------------------------------

    it.effect("a minted work is invisible (get, ids=, search) until its claim is live (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { name, work } = yield* mint(f)
        const reads = () =>
          Effect.gen(function*() {
            const one = yield* workVisible(f, work)
            const ids = yield* f.call("GET", `/v2/catalog/works?ids=${work}`, { key: f.siteUser.key })
            const search = yield* f.call("GET", `/v2/catalog/search?q=${encodeURIComponent(name)}`, {
              key: f.siteUser.key
            })
            expect(ids.status, JSON.stringify(ids.body)).toBe(200)
            expect(search.status, JSON.stringify(search.body)).toBe(200)
            return {
              one,
              ids: ids.body.items.map((w: any) => w.id),
              search: search.body.items.some((w: any) => w.id === work)
            }
          })
        expect(yield* reads()).toEqual({ one: 404, ids: [], search: false })
        expectClaim(yield* submit(f, f.siteUser.key, work))
        expect(yield* reads()).toEqual({ one: 404, ids: [], search: false })
        yield* decideOk(f, work, { decision: "approve" })
        expect(yield* reads()).toEqual({ one: 200, ids: [work], search: true })
      }))

    it.effect("a minted work enters the change feed only when its claim goes live (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* mint(f)
        const cold = yield* feedWorks(f, undefined)
        expect(cold.works.map((w) => w.id)).not.toContain(work)
        expectClaim(yield* submit(f, f.siteUser.key, work))
        const pending = yield* feedWorks(f, cold.cursor)
        expect(pending.works.map((w) => w.id)).not.toContain(work)
        yield* decideOk(f, work, { decision: "approve" })
        const live = yield* feedWorks(f, pending.cursor)
        expect(live.works.filter((w) => w.id === work)).toEqual([expect.objectContaining({ id: work })])
        expect(live.works.find((w) => w.id === work)!.gone).toBeUndefined()
        const again = yield* feedWorks(f, undefined)
        expect(again.works.filter((w) => w.id === work).length).toBe(1)
      }))

    it.effect("a released minted draft never appears; a released live minted work stays (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const draft = yield* mint(f)
        expectClaim(yield* release(f, f.siteUser.key, draft.work))
        expect(yield* workVisible(f, draft.work)).toBe(404)
        const live = yield* mint(f, f.creator.key)
        expect(expectClaim(yield* submit(f, f.creator.key, live.work)).state).toBe("live")
        expect(yield* workVisible(f, live.work)).toBe(200)
        expectClaim(yield* release(f, f.creator.key, live.work))
        expect(yield* workVisible(f, live.work)).toBe(200)
      }))

    it.effect("the bearer's faces agree: every work GET /v2/claims lists can be read at GET /v2/claims/{id} (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const user = yield* f.makeUser([])
        const key = yield* f.makeKey("site_a", writeScopes, user)
        const kept = yield* mint(f, key)
        const released = yield* mint(f, key)
        expectClaim(yield* release(f, key, released.work))
        const list = yield* f.call("GET", "/v2/claims", { key })
        expect(list.status, JSON.stringify(list.body)).toBe(200)
        const listed = decodeClaimList(list.body).items.map((c) => c.id)
        expect(listed).toContain(kept.work)
        for (const work of listed) {
          const one = yield* getClaim(f, key, work)
          expect(one.status, `listed ${work}, but GET /v2/claims/${work}: ${JSON.stringify(one.body)}`).toBe(200)
        }
      }))

    // ---------------------------------------------------------------------------------------------
    // Submission and release
    // ---------------------------------------------------------------------------------------------

    it.effect("submission moves draft -> pending, and declined -> pending (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* mint(f)
        const submitted = yield* submit(f, f.siteUser.key, work)
        expect(expectClaim(submitted)).toMatchObject({ state: "pending", acted_count: 2 })
        expect(submitted.headers.get("etag")).toMatch(STRONG_ETAG)
        const declined = yield* decideOk(f, work, { decision: "decline", note: "Needs a cover." })
        expect(declined).toMatchObject({ from_state: "pending", to_state: "declined", note: "Needs a cover." })
        const read = expectClaim(yield* getClaim(f, f.siteUser.key, work))
        expect(read.state).toBe("declined")
        expect(read.last_event).toMatchObject({ reason: "Needs a cover.", actor_uid: String(f.moderator.id) })
        expect(expectClaim(yield* submit(f, f.siteUser.key, work)).state).toBe("pending")
      }))

    it.effect("a creator's submission publishes directly: draft -> live (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* mint(f, f.creator.key)
        expect(expectClaim(yield* submit(f, f.creator.key, work)).state).toBe("live")
        expect(yield* workVisible(f, work)).toBe(200)
      }))

    it.effect("submitting a pending, live or released claim is 409 INVALID_STATE_TRANSITION (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const pending = yield* claimExisting(f)
        expectProblem(yield* submit(f, f.siteUser.key, pending.work), "INVALID_STATE_TRANSITION")
        const live = yield* claimExisting(f, f.creator.key)
        expectProblem(yield* submit(f, f.creator.key, live.work), "INVALID_STATE_TRANSITION")
        expectClaim(yield* release(f, f.siteUser.key, pending.work))
        expectProblem(yield* submit(f, f.siteUser.key, pending.work), "INVALID_STATE_TRANSITION")
      }))

    it.effect("another site's submission or release is 403 TENANT_MISMATCH and changes nothing (docs/writing.md, \"Who may write\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* claimExisting(f)
        const etag = yield* etagOf(f, f.siteUser.key, work)
        expectProblem(yield* submit(f, f.otherSiteUser.key, work), "TENANT_MISMATCH")
        expectProblem(yield* release(f, f.otherSiteUser.key, work), "TENANT_MISMATCH")
        expectProblem(yield* release(f, f.moderator.key, work), "TENANT_MISMATCH")
        expect(yield* etagOf(f, f.siteUser.key, work)).toBe(etag)
        // Another user of the same site may act on the site's claim.
        expect(expectClaim(yield* release(f, f.siteUser2.key, work)).state).toBe("none")
      }))

    it.effect("submission, release and decisions on a never-claimed or unknown work are 404 NOT_FOUND (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const work = freshWork(f)
        expectProblem(yield* submit(f, f.siteUser.key, work), "NOT_FOUND")
        expectProblem(yield* release(f, f.siteUser.key, work), "NOT_FOUND")
        expectProblem(yield* decide(f, work, { decision: "ban" }, { "if-match": "*" }), "NOT_FOUND")
        expectProblem(yield* getClaim(f, f.siteUser.key, "987654321"), "NOT_FOUND")
        expectProblem(yield* submit(f, f.siteUser.key, "987654321"), "NOT_FOUND")
        expectProblem(yield* release(f, f.siteUser.key, "987654321"), "NOT_FOUND")
        expectProblem(
          yield* f.call("GET", "/v2/moderation/snapshots/work/987654321", { key: f.moderator.key }),
          "NOT_FOUND"
        )
        // The work itself reads as unclaimed.
        expect(expectClaim(yield* getClaim(f, f.siteUser.key, work))).toMatchObject({
          state: "none",
          site: "",
          product_work_id: null,
          acted_count: 0,
          first_acted_at: null
        })
      }))

    it.effect("another site's minted draft is 404 NOT_FOUND to it, not 403 (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* mint(f)
        expectProblem(yield* getClaim(f, f.otherSiteUser.key, work), "NOT_FOUND")
        expectProblem(yield* submit(f, f.otherSiteUser.key, work), "NOT_FOUND")
        expectProblem(yield* release(f, f.otherSiteUser.key, work), "NOT_FOUND")
      }))

    it.effect("release -> none; product_work_id null after release; the work can be claimed again (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { record, work } = yield* claimExisting(f, f.siteUser.key, { site_work_id: "777" })
        expect(record.product_work_id).toBe("777")
        const released = expectClaim(yield* release(f, f.siteUser.key, work))
        expect(released).toMatchObject({ state: "none", site: "", product_work_id: null, acted_count: 2 })
        expect(released.last_event).toMatchObject({ from_state: "pending", to_state: "none" })
        expect(expectClaim(yield* getClaim(f, f.siteUser.key, work)).product_work_id).toBeNull()
        const events = yield* eventsOf(f, work)
        expect(events.map((e) => [e.to_state, e.product_work_id])).toEqual([["pending", null], ["none", null]])
        const again = expectClaim(yield* create(f, f.otherSiteUser.key, { work_id: work, site_work_id: "5" }), 201)
        expect(again).toMatchObject({ state: "pending", site: "site_b", product_work_id: "5", acted_count: 1 })
      }))

    it.effect("releasing a released (none) claim is 409 INVALID_STATE_TRANSITION (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* claimExisting(f)
        expectClaim(yield* release(f, f.siteUser.key, work))
        expectProblem(yield* release(f, f.siteUser.key, work), "INVALID_STATE_TRANSITION")
      }))

    it.effect("a hidden (banned) claim cannot be released: 409 INVALID_STATE_TRANSITION (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* claimExisting(f)
        yield* decideOk(f, work, { decision: "ban" })
        expectProblem(yield* release(f, f.siteUser.key, work), "INVALID_STATE_TRANSITION")
        expect(expectClaim(yield* getClaim(f, f.siteUser.key, work)).state).toBe("hidden")
      }))

    // ---------------------------------------------------------------------------------------------
    // Decisions
    // ---------------------------------------------------------------------------------------------

    it.effect("approve pending -> live; the decision's id is the new claim event's id (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* claimExisting(f)
        const etag = yield* etagOf(f, f.siteUser.key, work)
        const res = yield* decide(f, work, { decision: "approve" }, { "if-match": etag })
        expect(res.status, JSON.stringify(res.body)).toBe(201)
        const decision = decodeDecision(res.body)
        expect(decision).toMatchObject({
          object: "decision",
          decision: "approve",
          note: "",
          from_state: "pending",
          to_state: "live"
        })
        const events = yield* eventsOf(f, work)
        const last = events[events.length - 1]!
        expect(last).toMatchObject({
          id: decision.id,
          from_state: "pending",
          to_state: "live",
          actor_uid: String(f.moderator.id),
          site: "site_a"
        })
        const read = expectClaim(yield* getClaim(f, f.siteUser.key, work))
        expect(read.state).toBe("live")
        expect(read.last_event!.id).toBe(decision.id)
      }))

    it.effect("decline needs a note (422 REQUIRED at /note); with one, pending -> declined (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* claimExisting(f)
        const etag = yield* etagOf(f, f.siteUser.key, work)
        expectInvalid(yield* decide(f, work, { decision: "decline" }, { "if-match": etag }), "REQUIRED", "/note")
        expectInvalid(
          yield* decide(f, work, { decision: "decline", note: "   " }, { "if-match": etag }),
          "REQUIRED",
          "/note"
        )
        const res = yield* decide(f, work, { decision: "decline", note: "Not yours." }, { "if-match": etag })
        expect(res.status, JSON.stringify(res.body)).toBe(201)
        expect(decodeDecision(res.body)).toMatchObject({ from_state: "pending", to_state: "declined" })
        const events = yield* eventsOf(f, work)
        expect(events[events.length - 1]).toMatchObject({ to_state: "declined", reason: "Not yours." })
      }))

    it.effect("ban hides, unban restores the remembered state (pending, live, draft, declined) (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const pending = (yield* claimExisting(f)).work
        const live = (yield* claimExisting(f, f.creator.key)).work
        const draft = (yield* mint(f)).work
        const declined = (yield* claimExisting(f)).work
        yield* decideOk(f, declined, { decision: "decline", note: "no" })
        for (const [work, state] of [[pending, "pending"], [live, "live"], [draft, "draft"], [declined, "declined"]]) {
          const ban = yield* decideOk(f, work!, { decision: "ban", note: "spam" })
          expect(ban).toMatchObject({ decision: "ban", from_state: state, to_state: "hidden", note: "spam" })
          expect(expectClaim(yield* getClaim(f, f.siteUser.key, work!)).state).toBe("hidden")
          const unban = yield* decideOk(f, work!, { decision: "unban" })
          expect(unban).toMatchObject({ decision: "unban", from_state: "hidden", to_state: state })
          expect(expectClaim(yield* getClaim(f, f.siteUser.key, work!)).state).toBe(state)
        }
      }))

    it.effect("a banned live claim leaves the site's works list and returns on unban (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* claimExisting(f, f.creator.key)
        const listed = () =>
          Effect.map(
            f.call("GET", `/v2/catalog/works?owner_uid=${f.creator.id}&limit=100`, { key: f.siteUser.key }),
            (res) => res.body.items.map((w: any) => w.id) as Array<string>
          )
        expect(yield* listed()).toContain(work)
        yield* decideOk(f, work, { decision: "ban" })
        expect(yield* listed()).not.toContain(work)
        yield* decideOk(f, work, { decision: "unban" })
        expect(yield* listed()).toContain(work)
      }))

    it.effect("a minted live work disappears on ban (404, gone in the feed) and returns on unban (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* mint(f)
        expectClaim(yield* submit(f, f.siteUser.key, work))
        yield* decideOk(f, work, { decision: "approve" })
        expect(yield* workVisible(f, work)).toBe(200)
        const before = yield* feedWorks(f, undefined)
        yield* decideOk(f, work, { decision: "ban" })
        expect(yield* workVisible(f, work)).toBe(404)
        const banned = yield* feedWorks(f, before.cursor)
        expect(banned.works.filter((w) => w.id === work)).toEqual([expect.objectContaining({ id: work, gone: true })])
        const unban = yield* decideOk(f, work, { decision: "unban" })
        expect(unban.to_state).toBe("live")
        expect(yield* workVisible(f, work)).toBe(200)
        const back = yield* feedWorks(f, banned.cursor)
        const row = back.works.find((w) => w.id === work)
        expect(row).toBeDefined()
        expect(row!.gone).toBeUndefined()
      }))

    it.effect("decisions outside the state machine are 409 INVALID_STATE_TRANSITION (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const live = (yield* claimExisting(f, f.creator.key)).work
        const draft = (yield* mint(f)).work
        const released = (yield* claimExisting(f)).work
        expectClaim(yield* release(f, f.siteUser.key, released))
        const hidden = (yield* claimExisting(f)).work
        yield* decideOk(f, hidden, { decision: "ban" })
        const cases: Array<[string, string, Record<string, string>]> = [
          [live, "live", { decision: "approve" }],
          [live, "live", { decision: "decline", note: "n" }],
          [live, "live", { decision: "unban" }],
          [draft, "draft", { decision: "approve" }],
          [draft, "draft", { decision: "decline", note: "n" }],
          [released, "none", { decision: "ban" }],
          [released, "none", { decision: "approve" }],
          [released, "none", { decision: "unban" }],
          [hidden, "hidden", { decision: "ban" }],
          [hidden, "hidden", { decision: "approve" }]
        ]
        for (const [work, state, body] of cases) {
          const res = yield* decide(f, work, body, { "if-match": "*" })
          expectProblem(res, "INVALID_STATE_TRANSITION")
          expect(res.body.detail, `${state} ${body.decision}`).toContain(state)
        }
      }))

    it.effect("a decision without If-Match is 428 PRECONDITION_REQUIRED (RFC 6585 section 3; docs/writing.md, \"Conditional writes\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* claimExisting(f)
        const body = expectProblem(yield* decide(f, work, { decision: "approve" }, {}), "PRECONDITION_REQUIRED")
        expect(body.errors[0]).toMatchObject({ reason: "REQUIRED", header: "If-Match" })
        expect(expectClaim(yield* getClaim(f, f.siteUser.key, work)).state).toBe("pending")
      }))

    it.effect("RFC 9110 13.1.1: a stale or weak If-Match on a decision is 412 PRECONDITION_FAILED; * and lists match", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* claimExisting(f)
        const first = yield* etagOf(f, f.siteUser.key, work)
        yield* decideOk(f, work, { decision: "ban" })
        const stale = yield* decide(f, work, { decision: "unban" }, { "if-match": first })
        expectProblem(stale, "PRECONDITION_FAILED")
        const current = yield* etagOf(f, f.siteUser.key, work)
        expect(current).not.toBe(first)
        expectProblem(
          yield* decide(f, work, { decision: "unban" }, { "if-match": `W/${current}` }),
          "PRECONDITION_FAILED"
        )
        const listed = yield* decide(f, work, { decision: "unban" }, { "if-match": `${first}, ${current}` })
        expect(listed.status, JSON.stringify(listed.body)).toBe(201)
        const star = yield* decide(f, work, { decision: "approve" }, { "if-match": "*" })
        expect(star.status, JSON.stringify(star.body)).toBe(201)
        expect(decodeDecision(star.body).to_state).toBe("live")
      }))

    it.effect("RFC 9110 13.1.1: submission and release honour If-Match when sent (stale: 412)", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* mint(f)
        const first = yield* etagOf(f, f.siteUser.key, work)
        expectProblem(yield* submit(f, f.siteUser.key, work, { "if-match": "\"claim-0-0\"" }), "PRECONDITION_FAILED")
        expect(expectClaim(yield* submit(f, f.siteUser.key, work, { "if-match": first })).state).toBe("pending")
        expectProblem(yield* release(f, f.siteUser.key, work, { "if-match": first }), "PRECONDITION_FAILED")
        const current = yield* etagOf(f, f.siteUser.key, work)
        expect(expectClaim(yield* release(f, f.siteUser.key, work, { "if-match": current })).state).toBe("none")
      }))

    it.effect("RFC 9110 8.8.3 / 13.1.2: a claim's ETag is strong, changes with every event; If-None-Match gives 304", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* mint(f)
        const seen = new Set<string>()
        const step = () =>
          Effect.gen(function*() {
            const etag = yield* etagOf(f, f.siteUser.key, work)
            expect(etag).toMatch(STRONG_ETAG)
            expect(seen.has(etag), etag).toBe(false)
            seen.add(etag)
            const same = yield* getClaim(f, f.siteUser.key, work, { "if-none-match": etag })
            expect(same.status).toBe(304)
            expect(same.body).toBeNull()
            expect(same.headers.get("etag")).toBe(etag)
            // Every reader sees the same ETag.
            expect(yield* etagOf(f, f.siteUser2.key, work)).toBe(etag)
            return etag
          })
        const draft = yield* step()
        expectClaim(yield* submit(f, f.siteUser.key, work))
        yield* step()
        yield* decideOk(f, work, { decision: "approve" })
        yield* step()
        yield* decideOk(f, work, { decision: "ban" })
        yield* step()
        const old = yield* getClaim(f, f.siteUser.key, work, { "if-none-match": draft })
        expect(expectClaim(old).state).toBe("hidden")
        expect(seen.size).toBe(4)
      }))

    // ---------------------------------------------------------------------------------------------
    // Reads: the bearer's faces, the queue, the event log
    // ---------------------------------------------------------------------------------------------

    it.effect("acted_count counts the bearer's own events (creation 1, submission 2, release 3) (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const bearer = yield* f.makeUser([])
        const key = yield* f.makeKey("site_a", writeScopes, bearer)
        const { record, work } = yield* mint(f, key)
        expect(record.acted_count).toBe(1)
        const firstActed = record.first_acted_at
        expect(firstActed).not.toBeNull()
        expect(expectClaim(yield* submit(f, key, work)).acted_count).toBe(2)
        yield* decideOk(f, work, { decision: "approve" }, key)
        // The moderator's event is the newest, but not the bearer's.
        const read = expectClaim(yield* getClaim(f, key, work))
        expect(read).toMatchObject({ state: "live", acted_count: 2, first_acted_at: firstActed })
        expect(read.last_event!.actor_uid).toBe(String(f.moderator.id))
        // Another user of the same site sees the claim with none of its own actions.
        expect(expectClaim(yield* getClaim(f, f.siteUser2.key, work))).toMatchObject({
          acted_count: 0,
          first_acted_at: null
        })
        expect(expectClaim(yield* release(f, key, work)).acted_count).toBe(3)
        const list = yield* f.call("GET", "/v2/claims", { key })
        expect(list.status, JSON.stringify(list.body)).toBe(200)
        const items = decodeClaimList(list.body).items
        expect(items.map((c) => [c.id, c.acted_count, c.state])).toEqual([[work, 3, "none"]])
        expect(items[0]!.last_event).toMatchObject({ to_state: "none", actor_uid: String(bearer) })
        // The moderator acted once on it.
        const mine = yield* getClaim(f, f.moderator.key, work)
        expect(expectClaim(mine).acted_count).toBe(1)
      }))

    it.effect("GET /v2/claims lists the works the bearer acted on, with site= and state= filters (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const bearer = yield* f.makeUser([])
        const keyA = yield* f.makeKey("site_a", writeScopes, bearer)
        const keyB = yield* f.makeKey("site_b", writeScopes, bearer)
        const a1 = (yield* claimExisting(f, keyA)).work
        const a2 = (yield* mint(f, keyA)).work
        const b1 = (yield* claimExisting(f, keyB)).work
        const a3 = (yield* claimExisting(f, keyA)).work
        const list = (query: string, key = keyA) =>
          Effect.map(f.call("GET", `/v2/claims${query}`, { key }), (res) => {
            expect(res.status, JSON.stringify(res.body)).toBe(200)
            return decodeClaimList(res.body).items
          })
        // The bearer's pending claim for site_b is site_b's until it is live (docs/writing.md, "Who sees
        // what"): the site_a key does not list it.
        const all = yield* list("")
        expect(all.map((c) => c.id)).toEqual([a1, a2, a3].sort((x, y) => Number(x) - Number(y)))
        for (const item of all) {
          expect(item.acted_count).toBe(1)
          expect(item.first_acted_at).not.toBeNull()
          expect(item.last_event).toBeDefined()
        }
        expect(yield* list("?site=site_b")).toEqual([])
        const siteB = yield* list("?site=site_b", keyB)
        expect(siteB.map((c) => c.id)).toEqual([b1])
        expect(siteB[0]!.site).toBe("site_b")
        expect((yield* list("?state=draft")).map((c) => c.id)).toEqual([a2])
        expect((yield* list("?state=pending&site=site_a")).map((c) => c.id)).toEqual([a1, a3])
        expect(yield* list("?state=live")).toEqual([])
        // Paging.
        const first = yield* f.call("GET", "/v2/claims?limit=2", { key: keyA })
        const page1 = decodeClaimList(first.body)
        expect(page1.items.length).toBe(2)
        expect(page1.next_cursor).toBeDefined()
        const second = yield* f.call("GET", `/v2/claims?limit=2&cursor=${encodeURIComponent(page1.next_cursor!)}`, {
          key: keyA
        })
        expect(second.status, JSON.stringify(second.body)).toBe(200)
        expect([...page1.items, ...decodeClaimList(second.body).items].map((c) => c.id)).toEqual(all.map((c) => c.id))
        expectProblem(yield* f.call("GET", "/v2/claims?limit=101", { key: keyA }), "LIMIT_TOO_LARGE")
        expectProblem(
          yield* f.call("GET", `/v2/claims?limit=2&state=draft&cursor=${encodeURIComponent(page1.next_cursor!)}`, {
            key: keyA
          }),
          "INVALID_CURSOR"
        )
      }))

    it.effect("the moderation queue lists pending claims by default, without the bearer's fields (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const site = `queue${Date.now()}`
        const key = yield* f.makeKey(site, writeScopes, yield* f.makeUser([]))
        const pending = (yield* claimExisting(f, key)).work
        const draft = (yield* mint(f, key)).work
        const queue = (query: string) =>
          Effect.map(f.call("GET", `/v2/moderation/claims${query}`, { key: f.moderator.key }), (res) => {
            expect(res.status, JSON.stringify(res.body)).toBe(200)
            return decodeClaimList(res.body).items
          })
        const defaults = yield* queue(`?site=${site}&limit=100`)
        expect(defaults.map((c) => c.id)).toEqual([pending])
        for (const row of defaults) {
          expect(row.state).toBe("pending")
          expect(row.last_event).toBeUndefined()
          expect(row.acted_count).toBeUndefined()
          expect(row.first_acted_at).toBeUndefined()
        }
        const drafts = yield* queue(`?site=${site}&state=draft&limit=100`)
        expect(drafts.map((c) => c.id)).toEqual([draft])
        expect((yield* queue("?limit=100")).map((c) => c.id)).toContain(pending)
        // Admin satisfies moderator.
        const admin = yield* f.call("GET", "/v2/moderation/claims", { key: f.moderator2.key })
        expect(admin.status, JSON.stringify(admin.body)).toBe(200)
      }))

    it.effect("the moderation queue is longest waiting first and pages by cursor (docs/writing.md, \"Claims\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const site = `q${Date.now()}`
        const user = yield* f.makeUser([])
        const key = yield* f.makeKey(site, writeScopes, user)
        const works = [(yield* claimExisting(f, key)).work, (yield* claimExisting(f, key)).work]
        const third = (yield* claimExisting(f, key)).work
        // Touching the first makes it the newest.
        yield* decideOk(f, works[0]!, { decision: "ban" }, key)
        yield* decideOk(f, works[0]!, { decision: "unban" }, key)
        const expected = [works[1]!, third, works[0]!]
        const first = yield* f.call("GET", `/v2/moderation/claims?site=${site}&limit=2`, { key: f.moderator.key })
        const page1 = decodeClaimList(first.body)
        expect(page1.items.map((c) => c.id)).toEqual(expected.slice(0, 2))
        const second = yield* f.call(
          "GET",
          `/v2/moderation/claims?site=${site}&limit=2&cursor=${encodeURIComponent(page1.next_cursor!)}`,
          { key: f.moderator.key }
        )
        expect(second.status, JSON.stringify(second.body)).toBe(200)
        expect(decodeClaimList(second.body).items.map((c) => c.id)).toEqual(expected.slice(2))
      }))

    it.effect("the claim-event log is ascending, with after=, work_id= and cursor paging (docs/writing.md, \"The claim-event log never skips\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* mint(f)
        expectClaim(yield* submit(f, f.siteUser.key, work))
        yield* decideOk(f, work, { decision: "approve" })
        const all = yield* f.call("GET", "/v2/catalog/claim-events?limit=100", { key: f.siteUser.key })
        expect(all.status, JSON.stringify(all.body)).toBe(200)
        const items = decodeEvents(all.body).items
        const ids = items.map((e) => BigInt(e.id))
        for (let i = 1; i < ids.length; i++) expect(ids[i]! > ids[i - 1]!).toBe(true)
        const ofWork = yield* eventsOf(f, work)
        expect(ofWork.map((e) => [e.from_state, e.to_state])).toEqual([[null, "draft"], ["draft", "pending"], [
          "pending",
          "live"
        ]])
        for (const e of ofWork) expect(e).toMatchObject({ work_id: work, site: "site_a", product_work_id: "9001" })
        // after=: only what is above.
        const after = yield* f.call("GET", `/v2/catalog/claim-events?work_id=${work}&after=${ofWork[0]!.id}`, {
          key: f.siteUser.key
        })
        expect(decodeEvents(after.body).items.map((e) => e.id)).toEqual(ofWork.slice(1).map((e) => e.id))
        // Cursor paging, one event a page; the page past the end has no cursor.
        const paged: Array<string> = []
        let cursor: string | undefined
        for (let i = 0; i < 10; i++) {
          const query = cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`
          const page = yield* f.call("GET", `/v2/catalog/claim-events?work_id=${work}&limit=1${query}`, {
            key: f.siteUser.key
          })
          expect(page.status, JSON.stringify(page.body)).toBe(200)
          const decoded = decodeEvents(page.body)
          paged.push(...decoded.items.map((e) => e.id))
          if (decoded.items.length > 0) expect(decoded.next_cursor).toBeDefined()
          if (decoded.next_cursor === undefined) break
          cursor = decoded.next_cursor
        }
        expect(paged).toEqual(ofWork.map((e) => e.id))
        expectProblem(
          yield* f.call("GET", `/v2/catalog/claim-events?after=1&cursor=${encodeURIComponent(cursor!)}`, {
            key: f.siteUser.key
          }),
          "INVALID_CURSOR"
        )
      }))

    // ---------------------------------------------------------------------------------------------
    // Request validation
    // ---------------------------------------------------------------------------------------------

    it.effect("a bad field value, decision or header is refused with the field named (docs/api-contract.md, \"Errors: catalog problem documents\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* claimExisting(f)
        const badValue = yield* create(f, f.siteUser.key, {
          field_values: { "catalog.work.display_name": "X", "catalog.work.length_minutes": -5 }
        })
        const body = expectProblem(badValue, "VALIDATION_FAILED")
        expect(body.errors.map((e: any) => e.pointer)).toEqual(["/field_values/catalog.work.length_minutes"])
        const badDecision = yield* decide(f, work, { decision: "maybe" }, { "if-match": "*" })
        expect(expectProblem(badDecision, "VALIDATION_FAILED").errors[0].pointer).toBe("/decision")
        const badKey = yield* create(f, f.siteUser.key, { work_id: freshWork(f) }, { "idempotency-key": "a b" })
        expect(expectProblem(badKey, "INVALID_PARAMETER").errors[0].header?.toLowerCase()).toBe("idempotency-key")
        const badAfter = yield* f.call("GET", "/v2/catalog/claim-events?after=x", { key: f.siteUser.key })
        expect(expectProblem(badAfter, "INVALID_PARAMETER").errors[0].parameter).toBe("after")
        expect(expectClaim(yield* getClaim(f, f.siteUser.key, work)).state).toBe("pending")
      }))

    // ---------------------------------------------------------------------------------------------
    // Races
    // ---------------------------------------------------------------------------------------------

    it.effect("docs/writing.md: of two sites claiming one work at once, exactly one wins (201, 409 ALREADY_EXISTS)", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const work = freshWork(f)
        const both = yield* Effect.all([
          create(f, f.siteUser.key, { work_id: work }),
          create(f, f.otherSiteUser.key, { work_id: work })
        ], { concurrency: 2 })
        expect(both.map((r) => r.status).sort()).toEqual([201, 409])
        expectProblem(both.find((r) => r.status === 409)!, "ALREADY_EXISTS")
        expect((yield* eventsOf(f, work)).length).toBe(1)
      }))

    // ---------------------------------------------------------------------------------------------
    // The content limit
    // ---------------------------------------------------------------------------------------------

    it.effect("docs/api-contract.md content limit: for an sfw key an nsfw work does not exist: claiming it by work_id is 422 UNKNOWN_REFERENCE", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const [nsfw] = yield* sql<
          { id: string }
        >`SELECT id::text AS id FROM works WHERE live AND nsfw ORDER BY id LIMIT 1`
        expect(nsfw, "the seeded catalog has no nsfw work").toBeDefined()
        const res = yield* create(f, f.siteUser.key, { work_id: nsfw!.id })
        // The same credential cannot read it back.
        expectProblem(yield* getClaim(f, f.siteUser.key, nsfw!.id), "NOT_FOUND")
        expectInvalid(res, "UNKNOWN_REFERENCE", "/work_id")
      }))

    it.effect("docs/api-contract.md content limit: a moderator's sfw key gets 404 for the snapshot of an nsfw work", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const [nsfw] = yield* sql<{ id: string }>`
          SELECT id::text AS id FROM works WHERE live AND nsfw ORDER BY id DESC LIMIT 1`
        expect(nsfw, "the seeded catalog has no nsfw work").toBeDefined()
        expect(yield* workVisible(f, nsfw!.id)).toBe(404)
        expectProblem(
          yield* f.call("GET", `/v2/moderation/snapshots/work/${nsfw!.id}`, { key: f.moderator.key }),
          "NOT_FOUND"
        )
      }))

    // ---------------------------------------------------------------------------------------------
    // Idempotency
    // ---------------------------------------------------------------------------------------------

    it.effect("Idempotency-Key: the same key and body replay the first answer with Idempotent-Replayed: true", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const work = freshWork(f)
        const key = `create-${work}`
        const first = yield* create(f, f.siteUser.key, { work_id: work, site_work_id: "8" }, { "idempotency-key": key })
        expectClaim(first, 201)
        expect(first.headers.get("idempotent-replayed")).toBeNull()
        // Key order does not make another request; the quoted form is the same key.
        const again = yield* create(f, f.siteUser.key, { site_work_id: "8", work_id: work }, {
          "idempotency-key": `"${key}"`
        })
        expect(again.status).toBe(201)
        expect(again.headers.get("idempotent-replayed")).toBe("true")
        expect(again.body).toEqual(first.body)
        expect(decodeClaim(again.body)).toEqual(decodeClaim(first.body))
        expect(again.headers.get("etag")).toBe(first.headers.get("etag"))
        expect(again.headers.get("location")).toBe(first.headers.get("location"))
        // One claim, one event.
        expect((yield* eventsOf(f, work)).length).toBe(1)
      }))

    it.effect("Idempotency-Key: the same key with another body is 409 IDEMPOTENCY_KEY_REUSED; keys are per credential", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const a = freshWork(f)
        const b = freshWork(f)
        const key = `reuse-${a}`
        expectClaim(yield* create(f, f.siteUser.key, { work_id: a }, { "idempotency-key": key }), 201)
        expectProblem(
          yield* create(f, f.siteUser.key, { work_id: b }, { "idempotency-key": key }),
          "IDEMPOTENCY_KEY_REUSED"
        )
        expect(expectClaim(yield* getClaim(f, f.siteUser.key, b)).state).toBe("none")
        // Another credential's key space is its own.
        expectClaim(yield* create(f, f.siteUser2.key, { work_id: b }, { "idempotency-key": key }), 201)
        // Another route (path) with the same key is another request.
        expectProblem(yield* submit(f, f.siteUser.key, a, { "idempotency-key": key }), "IDEMPOTENCY_KEY_REUSED")
      }))

    it.effect("Idempotency-Key: failures are not stored: a 422 then a valid body with the same key succeeds", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const work = freshWork(f)
        const key = `fail-${work}`
        expectInvalid(
          yield* create(f, f.siteUser.key, { work_id: "987654321" }, { "idempotency-key": key }),
          "UNKNOWN_REFERENCE",
          "/work_id"
        )
        const ok = yield* create(f, f.siteUser.key, { work_id: work }, { "idempotency-key": key })
        expectClaim(ok, 201)
        expect(ok.headers.get("idempotent-replayed")).toBeNull()
        // A 409 is not stored either.
        const key2 = `fail2-${work}`
        expectProblem(
          yield* create(f, f.siteUser.key, { work_id: work }, { "idempotency-key": key2 }),
          "ALREADY_EXISTS"
        )
        const other = freshWork(f)
        expectClaim(yield* create(f, f.siteUser.key, { work_id: other }, { "idempotency-key": key2 }), 201)
      }))

    it.effect("Idempotency-Key is checked before If-Match: a retried decision with a now-stale If-Match replays its 201", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* claimExisting(f)
        const etag = yield* etagOf(f, f.siteUser.key, work)
        const headers = { "if-match": etag, "idempotency-key": `decide-${work}` }
        const first = yield* decide(f, work, { decision: "approve" }, headers)
        expect(first.status, JSON.stringify(first.body)).toBe(201)
        const retry = yield* decide(f, work, { decision: "approve" }, headers)
        expect(retry.status, JSON.stringify(retry.body)).toBe(201)
        expect(retry.headers.get("idempotent-replayed")).toBe("true")
        expect(decodeDecision(retry.body)).toEqual(decodeDecision(first.body))
        // Without the key the stale If-Match is refused.
        expectProblem(yield* decide(f, work, { decision: "approve" }, { "if-match": etag }), "PRECONDITION_FAILED")
        expect((yield* eventsOf(f, work)).length).toBe(2)
      }))

    it.effect("Idempotency-Key: a submission is replayed too", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* mint(f)
        const headers = { "idempotency-key": `submit-${work}` }
        const first = yield* submit(f, f.siteUser.key, work, headers)
        expect(expectClaim(first).state).toBe("pending")
        const retry = yield* submit(f, f.siteUser.key, work, headers)
        expect(retry.status).toBe(200)
        expect(retry.headers.get("idempotent-replayed")).toBe("true")
        expect(retry.body).toEqual(first.body)
      }))

    it.effect("Idempotency-Key: while a request with the key runs, another is 409 IDEMPOTENCY_REQUEST_IN_PROGRESS", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const work = freshWork(f)
        const key = `running-${work}`
        const [row] = yield* sql<{ id: string }>`
          SELECT id::text AS id FROM api_keys WHERE key_hash = ${hashKey(f.siteUser.key)}`
        // The runner's lock on (owner, key), held here as if a first request were still running.
        const refused = yield* Effect.gen(function*() {
          yield* sql`
            SELECT pg_advisory_xact_lock(${AdvisoryLockClass.idempotency}::int4,
              hashtext(${idempotencyLockName(`key:${row!.id}`, key)}))`
          return yield* create(f, f.siteUser.key, { work_id: work }, { "idempotency-key": key })
        }).pipe(sql.withTransaction)
        expectProblem(refused, "IDEMPOTENCY_REQUEST_IN_PROGRESS")
        expect(refused.headers.get("retry-after")).toBe("1")
        expectClaim(yield* create(f, f.siteUser.key, { work_id: work }, { "idempotency-key": key }), 201)
      }))

    // ---------------------------------------------------------------------------------------------
    // Who may act (docs/writing.md, "Who may write")
    // ---------------------------------------------------------------------------------------------

    it.effect("no credential is 401 MISSING_CREDENTIAL; an unknown or non-Bearer one 401 INVALID_CREDENTIAL (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const work = freshWork(f)
        expectProblem(yield* f.call("POST", "/v2/claims", { body: { work_id: work } }), "MISSING_CREDENTIAL")
        expectProblem(yield* f.call("GET", "/v2/claims"), "MISSING_CREDENTIAL")
        expectProblem(yield* create(f, "sk_unknown_key", { work_id: work }), "INVALID_CREDENTIAL")
        expectProblem(
          yield* f.call("POST", "/v2/claims", { body: { work_id: work }, headers: { authorization: "Basic eDp5" } }),
          "INVALID_CREDENTIAL"
        )
        expectProblem(
          yield* f.call("GET", "/v2/moderation/claims", { headers: { authorization: "Bearer not-a-token" } }),
          "INVALID_CREDENTIAL"
        )
        expect(expectClaim(yield* getClaim(f, f.siteUser.key, work)).state).toBe("none")
      }))

    it.effect("a read-only key is 403 SCOPE_REQUIRED on every claim route (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* claimExisting(f)
        const key = f.keys.readOnly
        expectProblem(yield* create(f, key, { work_id: freshWork(f) }), "SCOPE_REQUIRED")
        expectProblem(yield* f.call("GET", "/v2/claims", { key }), "SCOPE_REQUIRED")
        expectProblem(yield* getClaim(f, key, work), "SCOPE_REQUIRED")
        expectProblem(yield* submit(f, key, work), "SCOPE_REQUIRED")
        expectProblem(yield* release(f, key, work), "SCOPE_REQUIRED")
        expectProblem(yield* f.call("GET", "/v2/moderation/claims", { key }), "SCOPE_REQUIRED")
        expectProblem(yield* decide(f, work, { decision: "ban" }, { "if-match": "*" }, key), "SCOPE_REQUIRED")
        // A user with claims:write but not moderation.
        const writer = yield* f.makeKey("mod_site", ["catalog:read", "claims:write"], f.moderator.id)
        expectProblem(yield* f.call("GET", "/v2/moderation/claims", { key: writer }), "SCOPE_REQUIRED")
        // The event log needs only catalog:read.
        expect((yield* f.call("GET", "/v2/catalog/claim-events", { key })).status).toBe(200)
      }))

    it.effect("a key without a user is 403 USER_IDENTITY_REQUIRED (docs/writing.md, \"Who may write\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* claimExisting(f)
        expectProblem(yield* create(f, f.keys.noUser, { work_id: freshWork(f) }), "USER_IDENTITY_REQUIRED")
        expectProblem(yield* f.call("GET", "/v2/claims", { key: f.keys.noUser }), "USER_IDENTITY_REQUIRED")
        expectProblem(yield* getClaim(f, f.keys.noUser, work), "USER_IDENTITY_REQUIRED")
        expectProblem(yield* submit(f, f.keys.noUser, work), "USER_IDENTITY_REQUIRED")
        expectProblem(yield* release(f, f.keys.noUser, work), "USER_IDENTITY_REQUIRED")
        expectProblem(
          yield* f.call("GET", "/v2/moderation/claims", { key: f.keys.noUserModeration }),
          "USER_IDENTITY_REQUIRED"
        )
        expectProblem(
          yield* decide(f, work, { decision: "ban" }, { "if-match": "*" }, f.keys.noUserModeration),
          "USER_IDENTITY_REQUIRED"
        )
      }))

    it.effect("a user without the moderator role is 403 PERMISSION_REQUIRED on moderation routes (docs/writing.md, \"Who may write\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const { work } = yield* claimExisting(f)
        expectProblem(yield* f.call("GET", "/v2/moderation/claims", { key: f.siteUser.key }), "PERMISSION_REQUIRED")
        expectProblem(
          yield* decide(f, work, { decision: "approve" }, { "if-match": "*" }, f.siteUser.key),
          "PERMISSION_REQUIRED"
        )
        expectProblem(
          yield* f.call("GET", `/v2/moderation/snapshots/work/${work}`, { key: f.creator.key }),
          "PERMISSION_REQUIRED"
        )
        expect(expectClaim(yield* getClaim(f, f.siteUser.key, work)).state).toBe("pending")
      }))

    it.effect("a banned user is 403 PERMISSION_REQUIRED at once, on every claim route (docs/writing.md, \"Who may write\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const user = yield* f.makeUser(["moderator"])
        const key = yield* f.makeKey("site_a", writeScopes, user)
        const { work } = yield* claimExisting(f, key)
        expect((yield* f.call("GET", "/v2/claims", { key })).status).toBe(200)
        yield* sql`UPDATE users SET banned = true WHERE id = ${user}`
        expectProblem(yield* create(f, key, { work_id: freshWork(f) }), "PERMISSION_REQUIRED")
        expectProblem(yield* f.call("GET", "/v2/claims", { key }), "PERMISSION_REQUIRED")
        expectProblem(yield* getClaim(f, key, work), "PERMISSION_REQUIRED")
        expectProblem(yield* release(f, key, work), "PERMISSION_REQUIRED")
        expectProblem(yield* f.call("GET", "/v2/moderation/claims", { key }), "PERMISSION_REQUIRED")
        yield* sql`UPDATE users SET banned = false WHERE id = ${user}`
        expect(expectClaim(yield* release(f, key, work)).state).toBe("none")
      }))

    it.effect("a role granted or revoked after the key was made applies at once (docs/writing.md, \"Who may write\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const user = yield* f.makeUser([])
        const key = yield* f.makeKey("mod_site", writeScopes, user)
        expectProblem(yield* f.call("GET", "/v2/moderation/claims", { key }), "PERMISSION_REQUIRED")
        yield* sql`UPDATE users SET roles = ARRAY['moderator']::text[] WHERE id = ${user}`
        expect((yield* f.call("GET", "/v2/moderation/claims", { key })).status).toBe(200)
        yield* sql`UPDATE users SET roles = ARRAY[]::text[] WHERE id = ${user}`
        expectProblem(yield* f.call("GET", "/v2/moderation/claims", { key }), "PERMISSION_REQUIRED")
        // The creator role likewise: a claim by the same key goes live once it is granted.
        const creatorKey = yield* f.makeKey("site_a", writeScopes, user)
        yield* sql`UPDATE users SET roles = ARRAY['creator']::text[] WHERE id = ${user}`
        expect((yield* claimExisting(f, creatorKey)).record.state).toBe("live")
      }))

    it.effect("an id of 20 digits above 2^63-1 is a work that does not exist, never a 500 (docs/api-contract.md, \"Records and lists\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const huge = "99999999999999999999"
        const key = f.moderator.key
        expectProblem(yield* f.call("GET", `/v2/claims/${huge}`, { key }), "NOT_FOUND")
        expectProblem(yield* f.call("POST", `/v2/claims/${huge}/submission`, { key }), "NOT_FOUND")
        expectProblem(
          yield* f.call("POST", `/v2/moderation/claims/${huge}/decisions`, {
            key,
            body: { decision: "ban" },
            headers: { "if-match": "*" }
          }),
          "NOT_FOUND"
        )
        expectProblem(yield* f.call("GET", `/v2/moderation/snapshots/work/${huge}`, { key }), "NOT_FOUND")
        const created = yield* f.call("POST", "/v2/claims", { key, body: { work_id: huge } })
        expectProblem(created, "VALIDATION_FAILED")
        expect(created.body.errors[0]).toMatchObject({ reason: "UNKNOWN_REFERENCE", pointer: "/work_id" })
        const events = yield* f.call("GET", `/v2/catalog/claim-events?work_id=${huge}`, { key })
        expect(events.status).toBe(200)
        expect(events.body.items).toEqual([])
      }))
  })
})
