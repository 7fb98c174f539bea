/**
 * docs/deploying.md, "The topology, step by step": a PostgreSQL primary and its replica, two service
 * processes and haproxy (deploy/haproxy.cfg.template) on loopback, brought up by the code
 * scripts/deploy-local.sh runs (scripts/local-topology.ts), and its rolling restart under load.
 * Needs haproxy on the PATH, so it runs apart from `npm test`: `npm run test:deploy`.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Redacted, Scope } from "effect"
import * as Crypto from "node:crypto"
import { startTopology, type Topology } from "../../scripts/local-topology.js"
import { withPgClient } from "../../src/platform/Database.js"
import { runCli } from "../support/Cli.js"
import { exchangeCode, getCode, login, refreshRequest, type TestClient } from "../support/IdentityServers.js"
import { loginFrom } from "../support/LocalAddress.js"
import { parseOpenMetrics } from "../support/OpenMetrics.js"

let scope: Scope.Closeable
let topology: Topology

/** An operator command on the topology's database; answers its JSON. */
const cli = async (args: ReadonlyArray<string>) => {
  const result = await runCli([...args, "--json"], { ...topology.env })
  if (result.code !== 0) throw new Error(`cli ${args.join(" ")}: ${result.stderr}`)
  return JSON.parse(result.stdout)
}

const query = <A>(text: string, params: ReadonlyArray<unknown> = []) =>
  Effect.runPromise(
    withPgClient(topology.databaseUrl, async (client) => (await client.query(text, [...params])).rows as Array<A>)
  )

const newUser = async (label: string) => {
  const email = `${label}-${Crypto.randomBytes(4).toString("hex")}@example.com`
  const password = `pw-${Crypto.randomBytes(12).toString("hex")}`
  const { id } = await cli(["user", "create", "--email", email, "--password", password, "--name", label])
  return { id: Number(id), email, password }
}

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
    const writer = await newUser("writer")
    const { key } = await cli([
      "api-key",
      "create",
      "--site",
      "site_a",
      "--scopes",
      "catalog:read,claims:write",
      "--user",
      String(writer.id)
    ])
    const client: TestClient = {
      clientId: `deploy-${Crypto.randomBytes(4).toString("hex")}`,
      secret: Crypto.randomBytes(24).toString("hex"),
      redirectUri: "https://rp.example/callback"
    }
    await cli([
      "client",
      "create",
      "--client-id",
      client.clientId,
      "--secret",
      client.secret!,
      "--redirect-uri",
      client.redirectUri,
      "--auto-consent"
    ])
    const signedIn = await login(topology.identity, writer)
    const { code } = await getCode(topology.identity, client, signedIn.accessToken, {
      scope: "openid offline_access"
    })
    const first = await exchangeCode(topology.identity, client, code)
    expect(first.status, JSON.stringify(first.body)).toBe(200)
    let refreshToken: string = first.body.refresh_token
    expect(refreshToken).toBeTypeOf("string")

    const statuses = new Map<string, number>()
    const failures: Array<string> = []
    const acknowledged: Array<string> = []
    let longest = 0
    let running = true
    const call = async (label: string, run: () => Promise<Response>) => {
      const started = performance.now()
      try {
        const res = await run()
        const text = await res.text()
        statuses.set(`${label} ${res.status}`, (statuses.get(`${label} ${res.status}`) ?? 0) + 1)
        if (res.status >= 500) failures.push(`${label}: ${res.status} ${text.slice(0, 200)}`)
        return { status: res.status, text }
      } catch (e) {
        const cause = (e as { cause?: { code?: string; message?: string } }).cause
        failures.push(`${label}: ${cause?.code ?? cause?.message ?? String(e)}`)
        return undefined
      } finally {
        longest = Math.max(longest, performance.now() - started)
      }
    }
    const bearer = { authorization: `Bearer ${key}` }
    const reader = async () => {
      while (running) {
        await call("catalog read", () => fetch(`${topology.catalog}/v2/catalog/works?limit=5`, { headers: bearer }))
        await call("discovery", () => fetch(`${topology.issuer}/.well-known/openid-configuration`))
      }
    }
    const claimWriter = async (name: string) => {
      for (let n = 1; running; n++) {
        const displayName = `Deploy load ${name} ${n}`
        const answer = await call("claim write", () =>
          fetch(`${topology.catalog}/v2/claims`, {
            method: "POST",
            headers: { ...bearer, "content-type": "application/json", "idempotency-key": `deploy-${name}-${n}` },
            body: JSON.stringify({ display_name: displayName, site_work_id: String(n) })
          }))
        if (answer?.status === 201) acknowledged.push(displayName)
        else if (answer !== undefined) failures.push(`claim write: ${answer.status} ${answer.text.slice(0, 200)}`)
      }
    }
    const refresher = async () => {
      while (running) {
        let next: string | undefined
        await call("token refresh", async () => {
          const res = await refreshRequest(topology.identity, client, refreshToken)
          next = res.body?.refresh_token
          return new Response(JSON.stringify(res.body), { status: res.status })
        })
        if (next === undefined) return failures.push("token refresh: no refresh token in the answer")
        refreshToken = next
      }
    }

    const load = Promise.all([reader(), reader(), claimWriter("a"), claimWriter("b"), refresher()])
    await new Promise((resolve) => setTimeout(resolve, 1000))
    const restarted: Array<string> = []
    await topology.rollingRestart((name) => restarted.push(name))
    await new Promise((resolve) => setTimeout(resolve, 1000))
    running = false
    await load

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
