/**
 * Black box: the built server (`npm start` runs `node dist/src/main.js` after
 * building) comes up on a fresh data directory with no database installed, answers /readyz on both
 * ports, drains in-flight requests on SIGTERM, stops its embedded PostgreSQL, and reuses the data on
 * the next start. How long the start took is reported (the test's annotation and its output), not
 * asserted: a loaded machine is slow, not broken. Each wait has a generous bound (`READY_WITHIN`), so
 * a server that never becomes ready still fails the test instead of hanging it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { inject } from "vitest"
import { quoteIdentifier, withPgClient } from "../../src/platform/Database.js"
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

/** The built server with `env` over this process's environment (`undefined` removes a variable). */
const start = (env: Record<string, string | undefined>, args: ReadonlyArray<string> = []) => {
  const merged: Record<string, string | undefined> = { ...process.env, ...env }
  for (const [name, value] of Object.entries(merged)) if (value === undefined) delete merged[name]
  const child = spawn(process.execPath, [Path.join(root, "dist/src/main.js"), ...args], {
    cwd: root,
    env: merged,
    stdio: ["ignore", "pipe", "pipe"]
  })
  let output = ""
  child.stdout!.on("data", (d) => output += d)
  child.stderr!.on("data", (d) => output += d)
  return { child, output: () => output }
}

/** How long a start may take before the test gives up on it: far beyond any healthy start. */
const READY_WITHIN = 180_000

