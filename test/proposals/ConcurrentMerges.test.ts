/**
 * Merges that race (docs/writing.md, "Edit proposals"): a merge locks the proposal, then the entity,
 * so merges on one entity run one after the other and none conflicts with another; each revision's
 * FieldDiffs hold what the entity held just before that merge and what it holds after. Amendments
 * that race on one proposal with the same `If-Match` (docs/writing.md, "Conditional writes"): one
 * wins, the others are 412.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { ClaimsFixture, ClaimsFixtureLive } from "../support/Claims.js"
import { amend, decide, expectStatus, proposalKeys, propose } from "../support/Proposals.js"
import { serverLayerOptions } from "../support/TestServers.js"

const BURST = 20
const KEYS = ["catalog.work.display_name", "catalog.work.length_minutes", "catalog.work.titles"] as const

/** The patch of proposal `i`: values no other proposal of the burst has, and none the seed has. */
const patchOf = (i: number) => ({
  "catalog.work.display_name": `Concurrent merge ${i}`,
  "catalog.work.length_minutes": 10_000 + i,
  "catalog.work.titles": [
    { lang: "ja", value: `並行マージ ${i}`, latin: `Heikou maaji ${i}`, is_main: true, is_official: true },
    { lang: "en", value: `Concurrent merge ${i}`, latin: null, is_main: false, is_official: i % 2 === 0 }
  ]
})

describe("concurrent merges and amendments (docs/writing.md, \"Edit proposals\")", () => {
  it.layer(ClaimsFixtureLive({ works: 20 }), serverLayerOptions())((it) => {
    it.effect(
      `${BURST} proposals on one work merged at once: all merge, one after another, and the diffs chain`,
      () =>
        Effect.gen(function*() {
          const f = yield* ClaimsFixture
          const keys = yield* proposalKeys(f)
          const work = f.works[1]!
          const snapshotPath = `/v2/moderation/snapshots/work/${work}`
          const before = expectStatus(yield* f.call("GET", snapshotPath, { key: keys.moderator }), 200)

          const proposals = yield* Effect.forEach(Array.from({ length: BURST }, (_, i) => i), (i) =>
            Effect.map(
              propose(f, keys.site, { entity_type: "catalog.work", entity_id: work, patch: patchOf(i) }),
              (res) => {
                expectStatus(res, 201)
                return { id: res.body.id as string, etag: res.headers.get("etag")! }
              }
            ), { concurrency: 4 })

          // Every merge at once, by two moderators, each with its proposal's ETag.
          const merges = yield* Effect.forEach(proposals, (p, i) =>
            decide(f, i % 2 === 0 ? keys.moderator : keys.moderator2, p.id, p.etag, { decision: "merge" }), {
            concurrency: "unbounded"
          })
          merges.forEach((res, i) => {
            expect(res.status, `merge ${i}: ${JSON.stringify(res.body)}`).toBe(200)
            expect(res.body.state).toBe("merged")
          })

          const listed = expectStatus(
            yield* f.call("GET", `/v2/catalog/works/${work}/revisions?limit=100`, { key: keys.moderator }),
            200
          )
          // Oldest first: the order the merges ran in (each took the entity's lock in turn).
          const revisions = [...listed.items].sort((a: any, b: any) =>
            Number(a.id) - Number(b.id)
          )
          expect(revisions).toHaveLength(BURST)
          expect(revisions.map((r: any) => r.proposal_id).sort()).toEqual(proposals.map((p) => p.id).sort())
          expect(new Set(merges.map((m) => m.body.revision_id))).toEqual(new Set(revisions.map((r: any) => r.id)))

          for (const key of KEYS) {
            let previous: unknown = before[key]
            revisions.forEach((revision: any, n: number) => {
              const diffs = revision.diff.filter((d: any) => d.key === key)
              // Every proposal's values differ from every other's: each merge changed every key.
              expect(diffs, `revision ${n} (${revision.id}) diff of ${key}`).toHaveLength(1)
              expect(diffs[0].from, `revision ${n} (${revision.id}): ${key} from = the previous to`).toEqual(previous)
              previous = diffs[0].to
            })
          }

          // The work holds the last revision's `to` of every key, as the snapshot and its read show.
          const last = revisions[revisions.length - 1]
          const lastTo = Object.fromEntries(last.diff.map((d: any) => [d.key, d.to]))
          const lastProposal = proposals.findIndex((p) => p.id === last.proposal_id)
          const after = expectStatus(yield* f.call("GET", snapshotPath, { key: keys.moderator }), 200)
          for (const key of KEYS) expect(after[key], key).toEqual(lastTo[key])
          const read = expectStatus(
            yield* f.call("GET", `/v2/catalog/works/${work}?include=titles`, { key: keys.moderator }),
            200
          )
          const expected = patchOf(lastProposal)
          expect(read.display_name).toBe(expected["catalog.work.display_name"])
          expect(read.length_minutes).toBe(expected["catalog.work.length_minutes"])
          expect(read.titles).toEqual(expected["catalog.work.titles"])
          expect(lastTo["catalog.work.display_name"]).toBe(expected["catalog.work.display_name"])
        }),
      120_000
    )

    it.effect(
      `${BURST} amendments of one proposal with the same ETag: exactly one wins, the rest are 412`,
      () =>
        Effect.gen(function*() {
          const f = yield* ClaimsFixture
          const keys = yield* proposalKeys(f)
          const created = yield* propose(f, keys.site, {
            entity_type: "catalog.work",
            entity_id: f.works[2]!,
            patch: { "catalog.work.display_name": "Amended at once" }
          })
          expectStatus(created, 201)
          const etag = created.headers.get("etag")!
          const answers = yield* Effect.forEach(
            Array.from({ length: BURST }, (_, i) => i),
            (i) =>
              amend(f, keys.site, created.body.id, etag, {
                set: { "catalog.work.length_minutes": 100 + i },
                note: `amendment ${i}`
              }),
            { concurrency: "unbounded" }
          )
          const won = answers.flatMap((res, i) => (res.status === 201 ? [i] : []))
          expect(won, JSON.stringify(answers.map((a) => a.status))).toHaveLength(1)
          for (const res of answers) {
            if (res.status === 201) continue
            expect(res.status, JSON.stringify(res.body)).toBe(412)
            expect(res.body.code).toBe("PRECONDITION_FAILED")
          }
          const winner = answers[won[0]!]!
          expect(winner.body.seq).toBe(1)
          const proposal = yield* f.call("GET", `/v2/proposals/${created.body.id}`, { key: keys.site })
          expect(proposal.status).toBe(200)
          expect(proposal.headers.get("etag")).toBe(winner.headers.get("etag"))
          expect(proposal.body.amendment_count).toBe(1)
          expect(proposal.body.effective_patch).toEqual({
            "catalog.work.display_name": "Amended at once",
            "catalog.work.length_minutes": 100 + won[0]!
          })
          const listed = expectStatus(
            yield* f.call("GET", `/v2/proposals/${created.body.id}/amendments`, { key: keys.site }),
            200
          )
          expect(listed.items.map((a: any) => a.note)).toEqual([`amendment ${won[0]}`])
        }),
      60_000
    )
  })
})
