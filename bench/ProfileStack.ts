/**
 * `npm run -s build && npx tsx bench/ProfileStack.ts <profile-dir>`: a CPU profile of the catalog
 * server answering works lists (limit=20) from its read cache through the whole request stack, for
 * bench/ProfileSummary.ts. Every URL is new (`&_=<n>`, a parameter the list ignores): the read cache
 * answers each one (same decoded parameters), inside the stack like every request. The profile covers the server's whole life, so the
 * catalog is small (`BENCH_PROFILE_WORKS`, 20000: start-up and the facet copy are a fraction of a
 * second); it is seeded into `bench/.data-<n>` when missing. The suite's duration and connections.
 */
import autocannon from "autocannon"
import { execFileSync } from "node:child_process"
import * as Path from "node:path"
import { freePort, root, settings, settle, startProcess } from "./Harness.js"

const profileDir = Path.resolve(process.argv[2] ?? "bench/results/profiles")
const works = Number(process.env.BENCH_PROFILE_WORKS ?? 20_000)
const dataDir = Path.join(root, "bench", `.data-${works}`)
const port = await freePort()
const env = {
  SHIORI_DATA_DIR: dataDir,
  EMBEDDED_PG_PORT: String(await freePort()),
  CATALOG_PORT: String(port),
  IDENTITY_PORT: String(await freePort()),
  SHIORI_SERVE: "catalog",
  SHIORI_DEMO_WORKS: "0",
  CATALOG_RATE_BURST: "1000000000",
  CATALOG_RATE_PER_SECOND: "1000000000"
}
const cli = (args: ReadonlyArray<string>) =>
  execFileSync(process.execPath, ["dist/src/cli/main.js", ...args, "--json"], {
    cwd: root,
    env: { ...process.env, LOG_LEVEL: "Warning", ...env }
  }).toString()
// The seed refuses a catalog that has works, so this is a no-op after the first run.
cli(["seed", "--works", String(works)])
// Only the server is profiled.
process.env.BENCH_NODE_ARGS = `--cpu-prof --cpu-prof-dir=${profileDir}`
const server = await startProcess("dist/src/main.js", env, `http://127.0.0.1:${port}/readyz`)
try {
  await settle(server.child.pid!)
  const created = execFileSync(
    process.execPath,
    ["dist/src/cli/main.js", "api-key", "create", "--site", "bench", "--scopes", "catalog:read", "--json"],
    { cwd: root, env: { ...process.env, LOG_LEVEL: "Warning", ...env } }
  ).toString()
  const authorization = `Bearer ${(JSON.parse(created) as { key: string }).key}`
  let n = 0
  const run = (duration: number) =>
    autocannon({
      url: `http://127.0.0.1:${port}`,
      connections: settings.connections,
      duration,
      headers: { authorization },
      requests: [{
        method: "GET",
        setupRequest: (request) => ({ ...request, path: `/v2/catalog/works?limit=20&_=${n++}` })
      }]
    })
  await run(settings.warmup)
  const result = await run(settings.duration)
  console.log(
    `works list through the stack: ${result.requests.average.toFixed(0)} req/s, p99 ${result.latency.p99} ms, ` +
      `non-2xx ${result.non2xx}; profile in ${profileDir}`
  )
} finally {
  await server.stop()
}