/** Until every url answers 200; fails at once if `server` exits first, and after `READY_WITHIN` anyway. */
const waitReady = async (server: { readonly child: ChildProcess }, urls: ReadonlyArray<string>) => {
  const deadline = Date.now() + READY_WITHIN
  for (;;) {
    if (server.child.exitCode !== null || server.child.signalCode !== null) {
      throw new Error(`exited before it was ready (${server.child.exitCode ?? server.child.signalCode})`)
    }
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

/** The first log line that contains `text` (empty when none does). */
const logLine = (output: string, text: string) => output.split("\n").find((line) => line.includes(text)) ?? ""

/** The exit code, or `"running"` if the process is still up after `ms`. */
const exitedWithin = (child: ChildProcess, ms: number) =>
  Promise.race([exited(child), new Promise<"running">((r) => setTimeout(() => r("running"), ms).unref())])

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

describe("npm start on a fresh machine", () => {
  it(
    "starts, drains on SIGTERM, stops the database, and reuses the data",
    { timeout: 600_000 },
    async ({ annotate }) => {
      const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-e2e-"))
      const env = {
        SHIORI_DATA_DIR: dataDir,
        CATALOG_PORT: String(await freePort()),
        IDENTITY_PORT: String(await freePort()),
        DATABASE_URL: "",
        LOG_LEVEL: "Info",
        // The load below is 16 clients on one key as fast as answers come: the request budget
        // (docs/writing.md, "Limits") would refuse some of it with 429, which is not what this test is
        // about (every answer in flight at SIGTERM is a whole 200).
        CATALOG_RATE_BURST: "1000000",
        CATALOG_RATE_PER_SECOND: "1000000"
      }
      delete (env as any).DATABASE_URL
      const catalog = `http://127.0.0.1:${env.CATALOG_PORT}`
      const identity = `http://127.0.0.1:${env.IDENTITY_PORT}`
      try {
        const began = Date.now()
        const first = start(env)
        await waitReady(first, [`${catalog}/readyz`, `${identity}/readyz`]).catch((e) => {
          throw new Error(`${e.message}\n${first.output()}`)
        })
        // Reported, as the bench reports speed; not a pass/fail condition.
        const startup = `fresh start to /readyz on both ports: ${Date.now() - began} ms`
        console.log(startup)
        await annotate(startup)
        // The embedded database is the newcomer's: it gets the demo catalog without being asked.
        const loaded = logLine(first.output(), "demo catalog loaded")
        expect(loaded).toContain("because=\"embedded database\"")
        expect(loaded).toMatch(/ works=2000\b/)

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
        await waitReady(second, [`${catalog}/readyz`, `${identity}/readyz`]).catch((e) => {
          throw new Error(`${e.message}\n${second.output()}`)
        })
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

/** A new database on the test cluster, with nothing in it (the server applies the migrations). */
const emptyDatabase = async () => {
  const admin = inject("pgAdminUrl")
  const name = `shiori_e2e_${Crypto.randomBytes(6).toString("hex")}`
  await Effect.runPromise(
    withPgClient(Redacted.make(admin), (c) => c.query(`CREATE DATABASE ${quoteIdentifier(name)}`))
  )
  const url = new URL(admin)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    drop: () =>
      Effect.runPromise(
        withPgClient(Redacted.make(admin), (c) =>
          c.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(name)} WITH (FORCE)`))
      )
  }
}

/** What the deployment-facing settings start from: none of them set, whatever this shell has. */
const unsetDeploymentSettings = {
  HOST: undefined,
  SHIORI_SECRET: undefined,
  SHIORI_SECRET_PREVIOUS: undefined,
  SHIORI_DEMO: undefined,
  SHIORI_DEMO_WORKS: undefined,
  SHIORI_SERVE: "catalog",
  LOG_LEVEL: "Info",
  LOG_FORMAT: "logfmt"
}

/** A new catalog:read key with content limit nsfw, so `/v2/catalog/stats` counts every live work. */
const createKey = async (databaseUrl: string) => {
  const created = await runCli(
    ["api-key", "create", "--site", "e2e", "--scopes", "catalog:read", "--content-limit", "nsfw", "--json"],
    { DATABASE_URL: databaseUrl }
  )
  expect(created.code, created.stderr).toBe(0)
  return (JSON.parse(created.stdout) as { key: string }).key
}

const catalogWorks = async (catalog: string, key: string) => {
  const res = await fetch(`${catalog}/v2/catalog/stats`, { headers: { authorization: `Bearer ${key}` } })
  expect(res.status).toBe(200)
  return ((await res.json()) as { works: number }).works
}

const liveWorkCount = (databaseUrl: string) =>
  Effect.runPromise(
    withPgClient(
      Redacted.make(databaseUrl),
      (c) => c.query("SELECT count(*)::int AS n FROM works WHERE live")
    )
  ).then((r) => r.rows[0].n as number)

const stop = async (server: ReturnType<typeof start>) => {
  server.child.kill("SIGTERM")
  expect(await exited(server.child), server.output()).toBe(0)
}

describe("npm start for a real deployment: the demo catalog and SHIORI_SECRET", () => {
  it(
    "leaves an empty DATABASE_URL database empty unless --demo asks, and warns of the development secret on loopback",
    { timeout: 600_000 },
    async () => {
      const db = await emptyDatabase()
      const port = String(await freePort())
      const catalog = `http://127.0.0.1:${port}`
      const env = { ...unsetDeploymentSettings, DATABASE_URL: db.url, CATALOG_PORT: port }
      try {
        const plain = start(env)
        await waitReady(plain, [`${catalog}/readyz`]).catch((e) => {
          throw new Error(`${e.message}\n${plain.output()}`)
        })
        const key = await createKey(db.url)
        expect(await catalogWorks(catalog, key)).toBe(0)
        expect(plain.output()).toContain("demo catalog not loaded: DATABASE_URL names the database")
        expect(plain.output()).toMatch(/level=WARN .*SHIORI_SECRET is unset or the development default/)
        await stop(plain)

        const demo = start(env, ["--demo"])
        await waitReady(demo, [`${catalog}/readyz`]).catch((e) => {
          throw new Error(`${e.message}\n${demo.output()}`)
        })
        const loaded = logLine(demo.output(), "demo catalog loaded")
        expect(loaded).toContain("because=--demo")
        expect(loaded).toMatch(/ works=2000\b/)
        const works = await catalogWorks(catalog, key)
        expect(works).toBeGreaterThan(1900)
        expect(works).toBe(await liveWorkCount(db.url))
        await stop(demo)
      } finally {
        await db.drop()
      }
    }
  )

  it(
    "on HOST=0.0.0.0 refuses to start without a SHIORI_SECRET of 32+ characters and serves with one " +
      "(SHIORI_DEMO_WORKS=50 seeding its empty DATABASE_URL database)",
    { timeout: 600_000 },
    async () => {
      // Refused before any database is opened: this one does not answer.
      const unreachable = { ...unsetDeploymentSettings, HOST: "0.0.0.0", DATABASE_URL: "postgres://127.0.0.1:1/none" }
      const strong = Crypto.randomBytes(24).toString("base64")
      const refusals = [
        [undefined, undefined, "SHIORI_SECRET is unset or the development default, which is public"],
        [
          "shiori-development-secret-change-me",
          undefined,
          "SHIORI_SECRET is unset or the development default, which is public"
        ],
        ["x".repeat(31), undefined, "SHIORI_SECRET is 31 characters long, shorter than 32"],
        // A previous secret still verifies and decrypts (docs/deploying.md, "Rotating SHIORI_SECRET"):
        // it is held to the same rules.
        [
          strong,
          `${strong}x, ${"y".repeat(20)}`,
          "SHIORI_SECRET_PREVIOUS entry 2 is 20 characters long, shorter than 32"
        ],
        [
          strong,
          "shiori-development-secret-change-me",
          "SHIORI_SECRET_PREVIOUS entry 1 is the development default, which is public"
        ]
      ] as const
      await Promise.all(refusals.map(async ([secret, previous, message]) => {
        const refused = start({
          ...unreachable,
          SHIORI_SECRET: secret,
          SHIORI_SECRET_PREVIOUS: previous,
          CATALOG_PORT: String(await freePort())
        })
        const code = await exitedWithin(refused.child, READY_WITHIN)
        if (code === "running") refused.child.kill("SIGKILL")
        expect(code, refused.output()).not.toBe("running")
        expect(code, refused.output()).not.toBe(0)
        expect(refused.output()).toContain(message)
        expect(refused.output()).toContain("Refusing to start on HOST=0.0.0.0, which is not a loopback address")
      }))

      const db = await emptyDatabase()
      const port = String(await freePort())
      const catalog = `http://127.0.0.1:${port}`
      try {
        const server = start({
          ...unsetDeploymentSettings,
          HOST: "0.0.0.0",
          SHIORI_SECRET: Crypto.randomBytes(24).toString("base64"), // 32 characters
          SHIORI_DEMO_WORKS: "50",
          DATABASE_URL: db.url,
          CATALOG_PORT: port
        })
        await waitReady(server, [`${catalog}/readyz`]).catch((e) => {
          throw new Error(`${e.message}\n${server.output()}`)
        })
        const loaded = logLine(server.output(), "demo catalog loaded")
        expect(loaded).toContain("because=SHIORI_DEMO_WORKS")
        expect(loaded).toMatch(/ works=50\b/)
        expect(server.output()).not.toContain("SHIORI_SECRET")
        const works = await catalogWorks(catalog, await createKey(db.url))
        expect(works).toBeGreaterThan(45)
        expect(works).toBe(await liveWorkCount(db.url))
        await stop(server)
      } finally {
        await db.drop()
      }
    }
  )
})
