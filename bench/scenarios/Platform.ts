/**
 * Platform overhead: what our stack (request id, problem middleware, credential middleware with
 * its cache, span per request) costs, against plain node:http answering the same JSON.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort, load, root, startProcess, table } from "../Harness.js"
import { unlimitedBudget } from "./Catalog.js"

export const platform = async (): Promise<string> => {
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-bench-platform-"))
  const port = await freePort()
  const env = {
    SHIORI_DATA_DIR: dataDir,
    CATALOG_PORT: String(port),
    IDENTITY_PORT: String(await freePort()),
    SHIORI_SERVE: "catalog",
    SHIORI_DEMO_WORKS: "0",
    // The request budget is spent on every request but set above what one key sends here, so the
    // rows measure answers, not 429s.
    ...unlimitedBudget
  }
  const server = await startProcess("dist/src/main.js", env, `http://127.0.0.1:${port}/readyz`)
  const basePort = await freePort()
  const base = await startProcess(
    "dist/bench/baseline/Health.js",
    { PORT: String(basePort) },
    `http://127.0.0.1:${basePort}/healthz`
  )
  try {
    const created = execFileSync(
      process.execPath,
      ["dist/src/cli/main.js", "api-key", "create", "--site", "bench", "--scopes", "catalog:read", "--json"],
      { cwd: root, env: { ...process.env, ...env } }
    ).toString()
    const headers = { authorization: `Bearer ${(JSON.parse(created) as { key: string }).key}` }
    const b1 = await load("baseline: node:http /healthz", { url: `http://127.0.0.1:${basePort}/healthz` })
    const s1 = await load("shiori /healthz", { url: `http://127.0.0.1:${port}/healthz` })
    const b2 = await load("baseline: node:http /v2/credential", {
      url: `http://127.0.0.1:${basePort}/v2/credential`,
      headers
    })
    const s2 = await load("shiori /v2/credential (API key)", { url: `http://127.0.0.1:${port}/v2/credential`, headers })
    const rss = server.rssMb()
    return [
      "## Platform overhead (no database work per request)",
      table([
        b1,
        { ...s1, ratio: `${(s1.rps / b1.rps).toFixed(2)}x` },
        b2,
        { ...s2, ratio: `${(s2.rps / b2.rps).toFixed(2)}x` }
      ]),
      `Server RSS after the run: ${rss.toFixed(0)} MB.`
    ].join("\n\n")
  } finally {
    await base.stop()
    await server.stop()
    Fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
