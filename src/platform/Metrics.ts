/**
 * What operators scrape: `/metrics` in the OpenMetrics text format
 * (https://github.com/prometheus/OpenMetrics/blob/main/specification/OpenMetrics.md), on a listener
 * of its own that runs only when `METRICS_PORT` is set (docs/deploying.md, "Metrics"). One per
 * process, whichever servers it runs: the public ports never answer `/metrics`.
 *
 * Measurements are effect's `Metric`s, kept in the process's default registry, so every `Metric` of
 * the code base (`catalog_replayed_responses`, ...) is exported without being listed here; what only
 * exists at scrape time (process, heap, event loop, the pools, mail outbox, database connections) is
 * read then.
 * The serializer is ours: effect prints no exposition format, and a Prometheus client library would
 * keep a second registry beside effect's. Names follow the OpenTelemetry semantic conventions
 * (https://opentelemetry.io/docs/specs/semconv/http/http-metrics/) in their Prometheus form.
 */
import { Config, Context, Effect, Fiber, Layer, Metric, Option } from "effect"
import { HttpRouter, HttpServer, HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient } from "effect/sql"
import { monitorEventLoopDelay } from "node:perf_hooks"
import { listen } from "./HttpListener.js"
import { DatabasePools, type PoolCheckout, type PoolState } from "./PoolCheckout.js"

// ---------------------------------------------------------------------------------------------
// Requests
// ---------------------------------------------------------------------------------------------

export type ServerName = "catalog" | "identity"

/** The OpenTelemetry default boundaries of `http.server.request.duration`, in seconds. */
const durationBoundaries = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10]

