// docs/deploying.md, "Metrics": `/metrics` in the OpenMetrics text format on a listener of its own,
// off without `METRICS_PORT`; requests by route template and status for both servers, cache hits and
// misses, rate-limit refusals, the pool's connections and waits, process and database gauges.
import { describe, expect, layer } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Fs from "node:fs"
import { ApiKeys } from "../../src/catalog/auth/ApiKeys.js"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { MetricsHttpLive, OPENMETRICS_CONTENT_TYPE } from "../../src/platform/Metrics.js"
import { freePort, startBuiltCatalog } from "../support/BuiltServer.js"
import { type Family, parseOpenMetrics, sampleValue } from "../support/OpenMetrics.js"
import { TestDatabaseUrlLive } from "../support/TestDatabase.js"
import { serveOn, serverLayerOptions, testConfig, TestServers, TestServersLive } from "../support/TestServers.js"

const scrape = (base: string) =>
  Effect.promise(async () => {
    const res = await fetch(`${base}/metrics`)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe(OPENMETRICS_CONTENT_TYPE)
    return parseOpenMetrics(await res.text())
  })

const status = (url: string, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const res = await fetch(url, { headers })
    await res.arrayBuffer()
    return res.status
  })

/** How many requests of a series the histogram counted. */
const requests = (
  families: Map<string, Family>,
  server: string,
  route: string,
  code: number,
  method = "GET"
) =>
  sampleValue(families, "http_server_request_duration_seconds_count", {
    server,
    http_request_method: method,
    http_route: route,
    http_response_status_code: String(code)
  })

const cacheLookups = (families: Map<string, Family>, cache: string, result: "hit" | "miss") =>
  sampleValue(families, "cache_requests_total", { cache, result })

class MetricsUrl extends Context.Service<MetricsUrl, string>()("test/MetricsUrl") {}

// A budget of 4 requests per credential, refilled every 100 seconds: the fifth request is refused.
const BURST = 4

const MetricsFixtureLive = Layer.effect(MetricsUrl, serveOn(MetricsHttpLive)).pipe(
  Layer.provideMerge(ApiKeys.layer),
  Layer.provideMerge(TestServersLive),
  Layer.provide(testConfig({ CATALOG_RATE_BURST: String(BURST), CATALOG_RATE_PER_SECOND: "0.01" }))
)

describe("the metrics listener (docs/deploying.md, \"Metrics\")", () => {
  layer(MetricsFixtureLive, serverLayerOptions())((it) => {
    it.effect("counts requests of both servers by route template and status, cache hits and misses, refusals", () =>
      Effect.gen(function*() {
        const { catalog, identity } = yield* TestServers
        const metrics = yield* MetricsUrl
        const created = yield* (yield* ApiKeys).create({
          site: "metrics_site",
          scopes: ["catalog:read"],
          contentLimit: "nsfw",
          userId: null
        }).pipe(Effect.orDie)
        const auth = { authorization: `Bearer ${Redacted.value(created.key)}` }
        const before = yield* scrape(metrics)

        // Four requests with the key (its whole budget): a list read twice, the same list again, a
        // work that does not exist; then a fifth that the budget refuses.
        expect(yield* status(`${catalog}/v2/catalog/works?limit=1`, auth)).toBe(200)
        expect(yield* status(`${catalog}/v2/catalog/works?limit=1`, auth)).toBe(200)
        expect(yield* status(`${catalog}/v2/catalog/works?limit=1`, auth)).toBe(200)
        expect(yield* status(`${catalog}/v2/catalog/works/999999999`, auth)).toBe(404)
        expect(yield* status(`${catalog}/v2/catalog/works/999999998`, auth)).toBe(429)
        // No route at all, on each server; and a route of the identity server.
        expect(yield* status(`${catalog}/v2/no/such/route/123`)).toBe(404)
        expect(yield* status(`${identity}/no/such/route/456`)).toBe(404)
        expect(yield* status(`${identity}/healthz`)).toBe(200)
        // The public ports do not serve the metrics.
        expect(yield* status(`${catalog}/metrics`)).toBe(404)
        expect(yield* status(`${identity}/metrics`)).toBe(404)

        const after = yield* scrape(metrics)
        const moved = (route: string, code: number, server = "catalog") =>
          requests(after, server, route, code) - requests(before, server, route, code)
        expect(moved("/v2/catalog/works", 200)).toBe(3)
        // The route's template labels the series, never the path asked for.
        expect(moved("/v2/catalog/works/:id", 404)).toBe(1)
        expect(moved("/v2/catalog/works/:id", 429)).toBe(1)
        expect(moved("", 404)).toBe(2)
        expect(moved("", 404, "identity")).toBe(2)
        expect(moved("/healthz", 200, "identity")).toBe(1)
        const paths = [...after.get("http_server_request_duration_seconds")!.samples].map((s) => s.labels.http_route)
        expect(paths.filter((path) => /\/\d+(\/|$)/.test(path ?? ""))).toEqual([])

        // The stored answers: the first read computed the list, the next two were replayed.
        const moves = (cache: string, result: "hit" | "miss") =>
          cacheLookups(after, cache, result) - cacheLookups(before, cache, result)
        expect(moves("catalog_read", "miss")).toBeGreaterThanOrEqual(1)
        expect(moves("catalog_read", "hit")).toBe(2)
        // The key was looked up once, then known to the credential cache.
        expect(moves("catalog_api_keys", "miss")).toBe(1)
        expect(moves("catalog_api_keys", "hit")).toBe(BURST)

        const refusals = (families: Map<string, Family>) =>
          sampleValue(families, "rate_limit_refusals_total", { limiter: "catalog" })
        expect(refusals(after) - refusals(before)).toBe(1)

        expect(sampleValue(after, "shiori_metrics_database_up")).toBe(1)
        expect(after.get("shiori_mail_outbox_messages")?.samples).toHaveLength(1)
        expect(sampleValue(after, "shiori_db_connections", { state: "active" })).toBeGreaterThanOrEqual(1)
        // This process's pool (src/platform/PoolCheckout.ts): its size, and the reads above waited for it.
        const primary = { db_client_connection_pool_name: "primary" }
        expect(sampleValue(after, "db_client_connection_max", primary)).toBeGreaterThan(0)
        expect(after.get("db_client_connection_count")?.samples.map((s) => s.labels.db_client_connection_state).sort())
          .toEqual(["idle", "used"])
        expect(sampleValue(after, "db_client_connection_wait_time_seconds_count", primary))
          .toBeGreaterThan(sampleValue(before, "db_client_connection_wait_time_seconds_count", primary))
        expect(after.get("db_client_connection_pending_requests")?.type).toBe("gauge")
        expect(sampleValue(after, "process_resident_memory_bytes")).toBeGreaterThan(0)
        expect(sampleValue(after, "nodejs_heap_size_used_bytes")).toBeGreaterThan(0)
        expect(after.get("nodejs_eventloop_lag_p99_seconds")?.unit).toBe("seconds")
        expect(after.get("http_server_request_duration_seconds")?.type).toBe("histogram")
        expect(after.get("rate_limit_refusals")?.type).toBe("counter")
      }))

    it.effect("a scrape the database does not answer in time answers the rest, without the database gauges", () =>
      Effect.gen(function*() {
        const sql = yield* SqlClient.SqlClient
        const metrics = yield* MetricsUrl
        // The scrape's statement counts the outbox: it waits for this lock until the scrape gives up.
        const families = yield* sql.withTransaction(
          Effect.andThen(sql`LOCK TABLE mail_outbox IN ACCESS EXCLUSIVE MODE`, scrape(metrics))
        ).pipe(Effect.orDie)
        expect(sampleValue(families, "shiori_metrics_database_up")).toBe(0)
        expect(families.has("shiori_mail_outbox_messages")).toBe(false)
        expect(families.has("shiori_db_connections")).toBe(false)
        expect(sampleValue(families, "process_resident_memory_bytes")).toBeGreaterThan(0)
        expect(families.get("http_server_request_duration_seconds")?.type).toBe("histogram")
        // Once the lock is gone, the database answers the next scrape again.
        expect(sampleValue(yield* scrape(metrics), "shiori_metrics_database_up")).toBe(1)
      }))
  })
})

