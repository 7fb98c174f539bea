/**
 * A merge commits whole or not at all (docs/writing.md, "Edit proposals" and "The write runner"),
 * black box: the built server (`node dist/src/main.js`, what `npm start` runs; `npm test` builds
 * first) takes a burst of idempotent merges of proposals on distinct works and is SIGKILLed in the
 * middle of it, then starts again on the same database. Every proposal is then either open with no
 * revision and its work as it was, or merged with exactly one revision whose FieldDiffs run from what
 * the work held to what it holds now, with its change-feed row and its stored answer; there is no
 * revision without its merged proposal. Retrying the whole burst with the same keys replays what
 * committed and merges the rest.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import { ApiKeys } from "../../src/catalog/auth/ApiKeys.js"
import { seedCatalog } from "../../src/demo/Seed.js"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { builtMain as main, exited, startBuiltCatalog as startServer } from "../support/BuiltServer.js"
import { eventually, eventuallyAsync } from "../support/Eventually.js"
import { TestSqlLive } from "../support/TestDatabase.js"

const BURST = 60
const CONCURRENCY = 8
const KILL_AFTER_ACKS = 20

/** The keys each proposal sets: columns of the work row and rows of three other tables. */
const KEYS = [
  "catalog.work.display_name",
  "catalog.work.length_minutes",
  "catalog.work.titles",
  "catalog.work.aliases"
] as const

const patchOf = (i: number) => ({
  "catalog.work.display_name": `Crash merge ${i}`,
  "catalog.work.length_minutes": 20_000 + i,
  "catalog.work.titles": [
    { lang: "ja", value: `クラッシュ ${i}`, latin: `Kurasshu ${i}`, is_main: true, is_official: true },
    { lang: "en", value: `Crash merge ${i}`, latin: null, is_main: false, is_official: true }
  ],
  "catalog.work.aliases": [
    { lang: "en", value: `Crash alias ${i}`, alias_kind: "spelling_variant", is_machine: false },
    { lang: "ja", value: `別名 ${i}`, alias_kind: "translation", is_machine: true }
  ]
})

interface Outcome {
  /** HTTP answer, or undefined when the connection failed (the process died) or it was never sent. */
  status?: number
  replayed?: boolean
  body?: any
  error?: string
  sent: boolean
}

const Env = ApiKeys.layer.pipe(Layer.provideMerge(TestSqlLive))

