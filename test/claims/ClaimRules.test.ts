/**
 * Claim rules through real HTTP (docs/writing.md, "Claims"): a decline is lifted by a moderator only,
 * a credential without a site owns nothing, a moderator's content limit hides nsfw claims from it,
 * an upstream ref belongs to a served work only, and a claim's ETag and Location name the work by
 * its canonical id.
 */
import { afterAll, describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import {
  ClaimsFixture,
  ClaimsFixtureLive,
  type ClaimsFixtureShape,
  startJwksRelay,
  writeScopes
} from "../support/Claims.js"
import { serverLayerOptions } from "../support/TestServers.js"

const relay = await startJwksRelay()
afterAll(() => relay.close())

type Reply = Effect.Success<ReturnType<ClaimsFixtureShape["call"]>>

const expectCode = (res: Reply, status: number, code: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  expect(res.headers.get("content-type")).toBe("application/problem+json")
  expect(res.body.code).toBe(code)
  return res.body
}

const expectOk = (res: Reply, status = 200) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  return res.body
}

let names = 0
const uniqueName = (label: string) => `Rules ${label} ${++names} ${Date.now()}`

const mint = (f: ClaimsFixtureShape, key: string, extra: Record<string, unknown> = {}) =>
  Effect.map(
    f.call("POST", "/v2/claims", { key, body: { display_name: uniqueName("draft"), site_work_id: "77", ...extra } }),
    (res) => {
      const body = expectOk(res, 201)
      expect(body.state).toBe("draft")
      return body.id as string
    }
  )

const submit = (f: ClaimsFixtureShape, key: string, work: string) =>
  f.call("POST", `/v2/claims/${work}/submission`, { key })

const release = (f: ClaimsFixtureShape, key: string, work: string) => f.call("DELETE", `/v2/claims/${work}`, { key })

const decide = (f: ClaimsFixtureShape, key: string, work: string, body: unknown, ifMatch = "*") =>
  f.call("POST", `/v2/moderation/claims/${work}/decisions`, { key, body, headers: { "if-match": ifMatch } })

const workStatus = (f: ClaimsFixtureShape, work: string) =>
  Effect.map(f.call("GET", `/v2/catalog/works/${work}`, { key: f.siteUser.key }), (res) => res.status)

const workRefs = (f: ClaimsFixtureShape, work: string) =>
  Effect.map(f.call("GET", `/v2/catalog/works/${work}?include=refs`, { key: f.siteUser.key }), (res) => {
    expect(res.status, JSON.stringify(res.body)).toBe(200)
    return (res.body.refs as Array<{ source: string; external_id: string }>).map((r) => `${r.source}:${r.external_id}`)
  })

/** The refs a work's claim keeps (migrations/0022). */
const claimRefs = (work: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const rows = yield* sql<{ ref: string }>`
      SELECT source || ':' || external_id AS ref FROM claim_refs WHERE work_id = ${work}::bigint ORDER BY 1`
    return rows.map((r) => r.ref)
  }).pipe(Effect.orDie)

let refs = 0
const uniqueRef = () => ({ source: "vndb", external_id: `v${Date.now()}${++refs}` })