/** Methods kept as sent; any other is `_OTHER`, so a client cannot mint series (OpenTelemetry's rule). */
const knownMethods = new Set(["GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "CONNECT", "TRACE"])

/** `http_route` of a request no route matched (a 404, a 405): one series, whatever the path. */
export const UNMATCHED_ROUTE = ""

/**
 * One histogram per server, method, route template and status, made at its first request and kept:
 * a request looks its series up in three maps keyed by strings it already has, and allocates nothing.
 */
const requestSeries = (server: ServerName) => {
  const byMethod = new Map<string, Map<string, Map<number, Metric.Histogram<number>>>>()
  return (method: string, route: string, status: number): Metric.Histogram<number> => {
    let byRoute = byMethod.get(method)
    if (byRoute === undefined) byMethod.set(method, byRoute = new Map())
    let byStatus = byRoute.get(route)
    if (byStatus === undefined) byRoute.set(route, byStatus = new Map())
    let histogram = byStatus.get(status)
    if (histogram === undefined) {
      histogram = Metric.histogram("http_server_request_duration_seconds", {
        description: "Duration of HTTP server requests, from the request middleware to the answer.",
        boundaries: durationBoundaries,
        attributes: {
          server,
          http_request_method: method,
          http_route: route,
          http_response_status_code: String(status)
        }
      })
      byStatus.set(status, histogram)
    }
    return histogram
  }
}

/**
 * Times every request of a server and counts it by route template and status. It is router
 * middleware inside `withRequestId` (docs/life-of-a-request.md, "From the socket to the router"):
 * the router leaves the matched route (`HttpRouter.RouteContext`) in the fiber's context for the
 * rest of the request, so it is read here once the answer is known, and the route's template (never
 * the path) labels the series. A failure that escapes the stack is the platform's 500.
 */
export const withRequestMetrics = (server: ServerName) => {
  const seriesOf = requestSeries(server)
  return <E, R>(
    app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>
  ): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
    Effect.withFiber((fiber) => {
      const started = performance.now()
      // Recorded synchronously when `app` exits, with no finalizer effect to allocate and run.
      return Effect.onExitPrimitive(app, (exit) => {
        const context = fiber.context
        const method = Context.getUnsafe(context, HttpServerRequest.HttpServerRequest).method
        const route = Context.getOrUndefined(context, HttpRouter.RouteContext)?.route.path ?? UNMATCHED_ROUTE
        seriesOf(knownMethods.has(method) ? method : "_OTHER", route, exit._tag === "Success" ? exit.value.status : 500)
          .updateUnsafe((performance.now() - started) / 1000, context)
        return undefined
      })
    })
}

// ---------------------------------------------------------------------------------------------
// Caches and rate limits
// ---------------------------------------------------------------------------------------------

/**
 * The hit and miss counters of one named cache (`cache_requests_total{cache, result}`), made once
 * when the cache is: counting a lookup is a function call, with no effect to run.
 */
export const cacheCounters = (cache: string) => {
  const counter = (result: "hit" | "miss") =>
    Metric.counter("cache_requests", {
      description: "Lookups of an in-process cache, by cache and by whether the value was kept (hit).",
      incremental: true,
      attributes: { cache, result }
    })
  const hits = counter("hit")
  const misses = counter("miss")
  return {
    hit: (): void => hits.updateUnsafe(1, Context.empty()),
    miss: (): void => misses.updateUnsafe(1, Context.empty())
  } as const
}

/** The limiter of a bucket key: its first segment (`catalog:<owner>` is `catalog`). */
const limiterOf = (bucketKey: string): string => {
  const colon = bucketKey.indexOf(":")
  return colon < 0 ? bucketKey : bucketKey.slice(0, colon)
}

/** One counter per limiter, made at its first count: counting is a map lookup and a function call. */
const limiterCounter = (name: string, description: string) => {
  const counters = new Map<string, Metric.Counter<number>>()
  return (bucketKey: string): void => {
    const limiter = limiterOf(bucketKey)
    let counter = counters.get(limiter)
    if (counter === undefined) {
      counter = Metric.counter(name, { description, incremental: true, attributes: { limiter } })
      counters.set(limiter, counter)
    }
    counter.updateUnsafe(1, Context.empty())
  }
}

/**
 * Counts a request refused by a rate limit. The limiter is named by its bucket key's first segment
 * (`catalog:<owner>` is `catalog`, `login:ip:<address>` is `login`): never the rest, which names a
 * client, an account or an address.
 */
export const countRateLimitRefusal: (bucketKey: string) => void = limiterCounter(
  "rate_limit_refusals",
  "Requests refused by a rate limit or backoff, by limiter."
)

/**
 * Counts a request admitted from a process's local allowance because the shared bucket could not be
 * reached (src/platform/RateLimiter.ts, `makeLeasedBudget`; docs/deploying.md, "Limits across
 * processes and outages"), by limiter as `countRateLimitRefusal` names it.
 */
export const countRateLimitLocalAllowance: (bucketKey: string) => void = limiterCounter(
  "rate_limit_local_allowances",
  "Requests admitted from a process's local allowance while the shared bucket was unreachable, by limiter."
)

// ---------------------------------------------------------------------------------------------
// OpenMetrics text
// ---------------------------------------------------------------------------------------------

export const OPENMETRICS_CONTENT_TYPE = "application/openmetrics-text; version=1.0.0; charset=utf-8"

type Labels = Readonly<Record<string, string>>

export interface Sample {
  readonly suffix: string
  readonly labels: Labels
  readonly value: number | bigint
}

export interface Family {
  readonly name: string
  readonly type: "counter" | "gauge" | "histogram" | "summary"
  readonly help: string
  readonly samples: ReadonlyArray<Sample>
}

const escapeLabel = (value: string) => value.replace(/\\/g, "\\\\").replace(/\n/g, "\\n").replace(/"/g, "\\\"")

const formatNumber = (value: number | bigint): string =>
  typeof value === "bigint"
    ? value.toString()
    : Number.isNaN(value)
    ? "NaN"
    : value === Infinity
    ? "+Inf"
    : value === -Infinity
    ? "-Inf"
    : String(value)

/** `le` and `quantile` values in the canonical form OpenMetrics asks for: `1.0`, not `1`. */
const canonical = (value: number): string =>
  value === Infinity ? "+Inf" : Number.isInteger(value) ? value.toFixed(1) : String(value)

const formatLabels = (labels: Labels): string => {
  const keys = Object.keys(labels)
  if (keys.length === 0) return ""
  return `{${keys.map((key) => `${key}="${escapeLabel(labels[key]!)}"`).join(",")}}`
}

/** The unit a family name ends with, for `# UNIT` (OpenMetrics: the name must end with it). */
const unitOf = (name: string) => /_(seconds|bytes)$/.exec(name)?.[1]

/** The exposition: every family with its `# TYPE`, `# HELP` and `# UNIT`, then `# EOF`. */
export const renderOpenMetrics = (families: ReadonlyArray<Family>): string => {
  const lines: Array<string> = []
  for (const family of families) {
    lines.push(`# TYPE ${family.name} ${family.type}`)
    const unit = unitOf(family.name)
    if (unit !== undefined) lines.push(`# UNIT ${family.name} ${unit}`)
    lines.push(`# HELP ${family.name} ${escapeLabel(family.help)}`)
    for (const sample of family.samples) {
      lines.push(`${family.name}${sample.suffix}${formatLabels(sample.labels)} ${formatNumber(sample.value)}`)
    }
  }
  lines.push("# EOF")
  return lines.join("\n") + "\n"
}

/** effect's snapshots as families: one per metric name, its series (attribute sets) as samples. */
export const familiesOfSnapshots = (snapshots: ReadonlyArray<Metric.Metric.Snapshot>): Array<Family> => {
  const families = new Map<string, { family: Family; samples: Array<Sample> }>()
  const familyOf = (name: string, type: Family["type"], help: string | undefined) => {
    let entry = families.get(name)
    if (entry === undefined) {
      const samples: Array<Sample> = []
      entry = { family: { name, type, help: help ?? name, samples }, samples }
      families.set(name, entry)
    }
    return entry.samples
  }
  for (const snapshot of snapshots) {
    const labels: Labels = snapshot.attributes ?? {}
    switch (snapshot.type) {
      case "Counter": {
        const name = snapshot.id.replace(/_total$/, "")
        familyOf(name, "counter", snapshot.description).push({
          suffix: "_total",
          labels,
          value: snapshot.state.count
        })
        break
      }
      case "Gauge": {
        familyOf(snapshot.id, "gauge", snapshot.description).push({ suffix: "", labels, value: snapshot.state.value })
        break
      }
      case "Frequency": {
        const samples = familyOf(snapshot.id.replace(/_total$/, ""), "counter", snapshot.description)
        for (const [key, count] of snapshot.state.occurrences) {
          samples.push({ suffix: "_total", labels: { ...labels, key }, value: count })
        }
        break
      }
      case "Histogram": {
        const samples = familyOf(snapshot.id, "histogram", snapshot.description)
        // effect's buckets are cumulative already; `+Inf` is the count.
        for (const [boundary, count] of snapshot.state.buckets) {
          samples.push({ suffix: "_bucket", labels: { ...labels, le: canonical(boundary) }, value: count })
        }
        samples.push({ suffix: "_bucket", labels: { ...labels, le: "+Inf" }, value: snapshot.state.count })
        samples.push({ suffix: "_count", labels, value: snapshot.state.count })
        samples.push({ suffix: "_sum", labels, value: snapshot.state.sum })
        break
      }
      case "Summary": {
        const samples = familyOf(snapshot.id, "summary", snapshot.description)
        for (const [quantile, value] of snapshot.state.quantiles) {
          samples.push({ suffix: "", labels: { ...labels, quantile: canonical(quantile) }, value: value ?? NaN })
        }
        samples.push({ suffix: "_count", labels, value: snapshot.state.count })
        samples.push({ suffix: "_sum", labels, value: snapshot.state.sum })
        break
      }
    }
  }
  return [...families.values()].map((entry) => entry.family)
}

// ---------------------------------------------------------------------------------------------
// Read at scrape time
// ---------------------------------------------------------------------------------------------

const gauge = (name: string, help: string, value: number, labels: Labels = {}): Family => ({
  name,
  type: "gauge",
  help,
  samples: [{ suffix: "", labels, value }]
})

const counter = (name: string, help: string, value: number): Family => ({
  name,
  type: "counter",
  help,
  samples: [{ suffix: "_total", labels: {}, value }]
})

const startTimeSeconds = Math.round(performance.timeOrigin) / 1000

/** The process: CPU, memory, heap, event loop delay since the last scrape (then reset). */
const processFamilies = (loop: ReturnType<typeof monitorEventLoopDelay>): Array<Family> => {
  const cpu = process.cpuUsage()
  const memory = process.memoryUsage()
  const ns = 1e-9
  // prom-client's names, which dashboards for Node.js processes expect.
  const lag = (stat: string, help: string, nanoseconds: number) =>
    gauge(`nodejs_eventloop_lag_${stat}_seconds`, `${help} event loop delay since the last scrape.`, nanoseconds * ns)
  const delays: Array<Family> = loop.count === 0 ? [] : [
    lag("min", "Least", loop.min),
    lag("max", "Greatest", loop.max),
    lag("mean", "Mean", loop.mean),
    lag("p50", "Median", loop.percentile(50)),
    lag("p90", "90th percentile of the", loop.percentile(90)),
    lag("p99", "99th percentile of the", loop.percentile(99))
  ]
  loop.reset()
  return [
    counter("process_cpu_user_seconds", "User CPU time spent by the process.", cpu.user / 1e6),
    counter("process_cpu_system_seconds", "System CPU time spent by the process.", cpu.system / 1e6),
    gauge("process_start_time_seconds", "Start of the process, in seconds since the Unix epoch.", startTimeSeconds),
    gauge("process_resident_memory_bytes", "Resident memory of the process.", memory.rss),
    gauge("nodejs_heap_size_used_bytes", "V8 heap in use.", memory.heapUsed),
    gauge("nodejs_heap_size_total_bytes", "V8 heap allocated.", memory.heapTotal),
    gauge("nodejs_external_memory_bytes", "Memory of C++ objects bound to JavaScript objects.", memory.external),
    ...delays
  ]
}

/**
 * This process's pools (src/platform/PoolCheckout.ts), as they are at the scrape: connections held by
 * a statement or a transaction (`used`) and open without one (`idle`), checkouts still waiting for a
 * connection, and each pool's size.
 */
const poolFamilies = (pools: ReadonlyArray<PoolCheckout>): Array<Family> => {
  if (pools.length === 0) return []
  const states = pools.map((pool) => pool.state())
  const poolLabel = (state: PoolState) => ({ db_client_connection_pool_name: state.pool })
  return [
    {
      name: "db_client_connection_count",
      type: "gauge",
      help: "Connections of this process's pool, by state (used: held by a statement or a transaction).",
      samples: states.flatMap((state) => [
        {
          suffix: "",
          labels: { ...poolLabel(state), db_client_connection_state: "used" },
          value: state.used
        },
        ...(state.idle === undefined ? [] : [{
          suffix: "",
          labels: { ...poolLabel(state), db_client_connection_state: "idle" },
          value: state.idle
        }])
      ])
    },
    {
      name: "db_client_connection_pending_requests",
      type: "gauge",
      help: "Statements and transactions waiting for a connection of the pool.",
      samples: states.map((state) => ({ suffix: "", labels: poolLabel(state), value: state.pending }))
    },
    {
      name: "db_client_connection_max",
      type: "gauge",
      help: "Connections the pool may open (DATABASE_POOL_SIZE, DATABASE_READ_POOL_SIZE).",
      samples: states.map((state) => ({ suffix: "", labels: poolLabel(state), value: state.max }))
    }
  ]
}

/** How long a scrape waits for the database before answering without its gauges. */
const DATABASE_WAIT = "1 second"

/**
 * The gauges PostgreSQL answers, in one statement: messages waiting in the mail outbox, and the
 * connections of this database's `shiori` sessions by state, as PostgreSQL sees them: every process
 * of the deployment (this process's own pools are `poolFamilies`).
 * The statement runs detached: a scrape that stops waiting does not cancel it (src/platform/HttpListener.ts
 * says why a cancel is avoided), and a database that is down leaves the rest of the answer intact.
 */
const databaseFamilies = (sql: SqlClient.SqlClient) =>
  Effect.gen(function*() {
    const query = sql<{ outbox: number; active: number; idle: number; idle_in_transaction: number }>`
      SELECT
        (SELECT count(*) FROM mail_outbox WHERE sent_at IS NULL AND failed_at IS NULL)::int AS outbox,
        count(*) FILTER (WHERE state = 'active')::int AS active,
        count(*) FILTER (WHERE state = 'idle')::int AS idle,
        count(*) FILTER (WHERE state LIKE 'idle in transaction%')::int AS idle_in_transaction
      FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = 'shiori'
    `
    const fiber = yield* Effect.forkDetach(query)
    const rows = yield* Fiber.join(fiber).pipe(Effect.timeoutOption(DATABASE_WAIT), Effect.option)
    const row = Option.flatten(rows).pipe(Option.flatMap((found) => Option.fromNullishOr(found[0])))
    if (Option.isNone(row)) {
      return [gauge("shiori_metrics_database_up", "Whether the database answered this scrape in time.", 0)]
    }
    const { active, idle, idle_in_transaction, outbox } = row.value
    const connections = "Connections of shiori sessions to this database, by state (pg_stat_activity)."
    return [
      gauge("shiori_metrics_database_up", "Whether the database answered this scrape in time.", 1),
      gauge("shiori_mail_outbox_messages", "Messages in the mail outbox neither sent nor failed for good.", outbox),
      {
        name: "shiori_db_connections",
        type: "gauge",
        help: connections,
        samples: [
          { suffix: "", labels: { state: "active" }, value: active },
          { suffix: "", labels: { state: "idle" }, value: idle },
          { suffix: "", labels: { state: "idle_in_transaction" }, value: idle_in_transaction }
        ]
      } satisfies Family
    ]
  })

/** `GET /metrics`: everything above, serialized. */
const scrape = (
  sql: SqlClient.SqlClient,
  pools: ReadonlyArray<PoolCheckout>,
  loop: ReturnType<typeof monitorEventLoopDelay>
) =>
  Effect.gen(function*() {
    // The pools as the scrape finds them, before its own statement takes a connection.
    const pooled = poolFamilies(pools)
    const database = yield* databaseFamilies(sql)
    const recorded = familiesOfSnapshots(yield* Metric.snapshot)
    const families = [...recorded, ...processFamilies(loop), ...pooled, ...database]
    return HttpServerResponse.text(renderOpenMetrics(families), {
      contentType: OPENMETRICS_CONTENT_TYPE
    })
  })

/** The metrics application, without its socket: `GET /metrics`, and 404 for anything else. */
export const MetricsHttpLive = Layer.unwrap(
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const pools = yield* DatabasePools
    const loop = monitorEventLoopDelay({ resolution: 10 })
    loop.enable()
    yield* Effect.addFinalizer(() => Effect.sync(() => loop.disable()))
    return HttpRouter.serve(HttpRouter.add("GET", "/metrics", scrape(sql, pools, loop)), {
      disableLogger: true,
      disableListenLog: true
    })
  })
)

/**
 * `METRICS_PORT` (unset: no metrics listener) on `METRICS_HOST` (default 127.0.0.1): the scrape
 * endpoint is for the operator's Prometheus, not for the public, so it is off unless asked for and
 * on loopback unless told otherwise.
 */
export const MetricsConfig = Config.all({
  port: Config.option(Config.Port("METRICS_PORT")),
  host: Config.String("METRICS_HOST").pipe(Config.withDefault("127.0.0.1"))
})

export const MetricsServerLive = Layer.unwrap(
  Effect.map(MetricsConfig, ({ host, port }) =>
    Option.match(port, {
      onNone: () => Layer.empty,
      onSome: (port) => listen(HttpServer.withLogAddress(MetricsHttpLive), { port, host })
    }))
)
