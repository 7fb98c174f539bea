/**
 * docs/deploying.md, "A read replica": with `DATABASE_READ_URL`, the catalog's reads are served by a
 * streaming replica when it has replayed every write the process knows of (the fence), by the primary
 * otherwise: the writer reads its own write, another process reads it once notified, a paused or
 * stopped replica costs no error. Without it, no routing and no second pool.
 *
 * The primary and the hot standby are real PostgreSQL servers started here (test/support/Replica.ts),
 * the catalog servers the built ones (test/support/BuiltServer.ts), two processes over them.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, Redacted } from "effect"
import { ApiKeys } from "../../src/catalog/auth/ApiKeys.js"
import { DatabaseUrl, ensureDatabase, withPgClient } from "../../src/platform/Database.js"
import { lsnBytes, READ_APPLICATION_NAME, ReadRouting } from "../../src/platform/ReadReplica.js"
import { freePort, startBuiltCatalog } from "../support/BuiltServer.js"
import { eventually } from "../support/Eventually.js"
import { parseOpenMetrics, sampleValue } from "../support/OpenMetrics.js"
import { startReplicatedPostgres } from "../support/Replica.js"
import { TestSqlLive, testSqlOver } from "../support/TestDatabase.js"

interface Answer {
  readonly status: number
  readonly body: any
}

const call = (base: string, key: string, path: string, init: { method?: string; body?: unknown } = {}) =>
  Effect.promise(async (): Promise<Answer> => {
    const res = await fetch(`${base}${path}`, {
      method: init.method ?? "GET",
      headers: {
        authorization: `Bearer ${key}`,
        ...(init.body === undefined ? {} : { "content-type": "application/json" })
      },
      ...(init.body === undefined ? {} : { body: JSON.stringify(init.body) })
    })
    const text = await res.text()
    return { status: res.status, body: text === "" ? null : JSON.parse(text) }
  })

/** `database_reads_total{target}` of the process whose metrics listener is at `port`. */
const readsOn = (port: number, target: "replica" | "primary") =>
  Effect.promise(async () => {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`)
    return sampleValue(parseOpenMetrics(await res.text()), "database_reads_total", { target })
  })

/** One query through a raw connection (the test's own, on either server). */
const query = <A>(url: Redacted.Redacted, text: string, params: ReadonlyArray<unknown> = []) =>
  withPgClient(url, async (client) => (await client.query(text, [...params])).rows as Array<A>)

describe("a read replica (docs/deploying.md, \"A read replica\")", () => {
  it.live(
    "reads go to the replica when it has replayed the fence, to the primary otherwise",
    () =>
      Effect.gen(function*() {
        const pg = yield* startReplicatedPostgres
        yield* ensureDatabase(pg.primary.url("postgres"), "shiori")
        const primaryUrl = pg.primary.url("shiori")
        const replicaUrl = pg.replicaUrl("shiori")
        const readEnv = { DATABASE_READ_URL: Redacted.value(replicaUrl) }

        // The first process migrates and seeds the primary; the second starts over the result.
        const metricsA = yield* Effect.promise(freePort)
        const a = yield* startBuiltCatalog(Redacted.value(primaryUrl), {
          ...readEnv,
          SHIORI_DEMO_WORKS: "30",
          METRICS_PORT: String(metricsA)
        })
        const metricsB = yield* Effect.promise(freePort)
        const b = yield* startBuiltCatalog(Redacted.value(primaryUrl), {
          ...readEnv,
          SHIORI_DEMO_WORKS: "0",
          METRICS_PORT: String(metricsB)
        })

        const primarySql = testSqlOver(Layer.succeed(DatabaseUrl, primaryUrl))
        const [work] = yield* query<{ id: string; length_minutes: number | null; cover: string; votes: number }>(
          primaryUrl,
          `SELECT w.id::text AS id, w.length_minutes, c.id::text AS cover, c.vote_count AS votes
         FROM works w JOIN covers c ON c.work_id = w.id WHERE w.live AND NOT w.nsfw ORDER BY w.id, c.id LIMIT 1`
        )
        expect(work).toBeDefined()
        const [user] = yield* query<{ id: string }>(
          primaryUrl,
          `INSERT INTO users (sub, email, password_hash, roles)
         VALUES (gen_random_uuid(), 'replica-voter@example.test', 'unused', '{}') RETURNING id::text AS id`
        )
        const { reader, voter } = yield* Effect.gen(function*() {
          const keys = yield* ApiKeys
          const make = (scopes: ReadonlyArray<string>, userId: number | null) =>
            Effect.map(
              keys.create({ site: "site_a", scopes, contentLimit: "nsfw", userId }),
              ({ key }) => Redacted.value(key)
            )
          return {
            reader: yield* make(["catalog:read"], null),
            voter: yield* make(["catalog:read", "votes:write"], Number(user!.id))
          }
        }).pipe(Effect.provide(ApiKeys.layer.pipe(Layer.provideMerge(primarySql))), Effect.orDie)

        // Both processes keep a pool on the replica, under their own name.
        yield* eventually(
          Effect.flatMap(
            query<{ n: number }>(
              replicaUrl,
              "SELECT count(DISTINCT client_port)::int AS n FROM pg_stat_activity WHERE application_name = $1",
              [READ_APPLICATION_NAME]
            ),
            ([row]) => Effect.sync(() => expect(row!.n).toBeGreaterThanOrEqual(1))
          ),
          { timeoutMs: 20_000, intervalMs: 100 }
        )

        /** `path` read on `base` is served by the replica (its counter moved, the primary's did not). */
        const servedByReplica = (base: string, metrics: number, path: string) =>
          eventually(
            Effect.gen(function*() {
              const before = {
                replica: yield* readsOn(metrics, "replica"),
                primary: yield* readsOn(metrics, "primary")
              }
              const answer = yield* call(base, reader, path)
              expect(answer.status, `${path}: ${JSON.stringify(answer.body)}`).toBe(200)
              expect(yield* readsOn(metrics, "replica")).toBe(before.replica + 1)
              expect(yield* readsOn(metrics, "primary")).toBe(before.primary)
              return answer
            }),
            { timeoutMs: 20_000, intervalMs: 100 }
          )
        yield* servedByReplica(a.base, metricsA, "/v2/catalog/works?limit=1")
        yield* servedByReplica(b.base, metricsB, "/v2/catalog/works?limit=1")

        // Replay paused, a write the servers never hear of (no trigger, so no notification): the fence
        // stays where it was, the reads stay on the replica, and they answer the replica's old value.
        yield* query(replicaUrl, "SELECT pg_wal_replay_pause()")
        yield* eventually(
          Effect.flatMap(
            query<{ state: string }>(replicaUrl, "SELECT pg_get_wal_replay_pause_state() AS state"),
            ([row]) => Effect.sync(() => expect(row!.state).toBe("paused"))
          ),
          { timeoutMs: 10_000, intervalMs: 50 }
        )
        const unheard = (work!.length_minutes ?? 0) + 1234
        yield* withPgClient(primaryUrl, async (client) => {
          await client.query("SET session_replication_role = replica")
          await client.query("UPDATE works SET length_minutes = $1 WHERE id = $2", [unheard, work!.id])
        })
        const old = yield* servedByReplica(a.base, metricsA, `/v2/catalog/works/${work!.id}`)
        expect(old.body.length_minutes).toBe(work!.length_minutes)

        // A write through the catalog (a cover vote): its writer reads it at once (the primary serves
        // it), although the replica does not have it.
        const covers = `/v2/catalog/works/${work!.id}/covers?limit=100`
        const votesIn = (answer: Answer) => answer.body.items.find((c: any) => c.id === work!.cover)?.vote_count
        const voted = yield* call(a.base, voter, `/v2/catalog/works/${work!.id}/covers/${work!.cover}/vote`, {
          method: "PUT",
          body: { vote: "up" }
        })
        expect(voted.status, JSON.stringify(voted.body)).toBe(200)
        const primaryBefore = yield* readsOn(metricsA, "primary")
        const mine = yield* call(a.base, voter, covers)
        expect(mine.status).toBe(200)
        expect(votesIn(mine)).toBe(work!.votes + 1)
        expect(yield* readsOn(metricsA, "primary")).toBe(primaryBefore + 1)
        expect(yield* query(replicaUrl, "SELECT vote_count AS votes FROM covers WHERE id = $1", [work!.cover])).toEqual(
          [
            { votes: work!.votes }
          ]
        )
        // The other process hears the write's notification and reads it fresh too.
        yield* eventually(
          Effect.flatMap(call(b.base, reader, covers), (answer) =>
            Effect.sync(() => {
              expect(answer.status).toBe(200)
              expect(votesIn(answer)).toBe(work!.votes + 1)
            })),
          { timeoutMs: 10_000, intervalMs: 50 }
        )
        // The work read again while the fence is ahead of the replica: the primary's value.
        const fresh = yield* call(a.base, reader, `/v2/catalog/works/${work!.id}`)
        expect(fresh.body.length_minutes).toBe(unheard)

        // Replay resumed: once the replica has replayed the fence, reads go back to it, fresh.
        yield* query(replicaUrl, "SELECT pg_wal_replay_resume()")
        const caughtUp = yield* servedByReplica(a.base, metricsA, `/v2/catalog/works/${work!.id}/covers?limit=50`)
        expect(votesIn(caughtUp)).toBe(work!.votes + 1)
        yield* servedByReplica(b.base, metricsB, `/v2/catalog/works/${work!.id}/covers?limit=50`)

        // The replica stopped: every read still answers, from the primary; started again, reads return.
        yield* pg.stopReplica
        for (const base of [a.base, b.base, a.base, b.base]) {
          const answer = yield* call(base, reader, `/v2/catalog/works/${work!.id}`)
          expect(answer.status).toBe(200)
          expect(answer.body.length_minutes).toBe(unheard)
        }
        const down = yield* readsOn(metricsA, "replica")
        yield* call(a.base, reader, "/v2/catalog/works?limit=2")
        expect(yield* readsOn(metricsA, "replica")).toBe(down)
        yield* pg.startReplica
        yield* servedByReplica(a.base, metricsA, "/v2/catalog/works?limit=2")
        yield* servedByReplica(b.base, metricsB, "/v2/catalog/works?limit=2")
      }).pipe(Effect.scoped),
    { timeout: 300_000 }
  )

  it("compares WAL positions as byte positions (`pg_lsn` text: high and low 32 bits in hexadecimal)", () => {
    expect(lsnBytes("16/B374D848")).toBe(0x16_B374_D848n)
    expect(lsnBytes("0/0")).toBe(0n)
    expect(lsnBytes("1/0") > lsnBytes("0/FFFFFFFF")).toBe(true)
  })

  it.live("without DATABASE_READ_URL nothing is routed and no second pool is opened", () =>
    Effect.gen(function*() {
      const routing = yield* ReadRouting
      const read = Effect.succeed(1)
      expect(routing.reads(read)).toBe(read)
      const url = yield* DatabaseUrl
      const [row] = yield* query<{ n: number }>(
        url,
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1",
        [READ_APPLICATION_NAME]
      )
      expect(row!.n).toBe(0)
    }).pipe(Effect.provide(TestSqlLive)), { timeout: 60_000 })
})
