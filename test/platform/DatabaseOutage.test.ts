/**
 * A database that goes away under write load, three service processes on it (docs/deploying.md,
 * "When the database misbehaves"; docs/writing.md, "The write runner"): the built catalog servers
 * (`node dist/src/main.js`) take idempotent claim creations, round robin, from clients that retry
 * with the same `Idempotency-Key` as `Retry-After` asks; the database's connections are cut and new
 * ones refused for a few seconds, as when PostgreSQL is stopped, then it comes back on the same
 * address. While it is away every answer is 503 `SERVICE_UNAVAILABLE` with `Retry-After` and a
 * problem document, never a 500; the processes recover without a restart; every creation is there
 * exactly once with its one creating event and its stored answer; and a key revoked after the
 * outage is refused by every process, whose listeners have reconnected.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import { ApiKeys } from "../../src/catalog/auth/ApiKeys.js"
import { type BuiltServer, startBuiltCatalog } from "../support/BuiltServer.js"
import { ClaimsFixture, ClaimsFixtureLive } from "../support/Claims.js"
import { DatabaseProxy, DatabaseProxyLive } from "../support/DatabaseProxy.js"
import { eventuallyAsync } from "../support/Eventually.js"
import { serverLayerOptions } from "../support/TestServers.js"

const Env = DatabaseProxyLive.pipe(Layer.provideMerge(ClaimsFixtureLive({ works: 140 })))

const CREATIONS = 120
const CLIENTS = 6
/** Creations acknowledged before the database goes away. */
const CUT_AFTER_ACKS = 25
const OUTAGE_MS = 4000

interface Unexpected {
  readonly i: number
  readonly status: number
  readonly body: string
}

