/**
 * A proposal's life through real HTTP (docs/writing.md, "Edit proposals"): proposed, amended, merged
 * by a moderator into a revision whose FieldDiffs hold the values before and after, and readable
 * through the entity's revisions.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ClaimsFixture, ClaimsFixtureLive } from "../support/Claims.js"
import { proposalKeys } from "../support/Proposals.js"
import { serverLayerOptions } from "../support/TestServers.js"

describe("proposal lifecycle (docs/writing.md, \"Edit proposals\")", () => {
  it.layer(ClaimsFixtureLive({ works: 20 }), serverLayerOptions())((it) => {
    it.effect("propose, amend, merge: the work reads the effective patch and the revision its diff", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const keys = yield* proposalKeys(f)
        const key = keys.site
        const mod = keys.moderator
        const work = f.works[0]!
        const before = yield* f.call("GET", `/v2/moderation/snapshots/work/${work}`, { key: mod })
        expect(before.status, JSON.stringify(before.body)).toBe(200)
        const created = yield* f.call("POST", "/v2/proposals", {
          key,
          body: {
            entity_type: "catalog.work",
            entity_id: work,
            patch: { "catalog.work.display_name": "Renamed once", "catalog.work.length_minutes": 42 },
            note: "fix"
          }
        })
        expect(created.status, JSON.stringify(created.body)).toBe(201)
        const etag = created.headers.get("etag")!
        const amended = yield* f.call("POST", `/v2/proposals/${created.body.id}/amendments`, {
          key,
          headers: { "if-match": etag },
          body: { set: { "catalog.work.display_name": "Renamed twice" }, unset: ["catalog.work.length_minutes"] }
        })
        expect(amended.status, JSON.stringify(amended.body)).toBe(201)
        expect(amended.body.seq).toBe(1)
        const merged = yield* f.call("POST", `/v2/moderation/proposals/${created.body.id}/decisions`, {
          key: mod,
          headers: { "if-match": amended.headers.get("etag")! },
          body: { decision: "merge" }
        })
        expect(merged.status, JSON.stringify(merged.body)).toBe(200)
        expect(merged.body.state).toBe("merged")
        const revision = yield* f.call("GET", `/v2/revisions/${merged.body.revision_id}`, { key: mod })
        expect(revision.status, JSON.stringify(revision.body)).toBe(200)
        expect(revision.body.diff).toEqual([{
          key: "catalog.work.display_name",
          from: before.body["catalog.work.display_name"],
          to: "Renamed twice"
        }])
        const read = yield* f.call("GET", `/v2/catalog/works/${work}`, { key: mod })
        expect(read.body.display_name).toBe("Renamed twice")
        const listed = yield* f.call("GET", `/v2/catalog/works/${work}/revisions`, { key: mod })
        expect(listed.status, JSON.stringify(listed.body)).toBe(200)
        expect(listed.body.items.map((r: any) => r.id)).toEqual([merged.body.revision_id])
        const fields = yield* f.call("GET", "/v2/catalog/fields", { key: mod })
        expect(fields.status, JSON.stringify(fields.body).slice(0, 500)).toBe(200)
        const snapshot = yield* f.call("GET", `/v2/moderation/snapshots/work/${work}`, { key: mod })
        expect(Object.keys(snapshot.body).sort()).toEqual(
          fields.body.items.filter((i: any) => i.entity_type === "catalog.work").map((i: any) => i.key).sort()
        )
      }))
  })
})
