/**
 * The built catalog server (`node dist/src/main.js`, what `npm start` runs; `npm test` builds first)
 * as a child process over a test database: another process with nothing in memory shared with the
 * test's own servers.
 */
import { Effect } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Path from "node:path"
import { builtMain, exited, freePort } from "../../scripts/local-topology.js"
import { eventuallyAsync } from "./Eventually.js"

const root = Path.resolve(import.meta.dirname, "../..")

export { builtMain, exited, freePort } from "../../scripts/local-topology.js"

export interface BuiltServer {
  readonly child: ChildProcess
  readonly base: string
  readonly output: () => string
}

/**
 * The built catalog server over `databaseUrl`, ready (`/readyz` 200); SIGKILLed when the scope closes.
 * `env` is laid over the test settings (request budget lifted, warnings only).
 */
export const startBuiltCatalog = (databaseUrl: string, env: Record<string, string> = {}) =>
  Effect.acquireRelease(
    Effect.promise(async (): Promise<BuiltServer> => {
      const port = await freePort()
      const child = spawn(process.execPath, [builtMain], {
        cwd: root,
        env: {
          ...process.env,
          DATABASE_URL: databaseUrl,
          DATABASE_POOL_SIZE: "10",
          SHIORI_SERVE: "catalog",
          HOST: "127.0.0.1",
          CATALOG_PORT: String(port),
          LOG_LEVEL: "Warning",
          CATALOG_RATE_BURST: "100000",
          CATALOG_RATE_PER_SECOND: "100000",
          ...env
        },
        stdio: ["ignore", "pipe", "pipe"]
      })
      let output = ""
      child.stdout!.on("data", (d) => output += d)
      child.stderr!.on("data", (d) => output += d)
      const base = `http://127.0.0.1:${port}`
      await eventuallyAsync(async () => {
        if (child.exitCode !== null) throw new Error(`server exited: ${output}`)
        const res = await fetch(`${base}/readyz`, { signal: AbortSignal.timeout(2000) })
        await res.arrayBuffer()
        if (res.status !== 200) throw new Error(`readyz ${res.status}`)
      }, { timeoutMs: 60_000, intervalMs: 100 }).catch((e) => {
        child.kill("SIGKILL")
        throw new Error(`server not ready: ${e}\n${output}`)
      })
      return { child, base, output: () => output }
    }),
    (server) =>
      Effect.promise(async () => {
        server.child.kill("SIGKILL")
        await exited(server.child)
      })
  )
