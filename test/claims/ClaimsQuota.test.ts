/**
 * Daily site write quotas (docs/writing.md, "Limits"): a refused write uses none, a replay uses none,
 * each site and kind counts on its own; the `media` quota counts bytes of upload bodies (docs/writing.md,
 * "Editor images"), also when uploads race. Its own file: the servers run with tiny quotas.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import sharp from "sharp"
import { ClaimDecisionRecord, ClaimRecord } from "../../schema/Catalog/Claim.js"
import { ProblemCodes } from "../../schema/Problem.js"
import { ClaimsFixture, ClaimsFixtureLive, type ClaimsFixtureShape } from "../support/Claims.js"
import { upload } from "../support/Media.js"
import { serverLayerOptions } from "../support/TestServers.js"

type Reply = Effect.Success<ReturnType<ClaimsFixtureShape["call"]>>

const expectQuotaExceeded = (res: Reply) => {
  expect(res.status, JSON.stringify(res.body)).toBe(429)
  expect(res.headers.get("content-type")).toBe("application/problem+json")
  expect(res.body).toMatchObject({ code: "QUOTA_EXCEEDED", status: 429, title: ProblemCodes.QUOTA_EXCEEDED.title })
  expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0)
}

const expectClaim = (res: Reply, status = 200) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  return Schema.decodeUnknownSync(ClaimRecord)(res.body)
}

/** About 30 kB of PNG each: noise does not compress, so two fit in `MEDIA_QUOTA` and three do not. */
const MEDIA_QUOTA = 70_000
const noisePng = () =>
  Effect.promise(() =>
    sharp(Crypto.randomBytes(100 * 100 * 3), { raw: { width: 100, height: 100, channels: 3 } }).png().toBuffer()
      .then((b) => new Uint8Array(b))
  )

describe("claims: daily site quotas (docs/writing.md, \"Limits\")", () => {
  it.layer(
    ClaimsFixtureLive({
      works: 10,
      config: {
        CATALOG_QUOTA_CLAIMS: "2",
        CATALOG_QUOTA_DECISIONS: "1",
        CATALOG_QUOTA_MEDIA_BYTES: String(MEDIA_QUOTA)
      }
    }),
    serverLayerOptions()
  )((it) => {
    it.effect("429 QUOTA_EXCEEDED once a site's creations, submissions or decisions are spent; refusals and replays use none", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const [a, c] = [f.works[0]!, f.works[1]!]
        const createA = () =>
          f.call("POST", "/v2/claims", {
            key: f.siteUser.key,
            body: { work_id: a },
            headers: { "idempotency-key": "q-a" }
          })
        const state = (key: string, work: string) =>
          Effect.map(f.call("GET", `/v2/claims/${work}`, { key }), (res) => expectClaim(res).state)
        expectClaim(yield* createA(), 201)
        const minted = expectClaim(
          yield* f.call("POST", "/v2/claims", {
            key: f.siteUser.key,
            body: { site_work_id: "1", display_name: "Quota" }
          }),
          201
        )
        expectQuotaExceeded(yield* f.call("POST", "/v2/claims", { key: f.siteUser.key, body: { work_id: c } }))
        expect(yield* state(f.siteUser.key, c)).toBe("none")
        expectQuotaExceeded(yield* f.call("POST", `/v2/claims/${minted.id}/submission`, { key: f.siteUser2.key }))
        expect(yield* state(f.siteUser.key, minted.id)).toBe("draft")
        // A replay is not a new write.
        const replay = yield* createA()
        expect(replay.status).toBe(201)
        expect(replay.headers.get("idempotent-replayed")).toBe("true")
        // Another site has its own quota.
        expectClaim(yield* f.call("POST", "/v2/claims", { key: f.otherSiteUser.key, body: { work_id: c } }), 201)
        // Decisions count against the moderator's site.
        const decide = (work: string) =>
          f.call("POST", `/v2/moderation/claims/${work}/decisions`, {
            key: f.moderator.key,
            body: { decision: "approve" },
            headers: { "if-match": "*" }
          })
        const approved = yield* decide(a)
        expect(approved.status, JSON.stringify(approved.body)).toBe(201)
        Schema.decodeUnknownSync(ClaimDecisionRecord)(approved.body)
        expectQuotaExceeded(yield* decide(c))
        expect(yield* state(f.otherSiteUser.key, c)).toBe("pending")
      }))

    it.effect("the media quota counts upload bytes: an upload past it is 429 before it is decoded, and of two racing uploads only the one that fits is kept", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const uploadsRecorded = Effect.map(
          sql<{ n: number }>`SELECT count(*)::int AS n FROM images WHERE source = 'upload'`.pipe(Effect.orDie),
          (rows) => rows[0]!.n
        )
        const [one, two, three] = [yield* noisePng(), yield* noisePng(), yield* noisePng()]
        for (const bytes of [one, two, three]) expect(bytes.length).toBeGreaterThan(MEDIA_QUOTA / 3)
        expect(one.length + two.length).toBeLessThanOrEqual(MEDIA_QUOTA)
        const keyA = yield* f.makeKey("site_a", ["catalog:read", "media:write"], f.siteUser.id)
        expect((yield* upload(f, keyA, one, "image/png")).status).toBe(201)
        expect((yield* upload(f, keyA, two, "image/png")).status).toBe(201)
        const refused = yield* upload(f, keyA, three, "image/png")
        expectQuotaExceeded(refused)
        expect(refused.body).toMatchObject({ quota: "media", limit: MEDIA_QUOTA })
        expect(refused.headers.get("ratelimit-policy")).toMatch(new RegExp(`^"media";q=${MEDIA_QUOTA};w=86400,`))
        expect(yield* uploadsRecorded).toBe(2)

        // Another site has its own bytes; of two uploads at once that each pass the early look, the
        // count at commit keeps one.
        const keyB = yield* f.makeKey("site_b", ["catalog:read", "media:write"], f.otherSiteUser.id)
        expect((yield* upload(f, keyB, one, "image/png")).status).toBe(200)
        const [four, five] = [yield* noisePng(), yield* noisePng()]
        const racing = yield* Effect.all([upload(f, keyB, four, "image/png"), upload(f, keyB, five, "image/png")], {
          concurrency: 2
        })
        expect(racing.map((res) => res.status).sort()).toEqual([201, 429])
        expect(yield* uploadsRecorded).toBe(3)
      }))
  })
})
