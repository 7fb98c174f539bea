/**
 * Load-benchmark harness: starts processes, drives them with autocannon over loopback, and
 * prints a table. Every scenario is measured in the same run as its baseline, so results are
 * ratios on this machine, not absolute numbers from another day.
 */
import autocannon from "autocannon"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Path from "node:path"

export const root = Path.resolve(import.meta.dirname, "..")

export const settings = {
  duration: Number(process.env.BENCH_DURATION ?? 10),
  connections: Number(process.env.BENCH_CONNECTIONS ?? 32),
  warmup: Number(process.env.BENCH_WARMUP ?? 3)
}

/**
 * autocannon appends every answer's body to a JavaScript string (`req.body += data` in its
 * pipelined-request queue) whether anything reads it or not. That decodes each chunk as UTF-8 and
 * copies the string as it grows: for a 154 KB page of Japanese titles the load generator, which
 * shares this machine's two cores with the server and PostgreSQL, spent more CPU per answer than
 * the server did, and capped every large-body row at the same rate a static `node:http` answer got.
 * The body is kept only for requests that pass it to an `onResponse`; every byte is still received,
 * parsed as HTTP and counted.
 */
const bodyQueue = createRequire(import.meta.url)("autocannon/lib/pipelinedRequestsQueue.js") as {
  prototype: {
    peek(): { req?: { onResponse?: unknown }; body: string } | undefined
    addBody(data: Buffer): void
  }
}
bodyQueue.prototype.addBody = function(data) {
  const pending = this.peek()
  if (pending !== undefined && typeof pending.req?.onResponse === "function") pending.body += data
}

export { freePort } from "../scripts/local-topology.js"

export interface Proc {
  readonly child: ChildProcess
  readonly rssMb: () => number
  readonly stop: () => Promise<void>
}

/**
 * Starts `node <script>` and waits until `readyUrl` answers 200. `BENCH_NODE_ARGS` (space-separated)
 * goes before the script, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile what is measured.
 */
