/**
 * docs/deploying.md, "The topology, step by step": a PostgreSQL primary and its replica, two service
 * processes and haproxy (deploy/haproxy.cfg.template) on loopback, brought up by the code
 * scripts/deploy-local.sh runs (scripts/local-topology.ts), and its rolling restart under load.
 * Needs haproxy on the PATH, so it runs apart from `npm test`: `npm run test:deploy`. The same suite
 * parses a process's `/metrics` with the reference OpenMetrics parser (the Python
 * `prometheus_client.openmetrics.parser`, Debian's python3-prometheus-client; OpenMetrics 1.0), which
 * no npm package offers.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Redacted, Scope } from "effect"
import { execFileSync } from "node:child_process"
import { startTopology, type Topology } from "../../scripts/local-topology.js"
import { loginFrom } from "../support/LocalAddress.js"
import { parseOpenMetrics } from "../support/OpenMetrics.js"
import {
  firstRefreshToken,
  loadActors,
  mixedLoad,
  newTopologyUser,
  topologyCli,
  topologyQuery
} from "../support/TopologyLoad.js"

let scope: Scope.Closeable
let topology: Topology

const cli = (args: ReadonlyArray<string>) => topologyCli(topology, args)
const query = <A>(text: string, params: ReadonlyArray<unknown> = []) => topologyQuery<A>(topology, text, params)
const newUser = (label: string) => newTopologyUser(topology, label)

/** Requests each process answered on `server` (`catalog` or `identity`), health checks aside. */
const answeredBy = async (metricsPort: number, server: string) => {
  const res = await fetch(`http://127.0.0.1:${metricsPort}/metrics`)
  let total = 0
  for (const family of parseOpenMetrics(await res.text()).values()) {
    for (const sample of family.samples) {
      if (
        sample.name === "http_server_request_duration_seconds_count" && sample.labels.server === server &&
        !/healthz|readyz/.test(sample.labels.http_route ?? "")
      ) total += sample.value
    }
  }
  return total
}

beforeAll(async () => {
  scope = Effect.runSync(Scope.make())
  topology = await Effect.runPromise(
    startTopology({
      processes: 2,
      demoWorks: 20,
      // Budgets out of the way of a load test from one address.
      env: {
        CATALOG_RATE_BURST: "100000",
        CATALOG_RATE_PER_SECOND: "100000",
        IDENTITY_TOKEN_RATE_BURST: "100000",
        IDENTITY_TOKEN_RATE_PER_SECOND: "100000"
      }
    }).pipe(Scope.provide(scope))
  )
}, 180_000)

afterAll(async () => {
  if (scope !== undefined) await Effect.runPromise(Scope.close(scope, Exit.void))
}, 60_000)

