/**
 * A write and its idempotency record commit together or not at all (src/catalog/writes/Writes.ts),
 * black box: the built server (`node dist/src/main.js`, what `npm start` runs; `npm test` builds
 * first) takes a burst of idempotent claim creations and is SIGKILLed in the middle of it, then
 * starts again on the same database. Every acknowledged creation is there exactly once with its
 * creating event and its stored answer, no claim is without its answer nor an answer without its
 * claim, and retrying the whole burst with the same keys replays what committed and creates the
 * rest: one claim per work in the end.
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

interface Outcome {
  /** HTTP answer, or undefined when the connection failed (the process died) or it was never sent. */
  status?: number
  replayed?: boolean
  body?: any
  error?: string
  sent: boolean
}

const Env = ApiKeys.layer.pipe(Layer.provideMerge(TestSqlLive))

describe("claims: a killed server process (docs/writing.md, \"The write runner\")", () => {
  it.layer(Env, { timeout: "120 seconds", excludeTestServices: true })((it) => {
    it.effect(
      "SIGKILL in a burst of idempotent creations: every acknowledged write is there once with its stored answer, and retrying the burst replays or completes it (docs/writing.md, \"The write runner\")",
      () =>
        Effect.gen(function*() {
          expect(Fs.existsSync(main), `${main} is missing: build first (npm run build; npm test does)`).toBe(true)
          const sql = yield* SqlClient.SqlClient
          const apiKeys = yield* ApiKeys
          const databaseUrl = Redacted.value(yield* DatabaseUrl)

          const seeded = yield* seedCatalog({ works: 80, seed: 5, workers: 0 }).pipe(Effect.orDie)
          expect(seeded.status).toBe("seeded")
          const works = (yield* sql<{ id: string }>`
            SELECT id::text AS id FROM works WHERE live AND NOT nsfw ORDER BY id LIMIT ${BURST}`).map((w) => w.id)
          expect(works).toHaveLength(BURST)
          const [user] = yield* sql<{ id: string }>`
            INSERT INTO users (sub, email, password_hash, roles)
            VALUES (gen_random_uuid(), 'crash-user@example.test', 'unused', '{}'::text[])
            RETURNING id::text AS id`
          const created = yield* apiKeys.create({
            site: "crash_site",
            scopes: ["catalog:read", "claims:write"],
            contentLimit: "sfw",
            userId: Number(user!.id)
          }).pipe(Effect.orDie)
          const key = Redacted.value(created.key)
          const idempotencyKey = (i: number) => `crash-${i}`

          const create = (base: string, i: number) =>
            fetch(`${base}/v2/claims`, {
              method: "POST",
              headers: {
                authorization: `Bearer ${key}`,
                "content-type": "application/json",
                "idempotency-key": idempotencyKey(i)
              },
              body: JSON.stringify({ work_id: works[i] })
            }).then(async (res) => {
              const text = await res.text()
              return {
                status: res.status,
                replayed: res.headers.get("idempotent-replayed") === "true",
                body: text === "" ? null : JSON.parse(text)
              }
            })

          const began = Date.now()
          const phase = (name: string) => console.log(`${name} at ${Date.now() - began} ms`)
          // The burst, and the kill once KILL_AFTER_ACKS creations were acknowledged.
          const outcomes: Array<Outcome> = Array.from({ length: BURST }, () => ({ sent: false }))
          yield* Effect.scoped(Effect.gen(function*() {
            const first = yield* startServer(databaseUrl)
            phase("first server ready")
            let killed = false
            let acks = 0
            let next = 0
            const worker = async () => {
              while (!killed && next < BURST) {
                const i = next++
                const outcome = outcomes[i]!
                outcome.sent = true
                try {
                  Object.assign(outcome, await create(first.base, i))
                  if (outcome.status === 201 && ++acks === KILL_AFTER_ACKS && !killed) {
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
          const acked = outcomes.flatMap((o, i) => (o.status === 201 ? [i] : []))
          const failed = outcomes.filter((o) => o.sent && o.status === undefined)
          expect(answered.filter((o) => o.status !== 201).map((o) => [o.status, o.body])).toEqual([])
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

          // The database after the crash, before any retry.
          const claimRows = () =>
            sql<{ work_id: string; state: string; events: number; creating: number }>`
              SELECT c.work_id::text AS work_id, c.state,
                     (SELECT count(*)::int FROM claim_events e WHERE e.work_id = c.work_id) AS events,
                     (SELECT count(*)::int FROM claim_events e WHERE e.work_id = c.work_id AND e.from_state IS NULL)
                       AS creating
              FROM claims c WHERE c.work_id = ANY(${works}::bigint[])`
          const storedRows = () =>
            sql<{ key: string; status: number; body: string }>`
              SELECT key, status, body FROM catalog_idempotency WHERE key LIKE 'crash-%'`
          const claimsAfterCrash = new Map((yield* claimRows()).map((r) => [r.work_id, r]))
          const storedAfterCrash = new Map((yield* storedRows()).map((r) => [r.key, r]))
          for (const i of acked) {
            const claim = claimsAfterCrash.get(works[i]!)
            expect(claim, `acknowledged creation ${i} is in the database`).toEqual({
              work_id: works[i],
              state: "pending",
              events: 1,
              creating: 1
            })
            const stored = storedAfterCrash.get(idempotencyKey(i))
            expect(stored?.status, `acknowledged creation ${i} has its stored answer`).toBe(201)
            expect(JSON.parse(stored!.body)).toEqual(outcomes[i]!.body)
          }
          // A claim without its answer, or an answer without its claim, would be a torn write.
          const committed = works.flatMap((w, i) => (claimsAfterCrash.has(w) ? [i] : []))
          const withAnswer = works.flatMap((_, i) => (storedAfterCrash.has(idempotencyKey(i)) ? [i] : []))
          expect(withAnswer).toEqual(committed)
          for (const claim of claimsAfterCrash.values()) expect(claim.events).toBe(1)
          const committedUnacked = committed.filter((i) => !acked.includes(i))
          console.log(
            `crash burst: ${outcomes.filter((o) => o.sent).length} sent, ${acked.length} acknowledged, ` +
              `${failed.length} cut off by the kill, ${BURST - outcomes.filter((o) => o.sent).length} never sent; ` +
              `${committed.length} committed (${committedUnacked.length} of them unacknowledged)`
          )

          // The restart on the same database, and the whole burst retried with the same keys.
          yield* Effect.scoped(Effect.gen(function*() {
            phase("burst done")
            const second = yield* startServer(databaseUrl)
            phase("second server ready")
            let stillInProgress = 0
            const retries = yield* Effect.promise(() =>
              Promise.all(works.map((_, i) =>
                // A backend of the killed process may still hold its key's lock for a moment: 409
                // IDEMPOTENCY_REQUEST_IN_PROGRESS is "retry later", so retry until it is not.
                eventuallyAsync(async () => {
                  const answer = await create(second.base, i)
                  if (answer.status === 409 && answer.body?.code === "IDEMPOTENCY_REQUEST_IN_PROGRESS") {
                    stillInProgress++
                    throw new Error(`creation ${i} still in progress`)
                  }
                  return answer
                }, { timeoutMs: 20_000, intervalMs: 100 })
              ))
            )
            retries.forEach((retry, i) => {
              expect(retry.status, `retry ${i}: ${JSON.stringify(retry.body)}`).toBe(201)
              expect(retry.replayed, `retry ${i} replays iff its creation committed before the kill`).toBe(
                committed.includes(i)
              )
              expect(retry.body.id).toBe(works[i])
              if (acked.includes(i)) expect(retry.body).toEqual(outcomes[i]!.body)
            })
            console.log(
              `retry after restart: ${retries.filter((r) => r.replayed).length} replayed, ` +
                `${retries.filter((r) => !r.replayed).length} fresh, ${stillInProgress} answers 409 in progress first`
            )
          }))

          const claimsAfter = yield* claimRows()
          expect(claimsAfter).toHaveLength(BURST)
          expect(new Set(claimsAfter.map((c) => c.work_id)).size).toBe(BURST)
          for (const claim of claimsAfter) {
            expect(claim, `work ${claim.work_id}`).toEqual({
              work_id: claim.work_id,
              state: "pending",
              events: 1,
              creating: 1
            })
          }
          const storedAfter = yield* storedRows()
          expect(storedAfter.map((r) => r.key).sort()).toEqual(works.map((_, i) => idempotencyKey(i)).sort())
          expect(storedAfter.every((r) => r.status === 201)).toBe(true)
        })
    )
  })
})