describe("merges: a killed server process (docs/writing.md, \"Edit proposals\")", () => {
  it.layer(Env, { timeout: "150 seconds", excludeTestServices: true })((it) => {
    it.effect(
      "SIGKILL in a burst of merges: no partial write, every merged proposal has one revision matching its work, and retrying the burst completes it (docs/writing.md, \"The write runner\")",
      () =>
        Effect.gen(function*() {
          expect(Fs.existsSync(main), `${main} is missing: build first (npm run build; npm test does)`).toBe(true)
          const sql = yield* SqlClient.SqlClient
          const apiKeys = yield* ApiKeys
          const databaseUrl = Redacted.value(yield* DatabaseUrl)

          const seeded = yield* seedCatalog({ works: 80, seed: 7, workers: 0 }).pipe(Effect.orDie)
          expect(seeded.status).toBe("seeded")
          const works = (yield* sql<{ id: string }>`
            SELECT id::text AS id FROM works WHERE live AND NOT nsfw ORDER BY id LIMIT ${BURST}`).map((w) => w.id)
          expect(works).toHaveLength(BURST)
          const user = (roles: ReadonlyArray<string>, email: string) =>
            Effect.map(
              sql<{ id: string }>`
                INSERT INTO users (sub, email, password_hash, roles)
                VALUES (gen_random_uuid(), ${email}, 'unused', ${roles}::text[])
                RETURNING id::text AS id`,
              ([row]) => Number(row!.id)
            )
          const keyOf = (site: string, userId: number, moderation: boolean) =>
            Effect.map(
              apiKeys.create({
                site,
                scopes: moderation
                  ? ["catalog:read", "catalog:write", "moderation"]
                  : ["catalog:read", "catalog:write"],
                contentLimit: "sfw",
                userId
              }),
              ({ key }) => Redacted.value(key)
            ).pipe(Effect.orDie)
          const proposer = yield* keyOf("crash_site", yield* user([], "crash-proposer@example.test"), false)
          const moderator = yield* keyOf("mod_site", yield* user(["moderator"], "crash-moderator@example.test"), true)
          const idempotencyKey = (i: number) => `crash-merge-${i}`

          const call = (base: string, method: string, path: string, key: string, body?: unknown, headers = {}) =>
            fetch(`${base}${path}`, {
              method,
              headers: {
                authorization: `Bearer ${key}`,
                ...(body === undefined ? {} : { "content-type": "application/json" }),
                ...headers
              },
              ...(body === undefined ? {} : { body: JSON.stringify(body) })
            }).then(async (res) => {
              const text = await res.text()
              return {
                status: res.status,
                etag: res.headers.get("etag"),
                replayed: res.headers.get("idempotent-replayed") === "true",
                body: text === "" ? null : JSON.parse(text)
              }
            })
          const snapshotOf = (base: string, work: string) =>
            call(base, "GET", `/v2/moderation/snapshots/work/${work}`, moderator).then((res) => {
              if (res.status !== 200) throw new Error(`snapshot of ${work}: ${res.status} ${JSON.stringify(res.body)}`)
              return res.body as Record<string, unknown>
            })

          const began = Date.now()
          const phase = (name: string) => console.log(`${name} at ${Date.now() - began} ms`)
          const outcomes: Array<Outcome> = Array.from({ length: BURST }, () => ({ sent: false }))
          const proposals: Array<{ id: string; etag: string }> = []
          const before: Array<Record<string, unknown>> = []
          yield* Effect.scoped(Effect.gen(function*() {
            const first = yield* startServer(databaseUrl)
            phase("first server ready")
            // The proposals, and each work's values before the burst.
            for (const [i, work] of works.entries()) {
              const created = yield* Effect.promise(() =>
                call(first.base, "POST", "/v2/proposals", proposer, {
                  entity_type: "catalog.work",
                  entity_id: work,
                  patch: patchOf(i)
                })
              )
              expect(created.status, JSON.stringify(created.body)).toBe(201)
              proposals.push({ id: created.body.id, etag: created.etag! })
              before.push(yield* Effect.promise(() => snapshotOf(first.base, work)))
            }
            phase("proposals created")

            // The burst of merges, and the kill once KILL_AFTER_ACKS of them were acknowledged.
            const merge = (i: number) =>
              call(first.base, "POST", `/v2/moderation/proposals/${proposals[i]!.id}/decisions`, moderator, {
                decision: "merge"
              }, { "if-match": proposals[i]!.etag, "idempotency-key": idempotencyKey(i) })
            let killed = false
            let acks = 0
            let next = 0
            const worker = async () => {
              while (!killed && next < BURST) {
                const i = next++
                const outcome = outcomes[i]!
                outcome.sent = true
                try {
                  Object.assign(outcome, await merge(i))
                  if (outcome.status === 200 && ++acks === KILL_AFTER_ACKS && !killed) {
                    killed = true
                    first.child.kill("SIGKILL")
                  }
                } catch (e) {
                  outcome.error = String((e as Error).cause ?? e)
                }
              }
            }
            yield* Effect.promise(() => Promise.all(Array.from({ length: CONCURRENCY }, worker)))
            yield* Effect.promise(() => exited(first.child))
            expect(first.child.signalCode, first.output()).toBe("SIGKILL")
          }))

          const answered = outcomes.filter((o) => o.status !== undefined)
          const acked = outcomes.flatMap((o, i) => (o.status === 200 ? [i] : []))
          expect(answered.filter((o) => o.status !== 200).map((o) => [o.status, o.body])).toEqual([])
          expect(acked.length).toBeGreaterThanOrEqual(KILL_AFTER_ACKS)
          expect(outcomes.filter((o) => o.replayed)).toEqual([])

          // The killed process's backends finish what they were doing (a COMMIT already sent still
          // commits; anything else rolls back when they see the closed connection) and go away.
          yield* eventually(
            Effect.gen(function*() {
              const [busy] = yield* sql<{ n: number }>`
                SELECT count(*)::int AS n FROM pg_stat_activity
                WHERE datname = current_database() AND pid <> pg_backend_pid() AND state <> 'idle'`
              expect(busy!.n).toBe(0)
            }),
            { timeoutMs: 20_000, intervalMs: 50 }
          )

          const ids = proposals.map((p) => p.id)
          /** What the database holds for each proposal of the burst, in burst order. */
          const stateOf = () =>
            Effect.gen(function*() {
              const rows = yield* sql<{
                id: string
                state: string
                revision_id: string | null
                revisions: Array<string>
                stored: number | null
              }>`
                SELECT p.id::text AS id, p.state, p.revision_id::text AS revision_id,
                  coalesce((SELECT array_agg(r.id::text ORDER BY r.id) FROM revisions r WHERE r.proposal_id = p.id),
                    '{}') AS revisions,
                  (SELECT i.status FROM catalog_idempotency i
                    WHERE i.key = 'crash-merge-' || (array_position(${ids}::bigint[], p.id) - 1)) AS stored
                FROM proposals p WHERE p.id = ANY(${ids}::bigint[])`
              const byId = new Map(rows.map((r) => [r.id, r]))
              return ids.map((id) => byId.get(id)!)
            })
          /** Revisions of the burst's works that no merged proposal of the burst names. */
          const orphans = () =>
            sql<{ id: string }>`
              SELECT r.id::text AS id FROM revisions r
              WHERE r.entity_type = 'catalog.work' AND r.entity_id = ANY(${works}::bigint[])
                AND NOT EXISTS (SELECT 1 FROM proposals p
                  WHERE p.id = r.proposal_id AND p.state = 'merged' AND p.revision_id = r.id)`
          /** Merged proposals whose work has no change-feed row written by (or after) the merge. */
          const withoutChange = () =>
            sql<{ id: string }>`
              SELECT p.id::text AS id FROM proposals p JOIN revisions r ON r.id = p.revision_id
              WHERE p.id = ANY(${ids}::bigint[]) AND p.state = 'merged'
                AND NOT EXISTS (SELECT 1 FROM catalog_changes c
                  WHERE c.target_object = 'work' AND c.id = r.entity_id AND c.updated_at >= r.created_at)`

          /** Every proposal open with its work untouched, or merged once with its diff matching its work. */
          const expectWhole = (base: string) =>
            Effect.gen(function*() {
              const states = yield* stateOf()
              let merged = 0
              for (const [i, row] of states.entries()) {
                const work = yield* Effect.promise(() => snapshotOf(base, works[i]!))
                const context = `proposal ${i} (${row.id}) on work ${works[i]}`
                if (row.state === "open") {
                  expect(row.revisions, `${context}: open without a revision`).toEqual([])
                  expect(row.revision_id, context).toBeNull()
                  expect(row.stored, `${context}: no stored answer`).toBeNull()
                  for (const key of KEYS) expect(work[key], `${context}: ${key} as it was`).toEqual(before[i]![key])
                  continue
                }
                merged++
                expect(row.state, context).toBe("merged")
                expect(row.revisions, `${context}: exactly one revision`).toEqual([row.revision_id])
                expect(row.stored, `${context}: its stored answer`).toBe(200)
                const revision = yield* Effect.promise(() =>
                  call(base, "GET", `/v2/revisions/${row.revision_id}`, moderator)
                )
                expect(revision.status, context).toBe(200)
                expect(revision.body.proposal_id, context).toBe(row.id)
                expect(revision.body.diff.map((d: any) => d.key).sort(), context).toEqual([...KEYS].sort())
                for (const diff of revision.body.diff) {
                  expect(diff.from, `${context}: ${diff.key} from = the value before`).toEqual(before[i]![diff.key])
                  expect(diff.to, `${context}: ${diff.key} to = the work's value`).toEqual(work[diff.key])
                }
                expect(work["catalog.work.display_name"], context).toBe(`Crash merge ${i}`)
              }
              expect(yield* orphans(), "revisions without their merged proposal").toEqual([])
              expect(yield* withoutChange(), "merged proposals without their change-feed row").toEqual([])
              return merged
            })

          yield* Effect.scoped(Effect.gen(function*() {
            const second = yield* startServer(databaseUrl)
            phase("second server ready")

            // After the crash, before any retry.
            const states = yield* stateOf()
            for (const i of acked) expect(states[i]!.state, `acknowledged merge ${i}`).toBe("merged")
            const committed = yield* expectWhole(second.base)
            console.log(
              `crash burst: ${outcomes.filter((o) => o.sent).length} sent, ${acked.length} acknowledged, ` +
                `${outcomes.filter((o) => o.sent && o.status === undefined).length} cut off by the kill, ` +
                `${BURST - outcomes.filter((o) => o.sent).length} never sent; ${committed} merged ` +
                `(${committed - acked.length} of them unacknowledged)`
            )

            // The whole burst again, with the same keys and ETags: what committed replays, the rest merges.
            const mergedBefore = states.map((s) => s.state === "merged")
            const retries = yield* Effect.promise(() =>
              Promise.all(proposals.map((p, i) =>
                // A backend of the killed process may still hold its key's lock for a moment: 409
                // IDEMPOTENCY_REQUEST_IN_PROGRESS is "retry later", so retry until it is not.
                eventuallyAsync(async () => {
                  const answer = await call(
                    second.base,
                    "POST",
                    `/v2/moderation/proposals/${p.id}/decisions`,
                    moderator,
                    {
                      decision: "merge"
                    },
                    { "if-match": p.etag, "idempotency-key": idempotencyKey(i) }
                  )
                  if (answer.status === 409 && answer.body?.code === "IDEMPOTENCY_REQUEST_IN_PROGRESS") {
                    throw new Error(`merge ${i} still in progress`)
                  }
                  return answer
                }, { timeoutMs: 20_000, intervalMs: 100 })
              ))
            )
            retries.forEach((retry, i) => {
              expect(retry.status, `retry ${i}: ${JSON.stringify(retry.body)}`).toBe(200)
              expect(retry.replayed, `retry ${i} replays iff its merge committed before the kill`).toBe(
                mergedBefore[i]
              )
              if (acked.includes(i)) expect(retry.body).toEqual(outcomes[i]!.body)
            })
            expect(yield* expectWhole(second.base)).toBe(BURST)
          }))
        })
    )
  })
})