export const startProcess = async (
  script: string,
  env: Record<string, string>,
  readyUrl: string,
  timeoutMs = 600_000
): Promise<Proc> => {
  const nodeArgs = process.env.BENCH_NODE_ARGS?.split(" ").filter((arg) => arg !== "") ?? []
  const child = spawn(process.execPath, [...nodeArgs, script], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: "Warning", ...env },
    stdio: ["ignore", "inherit", "inherit"]
  })
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`)
    // With a time limit: a probe sent just as the server starts listening has been seen to hang.
    const ok = await fetch(readyUrl, { signal: AbortSignal.timeout(2_000) }).then((r) => r.status === 200, () => false)
    if (ok) break
    if (Date.now() > deadline) throw new Error(`${script} not ready`)
    await new Promise((r) => setTimeout(r, 200))
  }
  return {
    child,
    rssMb: () => {
      const status = Fs.readFileSync(`/proc/${child.pid}/status`, "utf8")
      return Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024
    },
    stop: () =>
      new Promise<void>((resolve) => {
        // Ended already (a process ended by a signal has no exit code, only its signal).
        if (child.exitCode !== null || child.signalCode !== null) return resolve()
        child.once("exit", () => resolve())
        child.kill("SIGTERM")
      })
  }
}

// ---------------------------------------------------------------------------------------------
// CPU accounting: what each request costs each process, read from /proc
// ---------------------------------------------------------------------------------------------

const TICKS_PER_SECOND = 100

const statOf = (pid: number): { ppid: number; ticks: number; reaped: number } | undefined => {
  try {
    const stat = Fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    // Fields after the parenthesised command: state ppid ... utime (index 11) stime (index 12), then
    // cutime and cstime (13, 14): what its children used, once they ended and were reaped.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
    return {
      ppid: Number(fields[1]),
      ticks: Number(fields[11]) + Number(fields[12]),
      reaped: Number(fields[13]) + Number(fields[14])
    }
  } catch {
    return undefined
  }
}

/**
 * CPU seconds used so far by the descendants of `pid` (e.g. the embedded PostgreSQL of a server):
 * the live ones, and the ended ones their parents reaped (a database connection's backend).
 */
export const descendantsCpu = (pid: number): number => {
  const stats = new Map<number, { ppid: number; ticks: number; reaped: number }>()
  for (const entry of Fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue
    const stat = statOf(Number(entry))
    if (stat !== undefined) stats.set(Number(entry), stat)
  }
  const inTree = new Set([pid])
  let grew = true
  while (grew) {
    grew = false
    for (const [child, stat] of stats) {
      if (!inTree.has(child) && inTree.has(stat.ppid)) {
        inTree.add(child)
        grew = true
      }
    }
  }
  let ticks = 0
  for (const member of inTree) {
    const stat = stats.get(member)!
    if (member !== pid) ticks += stat.ticks + stat.reaped
  }
  return ticks / TICKS_PER_SECOND
}

/** CPU seconds used so far by `pid` itself. */
export const ownCpu = (pid: number) => (statOf(pid)?.ticks ?? 0) / TICKS_PER_SECOND

/**
 * Waits until `pid` and its descendants use less than a tenth of a core over a second (a server
 * loading its caches in the background), at most `limitMs`.
 */
export const settle = async (pid: number, limitMs = 60_000) => {
  const deadline = Date.now() + limitMs
  let before = ownCpu(pid) + descendantsCpu(pid)
  while (Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 1_000))
    const now = ownCpu(pid) + descendantsCpu(pid)
    if (now - before < 0.1) return
    before = now
  }
}

export interface Result {
  readonly name: string
  readonly requests: number
  readonly rps: number
  readonly p50: number
  readonly p99: number
  readonly non2xx: number
  readonly errors: number
  /**
   * Share of one core the load generator (autocannon, in this process) used in the measured phase.
   * Near 1, the row measures the load generator as much as the server (they share the cores).
   */
  readonly clientBusy: number
  /** CPU milliseconds per request in the measured phase, per process (`Target.cpu`). */
  readonly cpuMs?: Readonly<Record<string, number>>
}

export interface Target {
  readonly url: string
  readonly headers?: Record<string, string>
  /** Several paths, requested in turn (e.g. deep cursor pages). */
  readonly paths?: ReadonlyArray<string>
  /**
   * Raw autocannon requests, used as given (instead of `paths`): `setupRequest` can put a fresh
   * single-use value in each request, `onResponse` read each answer. autocannon copies them per
   * connection and resets `context` after every pass over the list, so state that must outlive one
   * request (a pool of codes, refresh-token chains) lives in the scenario, not in `context`.
   */
  readonly requests?: ReadonlyArray<autocannon.Request>
  /**
   * Runs before the warm-up and again before the measured run (e.g. to fill a pool of single-use
   * codes); before the measured run it is given the warm-up's result, to size the pool.
   */
  readonly prepare?: (phase: "warmup" | "measured", warmup?: Result) => Promise<void>
  /**
   * With `paths`: request every path once before the warm-up, so the measured phase sees each
   * path's steady state whatever the machine's speed (what the first request costs is measured
   * separately, e.g. the catalog's rows without its cache).
   */
  readonly prime?: boolean
  /** CPU seconds so far per process of interest; the result reports milliseconds per request. */
  readonly cpu?: () => Readonly<Record<string, number>>
  /** autocannon connections for this target (default `BENCH_CONNECTIONS`). */
  readonly connections?: number
}

const summary = (name: string, result: autocannon.Result, clientBusy = 0): Result => ({
  name,
  requests: result.requests.total,
  rps: result.requests.average,
  p50: result.latency.p50,
  p99: result.latency.p99,
  non2xx: result.non2xx,
  errors: result.errors + result.timeouts,
  clientBusy
})

/** Requests each of `paths` once, `concurrency` at a time. */
const primeAll = async (origin: string, paths: ReadonlyArray<string>, headers: Record<string, string>) => {
  const queue = [...new Set(paths)]
  await Promise.all(Array.from({ length: settings.connections }, async () => {
    for (let path = queue.shift(); path !== undefined; path = queue.shift()) {
      await fetch(`${origin}${path}`, { headers }).then((res) => res.arrayBuffer(), () => undefined)
    }
  }))
}

export const load = async (name: string, target: Target, duration = settings.duration): Promise<Result> => {
  const base = new URL(target.url)
  const requests = target.requests ?? target.paths?.map((path) => ({ method: "GET" as const, path }))
  const options = {
    url: base.origin + base.pathname + base.search,
    connections: target.connections ?? settings.connections,
    headers: target.headers ?? {},
    ...(requests ? { requests: [...requests] } : {})
  }
  if (target.prime === true && target.paths !== undefined) {
    await primeAll(base.origin, target.paths, target.headers ?? {})
  }
  await target.prepare?.("warmup")
  const warmup = summary(name, await autocannon({ ...options, duration: settings.warmup }))
  await target.prepare?.("measured", warmup)
  const cpuBefore = target.cpu?.()
  const clientBefore = process.cpuUsage()
  const started = process.hrtime.bigint()
  const result = await autocannon({ ...options, duration })
  const client = process.cpuUsage(clientBefore)
  const seconds = Number(process.hrtime.bigint() - started) / 1e9
  const measured = summary(name, result, (client.user + client.system) / 1e6 / seconds)
  if (cpuBefore === undefined || measured.requests === 0) return measured
  const cpuAfter = target.cpu!()
  const cpuMs: Record<string, number> = {}
  for (const [process, cpu] of Object.entries(cpuAfter)) {
    cpuMs[process] = ((cpu - (cpuBefore[process] ?? 0)) * 1000) / measured.requests
  }
  return { ...measured, cpuMs }
}

/**
 * A paced probe beside a measured run: one connection sending `rate` requests a second to `url` for
 * `duration` seconds. Its latency is how long a cheap request waits while the server is busy with
 * other work (on its event loop, or for a core).
 */
export const probe = async (name: string, url: string, duration: number, rate: number): Promise<Result> =>
  summary(name, await autocannon({ url, connections: 1, overallRate: rate, duration }))

export const table = (results: ReadonlyArray<Result & { readonly ratio?: string }>) => {
  const lines = [
    "| scenario | req/s | p50 ms | p99 ms | non-2xx | errors | vs baseline |",
    "|---|---:|---:|---:|---:|---:|---:|",
    ...results.map((r) =>
      `| ${r.name} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.errors} | ${r.ratio ?? ""} |`
    )
  ]
  return lines.join("\n")
}