describe("claim rules (docs/writing.md, \"Claims\")", () => {
  it.layer(ClaimsFixtureLive({ config: { IDENTITY_JWKS_URL: relay.url } }), serverLayerOptions())((it) => {
    // ---------------------------------------------------------------------------------------------
    // Moderation means what it says
    // ---------------------------------------------------------------------------------------------

    it.effect("docs/writing.md, States: a declined claim resubmitted by a creator is pending, not live", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const work = yield* mint(f, f.siteUser.key)
        expect(expectOk(yield* submit(f, f.siteUser.key, work)).state).toBe("pending")
        expect(expectOk(yield* decide(f, f.moderator.key, work, { decision: "decline", note: "No." }), 201).to_state)
          .toBe("declined")
        const resubmitted = expectOk(yield* submit(f, f.creator.key, work))
        expect(resubmitted.state).toBe("pending")
        expect(yield* workStatus(f, work)).toBe(404)
        // A creator's own draft still skips moderation.
        const own = yield* mint(f, f.creator.key)
        expect(expectOk(yield* submit(f, f.creator.key, own)).state).toBe("live")
      }))

    it.effect("docs/writing.md, Who sees what: a credential without a site owns nothing: withdrawn works' claims are 404", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const token = yield* relay.accessToken({
          userId: yield* f.makeUser([]),
          scope: "openid catalog:read claims:write"
        })
        const draft = yield* mint(f, f.siteUser.key)
        const released = yield* mint(f, f.siteUser.key)
        expectOk(yield* release(f, f.siteUser.key, released))
        // A work that was never claimed, withdrawn: its unclaimed row's site is "" too.
        const withdrawn = f.works[f.works.length - 1]!
        yield* sql`UPDATE works SET withdrawn = true WHERE id = ${withdrawn}::bigint`
        for (const work of [draft, released, withdrawn]) {
          expectCode(yield* f.call("GET", `/v2/claims/${work}`, { key: token }), 404, "NOT_FOUND")
          const events = expectOk(yield* f.call("GET", `/v2/catalog/claim-events?work_id=${work}`, { key: token }))
          expect(events.items).toEqual([])
        }
        // The claiming site still reads its draft; a served work reads as unclaimed to anyone.
        expectOk(yield* f.call("GET", `/v2/claims/${draft}`, { key: f.siteUser.key }))
        expect(expectOk(yield* f.call("GET", `/v2/claims/${f.works[0]!}`, { key: token })).state).toBe("none")
      }))

    it.effect("docs/api-contract.md content limit: an sfw moderator's decision on an nsfw work is 404 before If-Match", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const [nsfw] = yield* sql<{ id: string }>`
          SELECT w.id::text AS id FROM works w WHERE w.live AND w.nsfw
            AND NOT EXISTS (SELECT 1 FROM claims c WHERE c.work_id = w.id)
          ORDER BY w.id LIMIT 1`
        expect(nsfw, "the seeded catalog has no nsfw work").toBeDefined()
        const work = nsfw!.id
        const siteNsfw = yield* f.makeKeyWithLimit("site_a", writeScopes, f.siteUser.id, "nsfw")
        const created = yield* f.call("POST", "/v2/claims", { key: siteNsfw, body: { work_id: work } })
        expect(expectOk(created, 201).state).toBe("pending")
        const etag = created.headers.get("etag")!
        for (const ifMatch of ["*", etag, "\"claim-0-0\""]) {
          const refused = yield* decide(f, f.moderator.key, work, { decision: "approve" }, ifMatch)
          const body = expectCode(refused, 404, "NOT_FOUND")
          expect(refused.headers.get("etag")).toBeNull()
          expect(JSON.stringify(body)).not.toContain("claim-")
        }
        // Nor does the sfw moderator see it in the queue or the log, or its snapshot.
        const queue = expectOk(
          yield* f.call("GET", "/v2/moderation/claims?site=site_a&limit=100", {
            key: f.moderator.key
          })
        )
        expect(queue.items.map((c: any) => c.id)).not.toContain(work)
        const log = expectOk(yield* f.call("GET", `/v2/catalog/claim-events?work_id=${work}`, { key: f.moderator.key }))
        expect(log.items).toEqual([])
        expectCode(
          yield* f.call("GET", `/v2/moderation/snapshots/work/${work}`, { key: f.moderator.key }),
          404,
          "NOT_FOUND"
        )
        // The claim did not move; an nsfw moderator decides it.
        const read = yield* f.call("GET", `/v2/claims/${work}`, { key: siteNsfw })
        expect(expectOk(read).state).toBe("pending")
        expect(read.headers.get("etag")).toBe(etag)
        const nsfwModerator = yield* f.makeKeyWithLimit("mod_site", writeScopes, f.moderator.id, "nsfw")
        expect(expectOk(yield* decide(f, nsfwModerator, work, { decision: "approve" }, etag), 201).to_state).toBe(
          "live"
        )
      }))

    // ---------------------------------------------------------------------------------------------
    // An upstream ref cannot be squatted
    // ---------------------------------------------------------------------------------------------

    it.effect("docs/writing.md, Refs: a draft reserves no ref; a released draft gives it up; the approved work takes it", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const ref = uniqueRef()
        const a = yield* mint(f, f.siteUser.key, { refs: [ref] })
        expect(yield* claimRefs(a)).toEqual([`${ref.source}:${ref.external_id}`])
        // Site B claiming with the same ref mints its own draft rather than losing the ref.
        const b = yield* mint(f, f.otherSiteUser.key, { refs: [ref] })
        expect(b).not.toBe(a)
        expect(yield* claimRefs(b)).toEqual([`${ref.source}:${ref.external_id}`])
        expectOk(yield* release(f, f.siteUser.key, a))
        expect(yield* claimRefs(a)).toEqual([])
        expectOk(yield* submit(f, f.otherSiteUser.key, b))
        expect(expectOk(yield* decide(f, f.moderator.key, b, { decision: "approve" }), 201).to_state).toBe("live")
        expect(yield* claimRefs(b)).toEqual([])
        expect(yield* workRefs(f, b)).toContain(`${ref.source}:${ref.external_id}`)
        // Now the ref names B's work: a third site's refs claim it (pending, on an existing work).
        const c = yield* f.call("POST", "/v2/claims", {
          key: yield* f.makeKey("site_c", writeScopes, yield* f.makeUser([])),
          body: { refs: [ref] }
        })
        expect(expectCode(c, 409, "ALREADY_EXISTS").detail).toContain(b)
      }))

    it.effect("docs/writing.md, Refs: of two drafts with one ref the first approved takes it; the second is 409 ALREADY_EXISTS", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const ref = uniqueRef()
        const named = `${ref.source}:${ref.external_id}`
        const first = yield* mint(f, f.siteUser.key, { refs: [ref] })
        const second = yield* mint(f, f.otherSiteUser.key, { refs: [ref, uniqueRef()] })
        const creatorDraft = yield* mint(f, f.creator.key, { refs: [ref] })
        expectOk(yield* submit(f, f.siteUser.key, first))
        expectOk(yield* submit(f, f.otherSiteUser.key, second))
        expectOk(yield* decide(f, f.moderator.key, first, { decision: "approve" }), 201)
        expect(yield* workRefs(f, first)).toEqual([named])
        const refused = yield* decide(f, f.moderator.key, second, { decision: "approve" })
        const problem = expectCode(refused, 409, "ALREADY_EXISTS")
        expect(problem.detail).toBe(`ref ${named} belongs to work ${first}; release this draft or claim that work.`)
        // Nothing changed: still pending, not served, its refs still its claim's.
        expect(expectOk(yield* f.call("GET", `/v2/claims/${second}`, { key: f.otherSiteUser.key })).state).toBe(
          "pending"
        )
        expect(yield* workStatus(f, second)).toBe(404)
        expect((yield* claimRefs(second)).length).toBe(2)
        // A creator's submission goes live the same way, and is refused the same way.
        const creatorRefused = yield* submit(f, f.creator.key, creatorDraft)
        expect(expectCode(creatorRefused, 409, "ALREADY_EXISTS").detail).toContain(`belongs to work ${first}`)
        expect(expectOk(yield* f.call("GET", `/v2/claims/${creatorDraft}`, { key: f.creator.key })).state).toBe(
          "draft"
        )
        // Once the ref is a served work's, the same refs claim that work instead of minting.
        const claimed = yield* f.call("POST", "/v2/claims", { key: f.creator.key, body: { refs: [ref] } })
        expect(expectCode(claimed, 409, "ALREADY_EXISTS").detail).toContain(first)
      }))

    // ---------------------------------------------------------------------------------------------
    // ETags from the canonical id
    // ---------------------------------------------------------------------------------------------

    it.effect("RFC 9110 8.8.3: /v2/claims/002 and /v2/claims/2 are one resource with one ETag", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const work = yield* mint(f, f.siteUser.key)
        const padded = `00${work}`
        const plain = yield* f.call("GET", `/v2/claims/${work}`, { key: f.siteUser.key })
        const zeros = yield* f.call("GET", `/v2/claims/${padded}`, { key: f.siteUser.key })
        expectOk(plain)
        expect(expectOk(zeros).id).toBe(work)
        expect(zeros.headers.get("etag")).toBe(plain.headers.get("etag"))
        expect(plain.headers.get("etag")).toContain(`claim-${work}-`)
        const submitted = yield* f.call("POST", `/v2/claims/${padded}/submission`, {
          key: f.siteUser.key,
          headers: { "if-match": plain.headers.get("etag")! }
        })
        expect(expectOk(submitted).id).toBe(work)
        const after = yield* f.call("GET", `/v2/claims/${work}`, { key: f.siteUser.key })
        expect(submitted.headers.get("etag")).toBe(after.headers.get("etag"))
        const decided = yield* decide(f, f.moderator.key, padded, { decision: "approve" }, after.headers.get("etag")!)
        expectOk(decided, 201)
      }))
  })
})
