/**
 * Issue 2 point 2, black box: the built server (`npm start` runs `node dist/src/main.js` after
 * building) comes up on a fresh data directory with no database installed, answers /readyz on both
 * ports within 30 s, drains in-flight requests on SIGTERM, stops its embedded PostgreSQL, and
 * reuses the data on the next start.
 */
import { describe, expect, it } from "@effect/vitest"
import { type ChildProcess, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { runCli } from "../support/Cli.js"

const root = Path.resolve(import.meta.dirname, "../..")

const freePort = () =>
  new Promise<number>((resolve) => {
    const server = Net.createServer()
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as Net.AddressInfo
      server.close(() => resolve(port))
    })
  })

const start = (env: Record<string, string>) => {
  const child = spawn(process.execPath, [Path.join(root, "dist/src/main.js")], {
    cwd: root,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (d) => output += d)
  child.stderr!.on("data", (d) => output += d)
  return { child, output: () => output }
}

const waitReady = async (urls: ReadonlyArray<string>, deadline: number) => {
  for (;;) {
    // Like a load balancer's probe: a probe that does not answer within 2 s counts as not ready.
    const ok = await Promise.all(
      urls.map((u) => fetch(u, { signal: AbortSignal.timeout(2000) }).then((r) => r.status === 200, () => false))
    )
    if (ok.every(Boolean)) return
    if (Date.now() > deadline) throw new Error("not ready in time")
    await new Promise((r) => setTimeout(r, 100))
  }
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((resolve) => {
    if (child.exitCode !== null) resolve(child.exitCode)
    else child.once("exit", (code) => resolve(code))
  })

const postmasterAlive = (dataDir: string) => {
  const pidFile = Path.join(dataDir, "postgres", "postmaster.pid")
  if (!Fs.existsSync(pidFile)) return false
  try {
    process.kill(Number(Fs.readFileSync(pidFile, "utf8").split("\n")[0]), 0)
    return true
  } catch {
    return false
  }
}

describe("npm start on a fresh machine (issue 2 point 2)", () => {
  it(
    "starts within 30 s, drains on SIGTERM, stops the database, and reuses the data",
    { timeout: 420_000 },
    async () => {
      const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-e2e-"))
      const env = {
        SHIORI_DATA_DIR: dataDir,
        CATALOG_PORT: String(await freePort()),
        IDENTITY_PORT: String(await freePort()),
        DATABASE_URL: "",
        LOG_LEVEL: "Info"
      }
      delete (env as any).DATABASE_URL
      const catalog = `http://127.0.0.1:${env.CATALOG_PORT}`
      const identity = `http://127.0.0.1:${env.IDENTITY_PORT}`
      try {
        const began = Date.now()
        const first = start(env)
        await waitReady([`${catalog}/readyz`, `${identity}/readyz`], began + 30_000).catch((e) => {
          throw new Error(`${e.message}\n${first.output()}`)
        })
        const startupMs = Date.now() - began
        console.log(`fresh start to /readyz on both ports: ${startupMs} ms`)
        expect(startupMs).toBeLessThan(30_000)

        // The CLI finds the running embedded cluster through the data directory.
        const created = await runCli(["api-key", "create", "--site", "e2e", "--scopes", "catalog:read", "--json"], {
          SHIORI_DATA_DIR: dataDir
        })
        expect(created.code, created.stderr).toBe(0)
        const { key } = JSON.parse(created.stdout) as { key: string }
        const headers = { authorization: `Bearer ${key}` }

        // Load while SIGTERM arrives: every request that got an answer got a whole 200.
        let stop = false
        const statuses: Array<number> = []
        const workers = Array.from({ length: 16 }, async () => {
          while (!stop) {
            try {
              const res = await fetch(`${catalog}/v2/credential`, { headers })
              await res.json()
              statuses.push(res.status)
            } catch {
              // Refused once the listener is closed: not an in-flight request.
            }
          }
        })
        await new Promise((r) => setTimeout(r, 400))
        first.child.kill("SIGTERM")
        const code = await exited(first.child)
        stop = true
        await Promise.all(workers)
        expect(code, first.output()).toBe(0)
        expect(statuses.length).toBeGreaterThan(10)
        expect(statuses.filter((s) => s !== 200)).toEqual([])
        expect(postmasterAlive(dataDir)).toBe(false)

        // Second start: same data, so the key issued before still works.
        const second = start(env)
        await waitReady([`${catalog}/readyz`, `${identity}/readyz`], Date.now() + 30_000)
        const again = await fetch(`${catalog}/v2/credential`, { headers })
        expect(again.status).toBe(200)
        second.child.kill("SIGTERM")
        expect(await exited(second.child)).toBe(0)
        expect(postmasterAlive(dataDir)).toBe(false)
      } finally {
        Fs.rmSync(dataDir, { recursive: true, force: true })
      }
    }
  )
})
