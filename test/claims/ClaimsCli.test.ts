/**
 * The claim operator commands (`claims list`, `claim decide`; README "Writing to the catalog"), run
 * as a user would run them (`dist/src/cli/main.js`; `npm test` builds first) against the test
 * servers' database: the queue as the moderation route shows it, decisions as the operator (no
 * `If-Match`, `actor_uid` "0") that running servers learn of, and failures as a message on stderr
 * with exit code 1. Starting the CLI costs a second or two, so independent commands run side by side.
 */
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { ClaimsFixture, ClaimsFixtureLive } from "../support/Claims.js"
import { runCli } from "../support/Cli.js"
import { eventually } from "../support/Eventually.js"
import { serverLayerOptions } from "../support/TestServers.js"

const cli = (args: ReadonlyArray<string>) =>
  Effect.flatMap(DatabaseUrl, (url) => Effect.promise(() => runCli(args, { DATABASE_URL: Redacted.value(url) })))

const cliJson = (args: ReadonlyArray<string>) =>
  Effect.map(cli([...args, "--json"]), (result) => {
    expect(result.code, result.stderr).toBe(0)
    return JSON.parse(result.stdout) as any
  })

/** A failure: exit code 1 and one `error: ...` line on stderr, nothing on stdout. */
const expectFailure = (result: { code: number; stdout: string; stderr: string }, message: RegExp) => {
  expect(result.code, result.stdout).toBe(1)
  expect(result.stdout).toBe("")
  expect(result.stderr).toMatch(/^error: /m)
  expect(result.stderr).toMatch(message)
}

