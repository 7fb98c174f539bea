/**
 * Claims under concurrency, through real HTTP (docs/writing.md; schema/Api/ClaimsApi.ts):
 *
 * - one Idempotency-Key sent by 50 requests at once yields one write: one 201 that is not a replay,
 *   the others replays of it or 409 `IDEMPOTENCY_REQUEST_IN_PROGRESS` with `Retry-After`;
 * - two moderators deciding one pending claim with the same `If-Match`: exactly one wins;
 * - a creation on a claimed work racing a decision on it: the decision wins, the creation is 409;
 * - the claim event log read by two mirrors (one `after=<id>`, one `next_cursor`) while four writers
 *   create, submit, decide and release claims: each mirror ends with every event id exactly once,
 *   strictly ascending (the log never skips: ids become visible in ascending order).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import Pg from "pg"
import { ApiKeys } from "../../src/catalog/auth/ApiKeys.js"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { ClaimsFixture, ClaimsFixtureLive, writeScopes } from "../support/Claims.js"
import { eventually } from "../support/Eventually.js"
import { sleepReal } from "../support/Problems.js"
import { serverLayerOptions } from "../support/TestServers.js"

// The mirrors poll in a loop: the test servers lift the request budget (`testConfig`), and a mirror
// still waits out a 429 like a real client would.
const Env = ClaimsFixtureLive({ works: 150 })

// Works of the seeded catalog, split between the tests (they share one database).
const IDEMPOTENT_WORK = 0
const DECIDED_WORKS = [1, 2, 3, 4, 5]
const MIRROR_WORKS_FROM = 6

const WRITERS = 4
const PER_WRITER = 25
const PAGE = 7
// Every fifth claim of a writer mints its work; the others claim existing works.
const MINT_EVERY = 5
const WRITER_WORKS = WRITERS * (PER_WRITER - Math.ceil(PER_WRITER / MINT_EVERY))
const RACED_WORK = MIRROR_WORKS_FROM + WRITER_WORKS

describe("claims under concurrency (docs/writing.md, \"The write runner\", \"The claim-event log never skips\")", () => {
  it.layer(Env, serverLayerOptions())((it) => {
    it.effect(
      "50 concurrent creations with one Idempotency-Key make one claim; the rest replay it or are told it is in progress (docs/writing.md, \"The write runner\")",
      () =>
        Effect.gen(function*() {
          const f = yield* ClaimsFixture
          const sql = yield* SqlClient.SqlClient
          const work = f.works[IDEMPOTENT_WORK]!
          const body = { work_id: work, site_work_id: "4242" }
          const send = () =>
            f.call("POST", "/v2/claims", { key: f.siteUser.key, body, headers: { "idempotency-key": "burst-1" } })

          const answers = yield* Effect.all(Array.from({ length: 50 }, send), { concurrency: "unbounded" })

          const fresh = answers.filter((a) => a.status === 201 && a.headers.get("idempotent-replayed") === null)
          const replays = answers.filter((a) => a.status === 201 && a.headers.get("idempotent-replayed") !== null)
          const inProgress = answers.filter((a) => a.status === 409)
          const other = answers.filter((a) => a.status !== 201 && a.status !== 409)
          console.log(
            `50 concurrent, one key: fresh=${fresh.length} replayed=${replays.length} in_progress=${inProgress.length}`
          )
          expect(other.map((a) => [a.status, a.body])).toEqual([])
          expect(fresh).toHaveLength(1)
          expect(replays.length + inProgress.length).toBe(49)
          const first = fresh[0]!
          expect(first.body.state).toBe("pending")
          expect(first.body.id).toBe(work)
          for (const replay of replays) {
            expect(replay.headers.get("idempotent-replayed")).toBe("true")
            expect(replay.body).toEqual(first.body)
            expect(replay.headers.get("etag")).toBe(first.headers.get("etag"))
            expect(replay.headers.get("location")).toBe(first.headers.get("location"))
          }
          for (const busy of inProgress) {
            expect(busy.body.code, JSON.stringify(busy.body)).toBe("IDEMPOTENCY_REQUEST_IN_PROGRESS")
            expect(busy.headers.get("retry-after")).toMatch(/^[1-9][0-9]*$/)
            expect(busy.headers.get("idempotent-replayed")).toBeNull()
          }

          // The database: one claim, one creating event, one stored answer.
          const claims = yield* sql<
            { n: number }
          >`SELECT count(*)::int AS n FROM claims WHERE work_id = ${work}::bigint`
          const events = yield* sql<{ id: string; from_state: string | null; to_state: string }>`
            SELECT id::text AS id, from_state, to_state FROM claim_events WHERE work_id = ${work}::bigint`
          const stored = yield* sql<{ n: number }>`
            SELECT count(*)::int AS n FROM catalog_idempotency WHERE key = 'burst-1'`
          expect(claims[0]!.n).toBe(1)
          expect(events).toEqual([{ id: expect.any(String), from_state: null, to_state: "pending" }])
          expect(stored[0]!.n).toBe(1)

          // The API: one event for the work, and the claim's own face counts one action.
          const log = yield* f.call("GET", `/v2/catalog/claim-events?work_id=${work}`, { key: f.siteUser.key })
          expect(log.status, JSON.stringify(log.body)).toBe(200)
          expect(log.body.items.map((e: any) => [e.id, e.from_state, e.to_state])).toEqual([
            [events[0]!.id, null, "pending"]
          ])
          const face = yield* f.call("GET", `/v2/claims/${work}`, { key: f.siteUser.key })
          expect(face.status).toBe(200)
          expect(face.body.acted_count).toBe(1)
          expect(face.body.last_event.id).toBe(events[0]!.id)

          // A later retry with the same key replays the same answer.
          const retry = yield* send()
          expect(retry.status).toBe(201)
          expect(retry.headers.get("idempotent-replayed")).toBe("true")
          expect(retry.body).toEqual(first.body)
        })
    )

    it.effect(
      "two moderators deciding one pending claim with the same If-Match: exactly one decision wins (docs/writing.md, \"Conditional writes\")",
      () =>
        Effect.gen(function*() {
          const f = yield* ClaimsFixture
          const sql = yield* SqlClient.SqlClient
          const losers: Record<string, number> = {}
          for (const [round, index] of DECIDED_WORKS.entries()) {
            const work = f.works[index]!
            const created = yield* f.call("POST", "/v2/claims", {
              key: f.siteUser.key,
              body: { work_id: work },
              headers: { "idempotency-key": `decide-create-${work}` }
            })
            expect(created.status, JSON.stringify(created.body)).toBe(201)
            const etag = created.headers.get("etag")!
            // Approve against approve on some rounds, approve against decline on others.
            const second = round % 2 === 0
              ? { decision: "approve" }
              : { decision: "decline", note: "Not this site's work." }
            const [a, b] = yield* Effect.all([
              f.call("POST", `/v2/moderation/claims/${work}/decisions`, {
                key: f.moderator.key,
                body: { decision: "approve" },
                headers: { "if-match": etag, "idempotency-key": `decide-a-${work}` }
              }),
              f.call("POST", `/v2/moderation/claims/${work}/decisions`, {
                key: f.moderator2.key,
                body: second,
                headers: { "if-match": etag, "idempotency-key": `decide-b-${work}` }
              })
            ], { concurrency: "unbounded" })
            const answers = [a, b]
            const won = answers.filter((x) => x.status === 201)
            const lost = answers.filter((x) => x.status !== 201)
            expect(won, JSON.stringify(answers.map((x) => [x.status, x.body]))).toHaveLength(1)
            expect(lost).toHaveLength(1)
            const loser = lost[0]!
            expect([412, 409], JSON.stringify(loser.body)).toContain(loser.status)
            expect(loser.body.code).toBe(loser.status === 412 ? "PRECONDITION_FAILED" : "INVALID_STATE_TRANSITION")
            losers[loser.body.code] = (losers[loser.body.code] ?? 0) + 1

            const winner = won[0]!.body
            const decisions = yield* sql<{ id: string; decision: string; to_state: string }>`
              SELECT id::text AS id, decision, to_state FROM claim_events
              WHERE work_id = ${work}::bigint AND decision IS NOT NULL`
            expect(decisions).toEqual([{ id: winner.id, decision: winner.decision, to_state: winner.to_state }])
            const [claim] = yield* sql<{ state: string; last_event_id: string }>`
              SELECT state, last_event_id::text AS last_event_id FROM claims WHERE work_id = ${work}::bigint`
            expect(claim).toEqual({ state: winner.to_state, last_event_id: winner.id })
          }
          console.log(`two moderators, ${DECIDED_WORKS.length} claims: losers ${JSON.stringify(losers)}`)
        })
    )

    it.effect(
      "a creation on a claimed work racing a decision on it: the decision wins and the creation is 409 ALREADY_EXISTS (no deadlock, no 500) (docs/writing.md, \"Claims\")",
      () =>
        Effect.gen(function*() {
          const f = yield* ClaimsFixture
          const url = yield* DatabaseUrl
          expect(f.works.length, "seeded works").toBeGreaterThan(RACED_WORK)
          const work = f.works[RACED_WORK]!
          const created = yield* f.call("POST", "/v2/claims", {
            key: f.siteUser.key,
            body: { work_id: work },
            headers: { "idempotency-key": `raced-${work}` }
          })
          expect(created.status, JSON.stringify(created.body)).toBe(201)
          const etag = created.headers.get("etag")!

          // The interleaving, made deterministic by holding the claim's row lock in a transaction of
          // our own: the decision locks the row first (it queues behind us), the creation then
          // takes whatever it takes before it meets the row (it queues behind the decision), and our
          // commit lets both go in that order.
          const holder = yield* Effect.acquireRelease(
            Effect.promise(async () => {
              const client = new Pg.Client({ connectionString: Redacted.value(url) })
              client.on("error", () => {})
              await client.connect()
              await client.query("BEGIN")
              await client.query("SELECT 1 FROM claims WHERE work_id = $1::bigint FOR UPDATE", [work])
              return client
            }),
            (client) => Effect.promise(() => client.end().catch(() => {}))
          )
          const waiting = (pattern: string, count = 1) =>
            eventually(
              Effect.promise(async () => {
                const probe = new Pg.Client({ connectionString: Redacted.value(url) })
                await probe.connect()
                try {
                  const { rows } = await probe.query(
                    `SELECT count(*)::int AS n FROM pg_stat_activity
                     WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE $1`,
                    [pattern]
                  )
                  expect(rows[0].n, `requests waiting in ${pattern}`).toBe(count)
                } finally {
                  await probe.end()
                }
              }),
              { timeoutMs: 10_000, intervalMs: 20 }
            )

          const decision = yield* Effect.forkChild(f.call("POST", `/v2/moderation/claims/${work}/decisions`, {
            key: f.moderator.key,
            body: { decision: "approve" },
            headers: { "if-match": etag, "idempotency-key": `raced-decide-${work}` }
          }))
          yield* waiting("%FOR UPDATE OF c%")
          const creation = yield* Effect.forkChild(f.call("POST", "/v2/claims", {
            key: f.otherSiteUser.key,
            body: { work_id: work },
            headers: { "idempotency-key": `raced-other-${work}` }
          }))
          // Both now wait for the claim row, the creation behind the decision (row lock before event lock).
          yield* waiting("%FOR UPDATE OF c%", 2)
          yield* Effect.promise(() => holder.query("COMMIT"))

          const decided = yield* Fiber.join(decision)
          const refused = yield* Fiber.join(creation)
          console.log(`raced creation vs decision: decision ${decided.status}, creation ${refused.status}`)
          expect(decided.status, `decision: ${JSON.stringify(decided.body)}`).toBe(201)
          expect(decided.body.to_state).toBe("live")
          expect(refused.status, `creation: ${JSON.stringify(refused.body)}`).toBe(409)
          expect(refused.body.code).toBe("ALREADY_EXISTS")
        }).pipe(Effect.scoped)
    )

    it.effect(
      "mirrors of the claim event log (after=<id> and next_cursor) under 4 concurrent writers see every event exactly once, ascending (docs/writing.md, \"The claim-event log never skips\")",
      () =>
        Effect.gen(function*() {
          const f = yield* ClaimsFixture
          const sql = yield* SqlClient.SqlClient
          const apiKeys = yield* ApiKeys
          const existing = f.works.slice(MIRROR_WORKS_FROM, MIRROR_WORKS_FROM + WRITER_WORKS)
          expect(existing.length, "seeded works for the writers").toBe(WRITER_WORKS)
          // Each mirror reads with its own nsfw key of a moderator: the whole log (docs/writing.md, "Who
          // sees what"), and a request budget of its own.
          const mirrorKey = () =>
            Effect.map(
              apiKeys.create({
                site: "mirror",
                scopes: ["catalog:read"],
                contentLimit: "nsfw",
                userId: f.moderator.id
              }),
              ({ key }) => Redacted.value(key)
            ).pipe(Effect.orDie)

          let writing = true
          const stats = { created: 0, minted: 0, submitted: 0, decided: 0, released: 0 }

          const expectStatus = (answer: { status: number; body: any }, status: number, what: string) =>
            expect(answer.status, `${what}: ${JSON.stringify(answer.body)}`).toBe(status)

          const writer = (w: number) =>
            Effect.gen(function*() {
              const uid = yield* f.makeUser([])
              const key = yield* f.makeKey(`writer_${w}`, writeScopes, uid)
              const moderator = w % 2 === 0 ? f.moderator : f.moderator2
              let claimed = 0
              for (let j = 0; j < PER_WRITER; j++) {
                const mint = j % MINT_EVERY === 0
                const created = yield* f.call("POST", "/v2/claims", {
                  key,
                  body: mint
                    ? { site_work_id: String(9000 + w * 100 + j), display_name: `Mirror work ${w}-${j}` }
                    : { work_id: existing[w + WRITERS * claimed++]! },
                  headers: { "idempotency-key": `mirror-create-${w}-${j}` }
                })
                expectStatus(created, 201, "create")
                stats.created++
                const work: string = created.body.id
                let etag = created.headers.get("etag")!
                if (mint) {
                  stats.minted++
                  expect(created.body.state).toBe("draft")
                  const submitted = yield* f.call("POST", `/v2/claims/${work}/submission`, {
                    key,
                    headers: { "if-match": etag, "idempotency-key": `mirror-submit-${w}-${j}` }
                  })
                  expectStatus(submitted, 200, "submit")
                  stats.submitted++
                  etag = submitted.headers.get("etag")!
                }
                const decline = j % 5 === 1
                const decided = yield* f.call("POST", `/v2/moderation/claims/${work}/decisions`, {
                  key: moderator.key,
                  body: decline ? { decision: "decline", note: "Wrong work." } : { decision: "approve" },
                  headers: { "if-match": etag, "idempotency-key": `mirror-decide-${w}-${j}` }
                })
                expectStatus(decided, 201, "decide")
                stats.decided++
                if (j % 5 === 2) {
                  const released = yield* f.call("DELETE", `/v2/claims/${work}`, { key })
                  expectStatus(released, 200, "release")
                  stats.released++
                }
              }
            })

          interface Mirror {
            readonly ids: Array<string>
            readonly events: Array<readonly [string, string, string | null, string]>
            polls: number
            pages: number
            /** Polls refused by the request budget (429), retried after `Retry-After` like a real client. */
            limited: number
          }
          /**
           * A mirror: polls from the start of the log with the query `next` builds from what it has, until
           * a poll that began after the writers stopped comes back empty.
           */
          const mirror = (next: (m: Mirror, cursor: string | undefined) => string) =>
            Effect.gen(function*() {
              const key = yield* mirrorKey()
              const m: Mirror = { ids: [], events: [], polls: 0, pages: 0, limited: 0 }
              let cursor: string | undefined
              for (;;) {
                const finished = !writing
                const r = yield* f.call("GET", `/v2/catalog/claim-events?limit=${PAGE}${next(m, cursor)}`, { key })
                m.polls++
                if (r.status === 429) {
                  m.limited++
                  yield* sleepReal(Number(r.headers.get("retry-after") ?? "1") * 1000)
                  continue
                }
                expect(r.status, JSON.stringify(r.body)).toBe(200)
                const body = r.body as { items: Array<any>; next_cursor?: string }
                for (const e of body.items) {
                  m.ids.push(e.id)
                  m.events.push([e.id, e.work_id, e.from_state, e.to_state])
                }
                if (body.items.length > 0) {
                  m.pages++
                  expect(body.next_cursor, "a page with items has a cursor").toBeTypeOf("string")
                  cursor = body.next_cursor
                } else {
                  expect(body.next_cursor, "the page past the end has no cursor").toBeUndefined()
                  if (finished) return m
                  yield* sleepReal(10)
                }
              }
            })
          const byAfter = mirror((m) => `&after=${m.ids[m.ids.length - 1] ?? "0"}`)
          const byCursor = mirror((_, cursor) => cursor === undefined ? "" : `&cursor=${encodeURIComponent(cursor)}`)

          const writers = Effect.all(Array.from({ length: WRITERS }, (_, w) => writer(w)), {
            concurrency: "unbounded"
          }).pipe(Effect.ensuring(Effect.sync(() => writing = false)))
          const [, after, cursor] = yield* Effect.all([writers, byAfter, byCursor], { concurrency: "unbounded" })

          const db = yield* sql<{ id: string; work_id: string; from_state: string | null; to_state: string }>`
            SELECT id::text AS id, work_id::text AS work_id, from_state, to_state FROM claim_events e ORDER BY e.id`
          const expected = db.map((e) => [e.id, e.work_id, e.from_state, e.to_state] as const)
          console.log(
            `mirror: writers ${JSON.stringify(stats)}, ${db.length} events in the log; ` +
              `after= mirror ${after.polls} polls (${after.pages} with items, ${after.limited} 429), ` +
              `cursor mirror ${cursor.polls} polls (${cursor.pages} with items, ${cursor.limited} 429)`
          )
          expect(stats.decided).toBe(WRITERS * PER_WRITER)
          for (const m of [after, cursor]) {
            expect(new Set(m.ids).size, "no duplicates").toBe(m.ids.length)
            const descending = m.ids.filter((id, i) => i > 0 && BigInt(id) <= BigInt(m.ids[i - 1]!))
            expect(descending, "strictly ascending").toEqual([])
            expect(m.ids).toEqual(db.map((e) => e.id))
            expect(m.events).toEqual(expected)
          }
        }),
      { timeout: 90_000 }
    )
  })
})