describe("a database outage under write load, three processes (docs/deploying.md, \"When the database misbehaves\")", () => {
  it.layer(Env, serverLayerOptions("240 seconds"))((it) => {
    it.effect("503 with Retry-After while it is away, recovery without restart, every creation once; revocation reaches every process after", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const proxy = yield* DatabaseProxy
        const sql = yield* SqlClient.SqlClient
        const apiKeys = yield* ApiKeys
        const works = f.works.slice(0, CREATIONS)
        expect(works).toHaveLength(CREATIONS)
        const created = yield* apiKeys.create({
          site: "outage_site",
          scopes: ["catalog:read", "claims:write"],
          contentLimit: "sfw",
          userId: yield* f.makeUser([])
        }).pipe(Effect.orDie)
        const key = Redacted.value(created.key)
        const servers: ReadonlyArray<BuiltServer> = yield* Effect.all(
          Array.from({ length: 3 }, () => startBuiltCatalog(Redacted.value(proxy.url))),
          { concurrency: "unbounded" }
        )

        const began = Date.now()
        let acks = 0
        let cutAt: number | undefined
        let restoredAt: number | undefined
        let firstAckAfterRestore: number | undefined
        const unavailable = { answers: 0, withRetryAfter: 0, problemDocuments: 0 }
        let connectionErrors = 0
        let inProgress = 0
        const unexpected: Array<Unexpected> = []
        const acked = new Set<number>()
        let next = 0

        const outage = async () => {
          while (acks < CUT_AFTER_ACKS) await new Promise((r) => setTimeout(r, 10))
          cutAt = Date.now()
          proxy.cut()
          await new Promise((r) => setTimeout(r, OUTAGE_MS))
          await proxy.restore()
          restoredAt = Date.now()
        }

        /** Creates claim `i` until it is acknowledged, as a client following `Retry-After` would. */
        const createUntilAcknowledged = async (i: number) => {
          for (let attempt = 0; attempt < 500; attempt++) {
            const server = servers[(i + attempt) % servers.length]!
            try {
              const res = await fetch(`${server.base}/v2/claims`, {
                method: "POST",
                headers: {
                  authorization: `Bearer ${key}`,
                  "content-type": "application/json",
                  "idempotency-key": `outage-${i}`
                },
                body: JSON.stringify({ work_id: works[i] }),
                signal: AbortSignal.timeout(30_000)
              })
              const body = await res.text()
              if (res.status === 201) {
                acked.add(i)
                acks++
                if (restoredAt !== undefined && firstAckAfterRestore === undefined) firstAckAfterRestore = Date.now()
                return
              }
              if (res.status === 503) {
                unavailable.answers++
                if (Number(res.headers.get("retry-after")) > 0) unavailable.withRetryAfter++
                if (
                  res.headers.get("content-type") === "application/problem+json" &&
                  JSON.parse(body).code === "SERVICE_UNAVAILABLE"
                ) unavailable.problemDocuments++
              } else if (res.status === 409 && JSON.parse(body).code === "IDEMPOTENCY_REQUEST_IN_PROGRESS") {
                inProgress++
              } else {
                unexpected.push({ i, status: res.status, body })
                return
              }
            } catch {
              connectionErrors++
            }
            // Retry-After says seconds; a client may retry sooner on another process.
            await new Promise((r) => setTimeout(r, 100))
          }
          unexpected.push({ i, status: 0, body: "not acknowledged after 500 attempts" })
        }

        const client = async () => {
          while (next < CREATIONS) await createUntilAcknowledged(next++)
        }
        yield* Effect.promise(() => Promise.all([outage(), ...Array.from({ length: CLIENTS }, client)]))

        console.log(
          `outage run: ${CREATIONS} creations over 3 processes in ${Date.now() - began} ms; database away ` +
            `${restoredAt! - cutAt!} ms; ${unavailable.answers} answers 503 (${unavailable.withRetryAfter} with ` +
            `Retry-After, ${unavailable.problemDocuments} problem documents), ${inProgress} 409 in progress, ` +
            `${connectionErrors} connection errors; first acknowledged creation ${
              firstAckAfterRestore! - restoredAt!
            } ms after the database was back`
        )
        expect(unexpected).toEqual([])
        expect(connectionErrors).toBe(0)
        expect(unavailable.answers).toBeGreaterThan(0)
        expect(unavailable.withRetryAfter).toBe(unavailable.answers)
        expect(unavailable.problemDocuments).toBe(unavailable.answers)
        expect(acked.size).toBe(CREATIONS)
        expect(firstAckAfterRestore).toBeDefined()
        for (const server of servers) expect(server.child.exitCode, server.output()).toBeNull()

        // Every creation exactly once: one claim per work, one creating event, one stored answer.
        const rows = yield* sql<{ work_id: string; claims: number; creating: number; answers: number }>`
          SELECT w.id::text AS work_id,
                 (SELECT count(*)::int FROM claims c WHERE c.work_id = w.id) AS claims,
                 (SELECT count(*)::int FROM claim_events e WHERE e.work_id = w.id AND e.from_state IS NULL) AS creating,
                 (SELECT count(*)::int FROM catalog_idempotency k
                    WHERE k.key = 'outage-' || (array_position(${works}::bigint[], w.id) - 1)::text) AS answers
          FROM works w WHERE w.id = ANY(${works}::bigint[])`
        expect(rows).toHaveLength(CREATIONS)
        expect(rows.filter((r) => r.claims !== 1 || r.creating !== 1 || r.answers !== 1)).toEqual([])

        // The listeners of every process reconnected after the outage: a revocation reaches them all.
        yield* apiKeys.revoke(created.record.id).pipe(Effect.orDie)
        for (const server of servers) {
          yield* Effect.promise(() =>
            eventuallyAsync(async () => {
              const res = await fetch(`${server.base}/v2/credential`, { headers: { authorization: `Bearer ${key}` } })
              await res.arrayBuffer()
              if (res.status !== 401) throw new Error(`the revoked key still answers ${res.status}`)
            }, { timeoutMs: 20_000, intervalMs: 100 })
          )
        }
      }).pipe(Effect.scoped))
  })
})
