/**
 * `npx tsx bench/StackAB.ts <label>=<worktree> ...`: what the catalog's request stack costs on a
 * replayed answer, for several builds in one run on this machine. Each worktree's built server
 * (`npm run -s build` in it first) answers `GET /v2/catalog/works?limit=20` with an API key from
 * its read cache, beside the bare HttpApi endpoint (baseline/BareHttpApi.ts) serving the same
 * bytes (`BENCH_AB_PATH` asks for another path, `BENCH_AB_CACHE_MB=0` turns the read cache off so that
 * every request computes on the database); the targets are measured in turn, `BENCH_AB_ROUNDS` (3) times, so a change in the
 * machine's load falls on every build alike. Prints the median req/s, the server's CPU per request
 * and the ratio to the bare endpoint.
 *
 * The catalog is `bench/.data-<BENCH_PROFILE_WORKS>` (seeded by bench/ProfileStack.ts), copied once
 * per build so that the servers run side by side.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort, load, ownCpu, type Proc, type Result, root, settings, settle, startProcess } from "./Harness.js"

const builds = process.argv.slice(2).map((arg) => {
  const [label, dir] = arg.split("=")
  return { label: label!, dir: Path.resolve(dir!) }
})
if (builds.length === 0) {
  console.error("usage: npx tsx bench/StackAB.ts <label>=<worktree> ...")
  process.exit(2)
}
const rounds = Number(process.env.BENCH_AB_ROUNDS ?? 3)
const works = Number(process.env.BENCH_PROFILE_WORKS ?? 20_000)
const seeded = Path.join(root, "bench", `.data-${works}`)
if (!Fs.existsSync(seeded)) throw new Error(`${seeded} is missing: run bench/ProfileStack.ts once`)
const path = process.env.BENCH_AB_PATH ?? "/v2/catalog/works?limit=20"
/** `CATALOG_CACHE_MB` of the servers: `0` makes every request compute (and reach the database). */
const cacheMb = process.env.BENCH_AB_CACHE_MB
const scratch = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-stack-ab-"))
// The database runs as `postgres` when we are root (platform/EmbeddedPostgres.ts): it must reach its copy.
Fs.chmodSync(scratch, 0o755)

interface Served {
  readonly label: string
  readonly url: string
  readonly headers: Record<string, string>
  readonly proc: Proc
}

const served: Array<Served> = []
try {
  for (const build of builds) {
    const dataDir = Path.join(scratch, build.label)
    // `cp -a` keeps the cluster's owner and modes, which PostgreSQL insists on.
    execFileSync("cp", ["-a", seeded, dataDir])
    const port = await freePort()
    const env = {
      SHIORI_DATA_DIR: dataDir,
      EMBEDDED_PG_PORT: String(await freePort()),
      CATALOG_PORT: String(port),
      IDENTITY_PORT: String(await freePort()),
      SHIORI_SERVE: "catalog",
      SHIORI_DEMO_WORKS: "0",
      ...(cacheMb === undefined ? {} : { CATALOG_CACHE_MB: cacheMb }),
      CATALOG_RATE_BURST: "1000000000",
      CATALOG_RATE_PER_SECOND: "1000000000"
    }
    const proc = await startProcess(Path.join(build.dir, "dist/src/main.js"), env, `http://127.0.0.1:${port}/readyz`)
    const created = execFileSync(
      process.execPath,
      [
        Path.join(build.dir, "dist/src/cli/main.js"),
        "api-key",
        "create",
        "--site",
        "bench",
        "--scopes",
        "catalog:read",
        "--json"
      ],
      { cwd: build.dir, env: { ...process.env, LOG_LEVEL: "Warning", ...env } }
    ).toString()
    const key = (JSON.parse(created) as { key: string }).key
    served.push({
      label: build.label,
      url: `http://127.0.0.1:${port}`,
      headers: { authorization: `Bearer ${key}` },
      proc
    })
  }
  const first = served[0]!
  const stored = await fetch(`${first.url}${path}`, { headers: first.headers })
  const bodyFile = Path.join(scratch, "body.json")
  Fs.writeFileSync(bodyFile, Buffer.from(await stored.arrayBuffer()))
  const barePort = await freePort()
  const bare = await startProcess(
    "dist/bench/baseline/BareHttpApi.js",
    { PORT: String(barePort), BODY_FILE: bodyFile },
    `http://127.0.0.1:${barePort}/healthz`
  )
  served.push({ label: "bare HttpApi", url: `http://127.0.0.1:${barePort}`, headers: {}, proc: bare })
  for (const s of served) await settle(s.proc.child.pid!)

  const results = new Map<string, Array<Result>>(served.map((s) => [s.label, []]))
  for (let round = 1; round <= rounds; round++) {
    for (const s of served) {
      const result = await load(s.label, {
        url: `${s.url}${path}`,
        headers: s.headers,
        cpu: () => ({ server: ownCpu(s.proc.child.pid!) })
      })
      if (result.non2xx > 0 || result.errors > 0) throw new Error(`${s.label}: ${result.non2xx} non-2xx`)
      console.error(`round ${round} ${s.label}: ${result.rps.toFixed(0)} req/s, ${result.cpuMs?.server?.toFixed(3)} ms`)
      results.get(s.label)!.push(result)
    }
  }
  const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!
  const rps = (label: string) => median(results.get(label)!.map((r) => r.rps))
  const bareRps = rps("bare HttpApi")
  console.log(
    `${settings.connections} connections, ${settings.duration} s x ${rounds} rounds, GET ${path} (${
      Fs.statSync(bodyFile).size
    } bytes)`
  )
  console.log("| build | req/s (median) | server CPU ms/request (median) | vs bare |")
  console.log("|---|---:|---:|---:|")
  for (const s of served) {
    const cpu = median(results.get(s.label)!.map((r) => r.cpuMs?.server ?? 0))
    console.log(
      `| ${s.label} | ${rps(s.label).toFixed(0)} | ${cpu.toFixed(3)} | ${(rps(s.label) / bareRps).toFixed(2)}x |`
    )
  }
} finally {
  for (const s of served) await s.proc.stop()
  Fs.rmSync(scratch, { recursive: true, force: true })
}
