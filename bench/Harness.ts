/**
 * Load-benchmark harness: starts processes, drives them with autocannon over loopback, and
 * prints a table. Every scenario is measured in the same run as its baseline, so results are
 * ratios on this machine, not absolute numbers from another day.
 */
import autocannon from "autocannon"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Path from "node:path"

export const root = Path.resolve(import.meta.dirname, "..")

export const settings = {
  duration: Number(process.env.BENCH_DURATION ?? 10),
  connections: Number(process.env.BENCH_CONNECTIONS ?? 32),
  warmup: Number(process.env.BENCH_WARMUP ?? 3)
}

export const freePort = () =>
  new Promise<number>((resolve) => {
    const server = Net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as Net.AddressInfo
      server.close(() => resolve(port))
    })
  })

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
        if (child.exitCode !== null) return resolve()
        child.once("exit", () => resolve())
        child.kill("SIGTERM")
      })
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
}

const summary = (name: string, result: autocannon.Result): Result => ({
  name,
  requests: result.requests.total,
  rps: result.requests.average,
  p50: result.latency.p50,
  p99: result.latency.p99,
  non2xx: result.non2xx,
  errors: result.errors + result.timeouts
})

export const load = async (name: string, target: Target, duration = settings.duration): Promise<Result> => {
  const base = new URL(target.url)
  const requests = target.requests ?? target.paths?.map((path) => ({ method: "GET" as const, path }))
  const options = {
    url: base.origin + base.pathname + base.search,
    connections: settings.connections,
    headers: target.headers ?? {},
    ...(requests ? { requests: [...requests] } : {})
  }
  await target.prepare?.("warmup")
  const warmup = summary(name, await autocannon({ ...options, duration: settings.warmup }))
  await target.prepare?.("measured", warmup)
  return summary(name, await autocannon({ ...options, duration }))
}

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