/** The TCP ports `pid` listens on (Linux: its socket inodes against /proc/net/tcp and tcp6). */
const listeningPorts = (pid: number): Array<number> => {
  const inodes = new Set<string>()
  for (const fd of Fs.readdirSync(`/proc/${pid}/fd`)) {
    try {
      const target = Fs.readlinkSync(`/proc/${pid}/fd/${fd}`)
      const inode = /^socket:\[(\d+)\]$/.exec(target)?.[1]
      if (inode !== undefined) inodes.add(inode)
    } catch {
      // closed meanwhile
    }
  }
  const ports = new Set<number>()
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of Fs.readFileSync(table, "utf8").split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/)
      // local address, state (0A: LISTEN), inode
      if (fields[3] === "0A" && inodes.has(fields[9]!)) ports.add(parseInt(fields[1]!.split(":")[1]!, 16))
    }
  }
  return [...ports].sort((a, b) => a - b)
}

describe("the built server's metrics listener (docs/deploying.md, \"Metrics\")", () => {
  layer(TestDatabaseUrlLive, serverLayerOptions("180 seconds"))((it) => {
    it.effect("is absent without METRICS_PORT; with it, the process listens there too and answers /metrics", () =>
      Effect.gen(function*() {
        const url = Redacted.value(yield* DatabaseUrl)
        const catalogPort = (base: string) => Number(new URL(base).port)

        const plain = yield* startBuiltCatalog(url)
        expect(listeningPorts(plain.child.pid!)).toEqual([catalogPort(plain.base)])
        expect(yield* status(`${plain.base}/metrics`)).toBe(404)

        const metricsPort = yield* Effect.promise(freePort)
        const watched = yield* startBuiltCatalog(url, { METRICS_PORT: String(metricsPort) })
        expect(listeningPorts(watched.child.pid!)).toEqual(
          [catalogPort(watched.base), metricsPort].sort((a, b) => a - b)
        )
        expect(yield* status(`${watched.base}/healthz`)).toBe(200)
        expect(yield* status(`${watched.base}/metrics`)).toBe(404)
        const families = yield* scrape(`http://127.0.0.1:${metricsPort}`)
        expect(requests(families, "catalog", "/healthz", 200)).toBeGreaterThanOrEqual(1)
        expect(requests(families, "catalog", "", 404)).toBe(1)
      }).pipe(Effect.scoped))
  })
})
