/**
 * Every write route of the catalog (every endpoint of `CatalogApi` whose method is not GET or HEAD)
 * gets `PROPERTY_RUNS` bodies generated from its own request schema, hostile mutations of them and
 * garbage bytes (test/properties/Generate.ts), with a credential that passes its gates so the body
 * is decoded. Whatever comes in, the answer is never a 5xx, and every refusal is a problem document
 * of the closed registry (docs/api-contract.md, "Errors: catalog problem documents"): served as
 * `application/problem+json`, its `code` in `ProblemCodes` with that code's status, every
 * `errors[].reason` in `Reasons`. A route without an entry in the set-up table below fails.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import sharp from "sharp"
import { CatalogApi } from "../../schema/Api/CatalogApi.js"
import { fieldOf } from "../../schema/Catalog/Fields.js"
import { FieldError, type ProblemCode, ProblemCodes } from "../../schema/Problem.js"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape } from "../support/Claims.js"
import { serverLayerOptions } from "../support/TestServers.js"
import {
  type Answer,
  describeFailure,
  MIN_REACHED,
  PROPERTY_RUNS,
  type RouteSetup,
  runRoute,
  summarize,
  type Verdict,
  writeRoutes
} from "./Generate.js"

const routes = writeRoutes(CatalogApi)

const bearer = (key: string) => ({ authorization: `Bearer ${key}` })

/** A claim `siteUser2` made and submitted on a work it minted: pending, for the moderation routes. */
const pendingClaim = (f: ClaimsFixtureShape, n: number) =>
  Effect.gen(function*() {
    const created = yield* f.call("POST", "/v2/claims", {
      key: f.siteUser2.key,
      body: { site_work_id: String(900_000 + n), display_name: `Property test work ${n}` }
    })
    if (created.status !== 201) return yield* Effect.die(new Error(`set-up claim: ${created.status}`))
    yield* f.call("POST", `/v2/claims/${created.body.id}/submission`, { key: f.siteUser2.key })
    return created.body.id as string
  })

/**
 * What each write route needs so its body is decoded and meets the code behind the schema: a
 * credential that passes its rule (docs/writing.md, "Who may write"), works that exist, and bodies
 * the route accepts. A new write route gets an entry here.
 */
const setups: Record<
  string,
  (f: ClaimsFixtureShape) => Effect.Effect<RouteSetup | ReadonlyArray<RouteSetup>, never, SqlClient.SqlClient>