describe("claims CLI: claims list, claim decide", () => {
  layer(ClaimsFixtureLive(), serverLayerOptions("180 seconds"))((it) => {
    it.effect("claims list shows the queue; claim decide approves, declines, bans and unbans as the operator", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const [w0, w1, w2, w3, unclaimed] = f.works
        const create = (key: string, body: unknown) =>
          Effect.map(f.call("POST", "/v2/claims", { key, body }), (res) => {
            expect(res.status, JSON.stringify(res.body)).toBe(201)
            expect(res.body.state).toBe("pending")
            return res
          })
        yield* create(f.siteUser.key, { work_id: w0, site_work_id: "100" })
        yield* create(f.siteUser2.key, { work_id: w1 })
        yield* create(f.otherSiteUser.key, { work_id: w2, site_work_id: "300" })
        yield* create(f.siteUser.key, { work_id: w3 })

        // The queue as the moderation route has it (the same records, in the same order).
        const route = yield* f.call("GET", "/v2/moderation/claims?limit=100", { key: f.moderator.key })
        expect(route.status, JSON.stringify(route.body)).toBe(200)
        const [pending, human, ofSiteB, live, badState, badSite] = yield* Effect.all([
          cliJson(["claims", "list"]),
          cli(["claims", "list"]),
          cliJson(["claims", "list", "--site", "site_b"]),
          cliJson(["claims", "list", "--state", "live"]),
          cli(["claims", "list", "--state", "approved"]),
          cli(["claims", "list", "--site", "Not A Site"])
        ], { concurrency: "unbounded" })
        expect(Object.keys(pending)).toEqual(["items"])
        expect(pending.items).toEqual(route.body.items)
        expect(pending.items.map((c: any) => c.id)).toEqual([w0, w1, w2, w3])
        expect(pending.items[0]).toMatchObject({
          object: "claim",
          id: w0,
          state: "pending",
          site: "site_a",
          product_work_id: "100"
        })
        expect(typeof pending.items[0].display_name).toBe("string")
        expect(human.code, human.stderr).toBe(0)
        const lines = human.stdout.trim().split("\n")
        expect(lines).toHaveLength(5)
        const line0 = lines.find((l) => l.trim().startsWith(`${w0} `))!
        expect(line0).toBeDefined()
        for (const part of [w0, "pending", "site_a", "100", pending.items[0].display_name]) {
          expect(line0).toContain(part)
        }
        expect(ofSiteB.items.map((c: any) => c.id)).toEqual([w2])
        expect(live.items).toEqual([])
        // A state that does not exist is a usage error (exit 2, from the argument parser).
        expect(badState.code).toBe(2)
        expectFailure(badSite, /not a site name/)

        // Decisions: approve, decline (note required), ban and unban.
        const [approved, declined, noNote] = yield* Effect.all([
          cliJson(["claim", "decide", w0!, "--decision", "approve"]),
          cliJson(["claim", "decide", w1!, "--decision", "decline", "--note", "Not your work."]),
          cli(["claim", "decide", w2!, "--decision", "decline"])
        ], { concurrency: "unbounded" })
        expect(approved).toMatchObject({
          object: "decision",
          decision: "approve",
          note: "",
          from_state: "pending",
          to_state: "live"
        })
        expect(approved.id).toMatch(/^[0-9]+$/)
        expect(declined).toMatchObject({
          decision: "decline",
          note: "Not your work.",
          from_state: "pending",
          to_state: "declined"
        })
        expectFailure(noNote, /note/i)

        // The events carry the operator (user 0) as the actor.
        const events = yield* f.call("GET", `/v2/catalog/claim-events?work_id=${w0}`, { key: f.siteUser.key })
        expect(events.status).toBe(200)
        expect(events.body.items.map((e: any) => [e.from_state, e.to_state, e.actor_uid])).toEqual([
          [null, "pending", String(f.siteUser.id)],
          ["pending", "live", "0"]
        ])
        expect(events.body.items[1].id).toBe(approved.id)
        const declineEvent = yield* f.call("GET", `/v2/catalog/claim-events?work_id=${w1}`, { key: f.siteUser.key })
        expect(declineEvent.body.items[1]).toMatchObject({
          to_state: "declined",
          reason: "Not your work.",
          actor_uid: "0"
        })

        // Running servers learn of it (the claims tables notify): the claim is live for its bearer,
        // and the works list filtered by site now has the work.
        yield* eventually(Effect.gen(function*() {
          const claim = yield* f.call("GET", `/v2/claims/${w0}`, { key: f.siteUser.key })
          expect(claim.body.state).toBe("live")
          const listed = yield* f.call("GET", "/v2/catalog/works?site=site_a", { key: f.siteUser.key })
          expect(listed.body.items.map((w: any) => w.id)).toEqual([w0])
        }))

        // The human output names the change.
        const banned = yield* cli(["claim", "decide", w0!, "--decision", "ban", "--note", "Spam."])
        expect(banned.code, banned.stderr).toBe(0)
        expect(banned.stdout).toMatch(new RegExp(`Banned the claim on work ${w0}: live -> hidden`))
        const [unbanned, hidden] = yield* Effect.all([
          cliJson(["claim", "decide", w0!, "--decision", "unban"]),
          // Banning is allowed from any claimed state, declined included.
          cliJson(["claim", "decide", w1!, "--decision", "ban"])
        ], { concurrency: "unbounded" })
        expect(unbanned).toMatchObject({ decision: "unban", from_state: "hidden", to_state: "live" })
        expect(hidden).toMatchObject({ decision: "ban", from_state: "declined", to_state: "hidden" })

        // Refusals: exit 1, a message on stderr, nothing changed.
        const [again, none, notAnId, tooBig, badDecision, missingDecision] = yield* Effect.all([
          cli(["claim", "decide", w0!, "--decision", "approve"]),
          cli(["claim", "decide", unclaimed!, "--decision", "approve"]),
          cli(["claim", "decide", "abc", "--decision", "approve"]),
          cli(["claim", "decide", "99999999999999999999", "--decision", "approve"]),
          cli(["claim", "decide", w3!, "--decision", "accept"]),
          cli(["claim", "decide", w3!])
        ], { concurrency: "unbounded" })
        expectFailure(again, /`live` cannot be decided `approve`.*Nothing changed/)
        expectFailure(none, new RegExp(`no claim on work ${unclaimed}`))
        expectFailure(notAnId, /not a work id: abc/)
        expectFailure(tooBig, /not a work id/)
        expect(badDecision.code).toBe(2)
        expect(missingDecision.code).toBe(2)
        const after = yield* cliJson(["claims", "list"])
        expect(after.items.map((c: any) => c.id)).toEqual([w2, w3])
        const liveNow = yield* cliJson(["claims", "list", "--state", "live", "--site", "site_a"])
        expect(liveNow.items.map((c: any) => [c.id, c.state])).toEqual([[w0, "live"]])
      }))
  })
})