describe("the topology on loopback (docs/deploying.md, \"The topology, step by step\")", () => {
  it("the proxy spreads catalog and identity requests over both processes", async () => {
    const reader = await newUser("reader")
    const { key } = await cli([
      "api-key",
      "create",
      "--site",
      "site_a",
      "--scopes",
      "catalog:read",
      "--user",
      String(reader.id)
    ])
    const before = await Promise.all(topology.processes.map(async (p) => ({
      catalog: await answeredBy(p.metricsPort, "catalog"),
      identity: await answeredBy(p.metricsPort, "identity")
    })))
    for (let i = 0; i < 10; i++) {
      const works = await fetch(`${topology.catalog}/v2/catalog/works?limit=2`, {
        headers: { authorization: `Bearer ${key}` }
      })
      expect(works.status).toBe(200)
      await works.arrayBuffer()
      const discovery = await fetch(`${topology.issuer}/.well-known/openid-configuration`)
      expect(discovery.status).toBe(200)
      expect(((await discovery.json()) as { issuer: string }).issuer).toBe(topology.issuer)
    }
    for (const [i, p] of topology.processes.entries()) {
      expect(await answeredBy(p.metricsPort, "catalog"), `${p.name} catalog`).toBeGreaterThan(before[i]!.catalog)
      expect(await answeredBy(p.metricsPort, "identity"), `${p.name} identity`).toBeGreaterThan(before[i]!.identity)
    }
  })

  it("every process's /metrics parses with the reference OpenMetrics parser (OpenMetrics 1.0)", async () => {
    // Reads the exposition on stdin; prints each family's name, type and sample count, or fails.
    const parse = [
      "import sys",
      "from prometheus_client.openmetrics.parser import text_string_to_metric_families",
      "for f in text_string_to_metric_families(sys.stdin.read()):",
      "    print(f.name, f.type, len(f.samples))"
    ].join("\n")
    for (const p of topology.processes) {
      const res = await fetch(`http://127.0.0.1:${p.metricsPort}/metrics`)
      expect(res.headers.get("content-type")).toMatch(/^application\/openmetrics-text; version=1\.0\.0/)
      const families = execFileSync("/usr/bin/python3", ["-c", parse], { input: await res.text() }).toString()
        .trim().split("\n").map((line) => line.split(" "))
      const types = new Map(families.map(([name, type]) => [name, type]))
      expect(types.get("http_server_request_duration_seconds"), p.name).toBe("histogram")
      expect(types.get("cache_requests"), p.name).toBe("counter")
      expect(types.get("process_resident_memory_bytes"), p.name).toBe("gauge")
      expect(families.every(([, , samples]) => Number(samples) > 0), JSON.stringify(families)).toBe(true)
    }
  })

  it("the processes see the client's address, not the proxy's, and not what the client forged", async () => {
    const user = await newUser("address")
    // The client connects to the proxy from 127.0.0.2 and claims another address in X-Forwarded-For;
    // haproxy appends 127.0.0.2, and the processes believe only the entry their proxy wrote.
    const res = await loginFrom("127.0.0.2", topology.identity, user, { "x-forwarded-for": "198.51.100.9" })
    expect(res.status, res.text).toBe(200)
    const sessions = await query<{ ip: string }>("SELECT ip FROM sessions WHERE user_id = $1", [user.id])
    expect(sessions.map((s) => s.ip)).toEqual(["127.0.0.2"])
  })

  it("a rolling restart under steady mixed load fails nothing and loses or doubles no write", async () => {
    const actors = await loadActors(topology)
    const writer = actors.writer
    const load = mixedLoad(topology, actors, await firstRefreshToken(topology, actors), {
      writePrefix: "Deploy load",
      keyPrefix: "deploy"
    })
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const restarted: Array<string> = []
    await topology.rollingRestart((name) => restarted.push(name))
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const { acknowledged, answers, failures } = await load.stop()

    const statuses = new Map<string, number>()
    for (const a of answers) {
      const label = `${a.kind} ${a.status ?? "no answer"}`
      statuses.set(label, (statuses.get(label) ?? 0) + 1)
    }
    const longest = Math.max(0, ...answers.map((a) => a.ms))
    const total = [...statuses.values()].reduce((a, b) => a + b, 0)
    console.log(
      `rolling restart of ${restarted.join(", ")}: ${total} requests, longest ${Math.round(longest)} ms`,
      Object.fromEntries([...statuses].sort())
    )
    expect(restarted).toEqual(topology.processes.map((p) => p.name))
    expect(failures).toEqual([])
    expect(acknowledged.length).toBeGreaterThan(0)
    const rows = await query<{ display_name: string; n: number }>(
      "SELECT display_name, count(*)::int AS n FROM works WHERE display_name LIKE 'Deploy load %' GROUP BY display_name"
    )
    expect(rows.filter((r) => r.n !== 1)).toEqual([])
    expect(rows.map((r) => r.display_name).sort()).toEqual([...acknowledged].sort())
    // Every acknowledged claim is the writer's, once.
    const [claims] = await query<{ n: number }>(
      "SELECT count(*)::int AS n FROM claims c JOIN works w ON w.id = c.work_id WHERE w.display_name LIKE 'Deploy load %' AND c.owner_uid = $1",
      [String(writer.id)]
    )
    expect(claims!.n).toBe(acknowledged.length)
    expect(Redacted.value(topology.databaseReadUrl)).not.toBe(Redacted.value(topology.databaseUrl))
  }, 150_000)
})