> = {
  "claims.createClaim": (f) =>
    Effect.gen(function*() {
      // A live work's fields in the minting shape (docs/writing.md, "Snapshots").
      const snapshot = yield* f.call("GET", `/v2/moderation/snapshots/work/${f.works[0]}`, { key: f.moderator.key })
      return {
        headers: bearer(f.siteUser.key),
        fields: f.works.map((work_id) => ({ work_id })),
        valid: [
          { work_id: f.works[1] },
          { site_work_id: "4242", display_name: "A minted work" },
          { refs: [{ source: "vndb", external_id: "v424242" }], display_name: "A work minted from its reference" },
          ...(snapshot.status === 200 ? [{ field_values: snapshot.body }] : [])
        ]
      }
    }),
  "claims.submitClaim": (f) =>
    Effect.succeed({ headers: bearer(f.siteUser.key), params: f.works.map((work_id) => ({ work_id })) }),
  "claims.releaseClaim": (f) =>
    Effect.succeed({ headers: bearer(f.siteUser.key), params: f.works.map((work_id) => ({ work_id })) }),
  "proposals.createProposal": (f) =>
    Effect.gen(function*() {
      const key = yield* proposerKey(f)
      const moderator = yield* moderatorKey(f)
      return {
        headers: bearer(key),
        fields: f.works.map((entity_id) => ({ entity_type: "catalog.work", entity_id })),
        valid: [
          { entity_type: "catalog.work", entity_id: f.works[1], patch: yield* workPatch(f, moderator, f.works[1]!) },
          { entity_type: "catalog.work", entity_id: f.works[2], patch: { "catalog.work.display_name": "A new name" } }
        ]
      }
    }),
  "proposals.amendProposal": (f) =>
    Effect.gen(function*() {
      const key = yield* proposerKey(f)
      const moderator = yield* moderatorKey(f)
      const open = yield* openProposals(f, key, 5)
      return {
        // `If-Match` is required: `*` lets an amendment through to its checks.
        headers: { ...bearer(key), "if-match": "*" },
        params: open.map(({ id }) => ({ id })),
        valid: [
          { set: yield* workPatch(f, moderator, f.works[0]!) },
          { unset: ["catalog.work.length_minutes"], note: "Not this." }
        ]
      }
    }),
  "proposals.withdrawProposal": (f) =>
    Effect.gen(function*() {
      const key = yield* proposerKey(f)
      const open = yield* openProposals(f, key, 5)
      return { headers: bearer(key), params: open.map(({ id }) => ({ id })) }
    }),
  "proposalModeration.decideProposal": (f) =>
    Effect.gen(function*() {
      const key = yield* proposerKey(f)
      const open = yield* openProposals(f, key, 5)
      const common = {
        params: open.map(({ id }) => ({ id })),
        valid: [{ decision: "merge" }, { decision: "decline", note: "Not a change we keep." }]
      }
      return [
        { ...common, headers: { ...bearer(yield* moderatorKey(f)), "if-match": "*" } },
        { ...common, headers: { ...bearer(yield* moderatorKey(f)), "if-match": "\"0\"" } }
      ]
    }),
  "coverVotes.putCoverVote": (f) =>
    Effect.gen(function*() {
      const params = yield* coverParams(f)
      return { headers: bearer(yield* voterKey(f)), params, valid: [{ vote: "up" }] }
    }),
  "coverVotes.deleteCoverVote": (f) =>
    Effect.gen(function*() {
      const params = yield* coverParams(f)
      return { headers: bearer(yield* voterKey(f)), params }
    }),
  // docs/writing.md, "Playtimes": works that exist, so a batch reaches the upsert and the aggregates.
  "playtimes.batchPlaytimes": (f) =>
    Effect.gen(function*() {
      const scopes = ["catalog:read", "playtimes:write"] as const
      const valid = [
        { items: [{ work_id: f.works[0], minutes: 90 }, { work_id: f.works[1], minutes: 0 }] },
        { items: f.works.slice(0, 100).map((work_id, i) => ({ work_id, minutes: (i * 611) % 60_001 })) },
        { items: [] }
      ]
      return [
        { headers: bearer(yield* f.makeKey("site_a", scopes, f.siteUser.id)), valid },
        { headers: bearer(yield* f.makeKeyWithLimit("site_a", scopes, f.siteUser2.id, "nsfw")), valid }
      ]
    }),
  "moderation.decideClaim": (f) =>
    Effect.gen(function*() {
      const pending = yield* Effect.forEach([1, 2, 3, 4, 5], (n) => pendingClaim(f, n))
      const common = {
        params: [...pending, ...f.works.slice(0, 5)].map((work_id) => ({ work_id })),
        valid: [
          { decision: "approve" },
          { decision: "decline", note: "Not a visual novel." },
          { decision: "ban", note: "Spam." },
          { decision: "unban" }
        ]
      }
      // `If-Match` is required (docs/writing.md, "Conditional writes"): `*` lets a decision through to
      // the state machine, a stale tag stops it at 412.
      return [
        { ...common, headers: { ...bearer(f.moderator.key), "if-match": "*" } },
        { ...common, headers: { ...bearer(f.moderator.key), "if-match": "\"0\"" } }
      ]
    }),
  // Editor images (docs/writing.md, "Editor images"): raw image bodies of each declared type; a valid one
  // is a real image, whose flipped, cut or extended bytes then meet the image pipeline.
  "mediaWrite.uploadImage": (f) =>
    Effect.gen(function*() {
      const image = (format: "png" | "jpeg" | "webp" | "gif") =>
        Effect.promise(() =>
          sharp({ create: { width: 24, height: 16, channels: 3, background: { r: 9, g: 99, b: 199 } } })
            .toFormat(format)
            .toBuffer()
            .then((b) => new Uint8Array(b))
        )
      return {
        headers: bearer(yield* f.makeKey("site_a", ["catalog:read", "media:write"], f.siteUser.id)),
        query: ["?preset=cover", "?preset=screenshot", "?preset=poster", ""],
        valid: [yield* image("png"), yield* image("jpeg"), yield* image("webp"), yield* image("gif")]
      }
    }),
  // News (docs/writing.md, "News"): site_a's bot, under a source bound to site_a.
  "newsWrite.createNews": (f) =>
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* sql`INSERT INTO news_sources (source, site) VALUES ('property_news', 'site_a')`.pipe(Effect.orDie)
      return {
        headers: bearer(yield* f.makeKey("site_a", ["catalog:read", "news:write"], null)),
        fields: [{ source: "property_news" }],
        valid: [
          {
            source: "property_news",
            title: "新作",
            summary: "あ".repeat(200),
            source_url: "https://news.example.test/p/1"
          },
          {
            source: "property_news",
            title: "Column",
            summary: "s",
            source_url: "https://news.example.test/p/2",
            lane: "column",
            published_at: "2025-06-01T18:30:00+09:00",
            banner_hash: "ab".repeat(32),
            work_ids: f.works.slice(0, 3)
          }
        ]
      }
    })
}

/** A key of `site_a`'s user with the vote scopes (docs/writing.md, "Cover votes"). */
const voterKey = (f: ClaimsFixtureShape) => f.makeKey("site_a", ["catalog:read", "votes:write"], f.siteUser.id)

/** The fixture's works' covers as path parameters of the vote routes, read through `include=covers`. */
const coverParams = (f: ClaimsFixtureShape) =>
  Effect.gen(function*() {
    const params: Array<{ id: string; cover_id: string }> = []
    for (const work of f.works.slice(0, 10)) {
      const res = yield* f.call("GET", `/v2/catalog/works/${work}?include=covers`, { key: f.siteUser.key })
      if (res.status !== 200) return yield* Effect.die(new Error(`set-up read: ${res.status}`))
      for (const cover of res.body.covers ?? []) params.push({ id: work, cover_id: cover.id })
    }
    return params
  })

