/**
 * A claim's whole life through real HTTP (the state machine of docs/writing.md, "Claims").
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ClaimsFixture, ClaimsFixtureLive } from "../support/Claims.js"
import { serverLayerOptions } from "../support/TestServers.js"

describe("claims lifecycle (docs/writing.md, \"Claims\")", () => {
  it.layer(ClaimsFixtureLive(), serverLayerOptions())((it) => {
    it.effect("create -> approve -> events", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const work = f.works[0]!
        const created = yield* f.call("POST", "/v2/claims", {
          key: f.siteUser.key,
          body: { work_id: work, site_work_id: "77" },
          headers: { "idempotency-key": "k1" }
        })
        expect(created.status, JSON.stringify(created.body)).toBe(201)
        expect(created.body.state).toBe("pending")
        const etag = created.headers.get("etag")!
        // The face a write answers is the one a read gives (the write builds it without reading).
        const read = yield* f.call("GET", `/v2/claims/${work}`, { key: f.siteUser.key })
        expect(read.body).toEqual(created.body)
        expect(read.headers.get("etag")).toBe(etag)
        const decided = yield* f.call("POST", `/v2/moderation/claims/${work}/decisions`, {
          key: f.moderator.key,
          body: { decision: "approve" },
          headers: { "if-match": etag }
        })
        expect(decided.status, JSON.stringify(decided.body)).toBe(201)
        expect(decided.body.to_state).toBe("live")
        const events = yield* f.call("GET", "/v2/catalog/claim-events", { key: f.siteUser.key })
        expect(events.status, JSON.stringify(events.body)).toBe(200)
        expect(events.body.items.map((e: any) => e.to_state)).toEqual(["pending", "live"])
        const listed = yield* f.call("GET", "/v2/catalog/works?site=site_a", { key: f.siteUser.key })
        expect(listed.body.items.map((w: any) => w.id)).toEqual([work])
        const replay = yield* f.call("POST", "/v2/claims", {
          key: f.siteUser.key,
          body: { work_id: work, site_work_id: "77" },
          headers: { "idempotency-key": "k1" }
        })
        expect(replay.status).toBe(201)
        expect(replay.headers.get("idempotent-replayed")).toBe("true")
        // And after a change by another actor: the bearer's count stays, the newest event is the decision.
        const after = yield* f.call("GET", `/v2/claims/${work}`, { key: f.siteUser.key })
        const released = yield* f.call("DELETE", `/v2/claims/${work}`, {
          key: f.siteUser.key,
          headers: { "if-match": after.headers.get("etag")! }
        })
        expect(released.status).toBe(200)
        const reread = yield* f.call("GET", `/v2/claims/${work}`, { key: f.siteUser.key })
        expect(reread.body).toEqual(released.body)
        expect(reread.body.acted_count).toBe(2)
      }))
  })
})