/** A key of `site_a`'s user with the proposal scopes (docs/writing.md, "Edit proposals"). */
const proposerKey = (f: ClaimsFixtureShape) => f.makeKey("site_a", ["catalog:read", "catalog:write"], f.siteUser.id)
const moderatorKey = (f: ClaimsFixtureShape) =>
  f.makeKey("mod_site", ["catalog:read", "catalog:write", "moderation"], f.moderator.id)

/** Open proposals of `site_a` on the fixture's works, with their ETags. */
const openProposals = (f: ClaimsFixtureShape, key: string, n: number) =>
  Effect.forEach(f.works.slice(0, n), (work, i) =>
    Effect.gen(function*() {
      const created = yield* f.call("POST", "/v2/proposals", {
        key,
        body: { entity_type: "catalog.work", entity_id: work, patch: { "catalog.work.length_minutes": 100 + i } }
      })
      if (created.status !== 201) return yield* Effect.die(new Error(`set-up proposal: ${created.status}`))
      return { id: created.body.id as string, etag: created.headers.get("etag")! }
    }))

/** A live work's current values, as a patch (every writable key). */
const workPatch = (f: ClaimsFixtureShape, key: string, work: string) =>
  Effect.map(f.call("GET", `/v2/moderation/snapshots/work/${work}`, { key }), (res) =>
    Object.fromEntries(
      Object.entries(res.body as Record<string, unknown>).filter(([k]) => fieldOf(k)?.writable === true)
    ))

/** Answers that stopped before the body mattered: the credential, or a rate limit. */
const GATES = new Set<number>([401, 429])

const isProblemCode = (code: unknown): code is ProblemCode =>
  typeof code === "string" && Object.prototype.hasOwnProperty.call(ProblemCodes, code)
const isFieldError = Schema.is(FieldError)

/** Never a 5xx; a refusal is a problem document of the registry. */
const judge = (_: unknown, answer: Answer): Verdict => {
  const reached = !GATES.has(answer.status)
  const fail = (violation: string): Verdict => ({ violation, reached })
  if (answer.status === 0) return fail("no answer")
  if (answer.status >= 500) return fail("server error")
  if (answer.status < 400) return { violation: undefined, reached }
  if (answer.contentType !== "application/problem+json") return fail(`content type ${answer.contentType}`)
  let body: any
  try {
    body = JSON.parse(answer.text)
  } catch {
    return fail("problem body is not JSON")
  }
  const code: unknown = body?.code
  if (!isProblemCode(code)) return fail(`code ${JSON.stringify(code)} outside ProblemCodes`)
  if (ProblemCodes[code].status !== answer.status) return fail(`${code} answered with another status`)
  if (!Array.isArray(body.errors)) return fail("errors is not an array")
  const bad = body.errors.find((e: unknown) => !isFieldError(e))
  if (bad !== undefined) return fail(`field error outside Reasons: ${JSON.stringify(bad?.reason)}`)
  return { violation: undefined, reached }
}

describe("catalog write routes take generated and hostile bodies (docs/api-contract.md, \"Errors: catalog problem documents\")", () => {
  it("finds the catalog's write routes, each with a set-up", () => {
    expect(routes.length).toBeGreaterThanOrEqual(4)
    const missing = routes.filter((r) => setups[r.key] === undefined).map((r) => `${r.method} ${r.path} (${r.key})`)
    expect(missing, `write routes missing from the set-up table of ${import.meta.filename}`).toEqual([])
  })

  it.layer(
    ClaimsFixtureLive({
      works: 20,
      // Generated writes must not spend the day's quotas: a 429 would then answer everything after it.
      config: {
        CATALOG_QUOTA_CLAIMS: "100000000",
        CATALOG_QUOTA_DECISIONS: "100000000",
        CATALOG_QUOTA_PROPOSALS: "100000000",
        CATALOG_QUOTA_NEWS: "100000000"
      }
    }),
    serverLayerOptions("300 seconds")
  )((it) => {
    for (const route of routes) {
      it.effect(
        `${route.method} ${route.path} (${route.key}): ${PROPERTY_RUNS} bodies, never a 5xx, refusals from the registry`,
        () =>
          Effect.gen(function*() {
            const make = setups[route.key]
            if (make === undefined) {
              return yield* Effect.die(
                new Error(`${route.key} has no entry in the set-up table of test/properties/CatalogWrites.test.ts`)
              )
            }
            const fixture = yield* ClaimsFixture
            const result = yield* runRoute(fixture.base, route, yield* make(fixture), judge)
            console.log(summarize(result))
            expect(result.failures.map(describeFailure).join("\n\n"), "failures").toBe("")
            expect(result.reached / result.total, `share of answers past the gates: ${summarize(result)}`)
              .toBeGreaterThanOrEqual(MIN_REACHED)
          }),
        Math.max(120_000, PROPERTY_RUNS * 200)
      )
    }
  })
})
