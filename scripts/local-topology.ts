/**
 * The deployment topology of docs/deploying.md ("The topology, step by step") on loopback: a
 * PostgreSQL primary and its streaming replica (src/platform/ReplicatedPostgres.ts), several service
 * processes (`node dist/src/main.js`, SHIORI_SERVE=all) and haproxy in front of them
 * (deploy/haproxy.cfg.template), plus the rolling restart an operator runs on every deploy.
 * scripts/deploy-local.ts runs it from the command line; test/deploy/Topology.test.ts drives it.
 */
import { Effect, Redacted } from "effect"
import { type ChildProcess, spawn } from "node:child_process"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"
import { ensureDatabase } from "../src/platform/Database.js"
import { startReplicatedPostgres } from "../src/platform/ReplicatedPostgres.js"

const root = Path.resolve(import.meta.dirname, "..")
/** The built service (`npm run build`), what `npm start` runs. */
export const builtMain = Path.join(root, "dist/src/main.js")
const HOST = "127.0.0.1"

export interface TopologyOptions {
  /** Service processes (one per core, docs/deploying.md); 2 unless given. */
  readonly processes?: number
  /** The proxy's ports; 0 or unset picks free ones. */
  readonly catalogPort?: number
  readonly identityPort?: number
  /** Works of the demo catalog the first process loads (SHIORI_DEMO_WORKS); 200 unless given. */
  readonly demoWorks?: number
  /** Laid over every process's environment (rate limits for a load test, LOG_LEVEL, ...). */
  readonly env?: Readonly<Record<string, string>>
  readonly log?: (line: string) => void
}

export interface ServiceProcess {
  readonly name: string
  readonly catalogPort: number
  readonly identityPort: number
  readonly metricsPort: number
  /** The running child (another one after a restart). */
  readonly child: () => ChildProcess
  readonly output: () => string
}

export interface Topology {
  /** The proxy's catalog and identity addresses, what clients use. */
  readonly catalog: string
  readonly identity: string
  readonly issuer: string
  readonly databaseUrl: Redacted.Redacted
  readonly databaseReadUrl: Redacted.Redacted
  /** The environment every process shares (secret, database, proxy settings). */
  readonly env: Readonly<Record<string, string>>
  readonly processes: ReadonlyArray<ServiceProcess>
  /** `show stat` of haproxy: `backend/server` -> status (`UP`, `DOWN`, ...). */
  readonly proxyStatus: () => Promise<Map<string, string>>
  /** Restarts the processes one at a time; see `restartProcess`. */
  readonly rollingRestart: (onEach?: (name: string) => void) => Promise<void>
}

/** A TCP port nothing listens on now (for a server about to start). */
export const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = Net.createServer()
    server.once("error", reject)
    server.listen(0, HOST, () => {
      const { port } = server.address() as Net.AddressInfo
      server.close(() => resolve(port))
    })
  })

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Resolves once `child` has exited (at once if it has). */
export const exited = (child: ChildProcess) =>
  new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve()
    else child.once("exit", () => resolve())
  })

/** Polls `check` every 100 ms until it answers true, up to `timeoutMs`. */
const until = async (what: string, timeoutMs: number, check: () => Promise<boolean>) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return
    await sleep(100)
  }
  throw new Error(`timed out waiting for ${what}`)
}

/** One command on haproxy's stats socket; answers its reply. */
const statsCommand = (socket: string, command: string) =>
  new Promise<string>((resolve, reject) => {
    const connection = Net.createConnection(socket)
    let reply = ""
    connection.setEncoding("utf8")
    connection.on("data", (chunk: string) => reply += chunk)
    connection.on("end", () => resolve(reply))
    connection.on("error", reject)
    connection.end(`${command}\n`)
  })

/** The haproxy configuration for `servers`, from deploy/haproxy.cfg.template. */
export const haproxyConfig = (input: {
  readonly statsSocket: string
  readonly catalogPort: number
  readonly identityPort: number
  readonly servers: ReadonlyArray<
    { readonly name: string; readonly catalogPort: number; readonly identityPort: number }
  >
}) => {
  const template = Fs.readFileSync(Path.join(root, "deploy/haproxy.cfg.template"), "utf8")
  // Each process checked, and again as an unchecked backup (the template says why).
  const lines = (port: (s: (typeof input.servers)[number]) => number) =>
    input.servers.flatMap((s) => [
      `  server ${s.name} ${HOST}:${port(s)}`,
      `  server ${s.name}-backup ${HOST}:${port(s)} backup no-check`
    ]).join("\n")
  const fields: Record<string, string> = {
    HOST,
    STATS_SOCKET: input.statsSocket,
    CATALOG_PORT: String(input.catalogPort),
    IDENTITY_PORT: String(input.identityPort),
    CATALOG_SERVERS: lines((s) => s.catalogPort),
    IDENTITY_SERVERS: lines((s) => s.identityPort),
    CATALOG_503: Path.join(root, "deploy/catalog-503.http"),
    IDENTITY_503: Path.join(root, "deploy/identity-503.http")
  }
  return template.replace(/\{\{([A-Z0-9_]+)\}\}/g, (_, name: string) => fields[name]!)
}

/**
 * The topology, for the scope's lifetime: stopped (processes, then haproxy, then the databases)
 * when the scope closes. Processes are started one at a time until the first is ready, since only
 * the first applies the migrations and loads the demo catalog; the others start together after it.
 */
export const startTopology = (options: TopologyOptions = {}) =>
  Effect.gen(function*() {
    const log = options.log ?? (() => {})
    const pg = yield* startReplicatedPostgres
    yield* ensureDatabase(pg.primary.url("postgres"), "shiori")
    const databaseUrl = pg.primary.url("shiori")
    const databaseReadUrl = pg.replicaUrl("shiori")

    const directory = yield* Effect.acquireRelease(
      Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-topology-"))),
      (dir) => Effect.sync(() => Fs.rmSync(dir, { recursive: true, force: true }))
    )
    const catalogPort = options.catalogPort || (yield* Effect.promise(freePort))
    const identityPort = options.identityPort || (yield* Effect.promise(freePort))
    const catalog = `http://${HOST}:${catalogPort}`
    const identity = `http://${HOST}:${identityPort}`
    const issuer = `${identity}/api/v1`
    const env: Record<string, string> = {
      SHIORI_SERVE: "all",
      HOST,
      // One secret for every process: what one signs, the others verify.
      SHIORI_SECRET: Crypto.randomBytes(48).toString("base64"),
      DATABASE_URL: Redacted.value(databaseUrl),
      DATABASE_READ_URL: Redacted.value(databaseReadUrl),
      DATABASE_POOL_SIZE: "10",
      TRUSTED_PROXIES: HOST,
      IDENTITY_ISSUER: issuer,
      // The media files are shared by every process.
      SHIORI_DATA_DIR: Path.join(directory, "data"),
      LOG_LEVEL: "Warning",
      ...options.env
    }

    const count = options.processes ?? 2
    const slots: Array<{ name: string; catalogPort: number; identityPort: number; metricsPort: number }> = []
    for (let i = 1; i <= count; i++) {
      slots.push({
        name: `shiori${i}`,
        catalogPort: yield* Effect.promise(freePort),
        identityPort: yield* Effect.promise(freePort),
        metricsPort: yield* Effect.promise(freePort)
      })
    }

    const children = new Map<string, ChildProcess>()
    const outputs = new Map<string, string>()
    const spawnProcess = (slot: (typeof slots)[number], demoWorks: number) => {
      const child = spawn(process.execPath, [builtMain], {
        cwd: root,
        env: {
          ...process.env,
          ...env,
          CATALOG_PORT: String(slot.catalogPort),
          IDENTITY_PORT: String(slot.identityPort),
          METRICS_PORT: String(slot.metricsPort),
          SHIORI_DEMO_WORKS: String(demoWorks)
        },
        stdio: ["ignore", "pipe", "pipe"]
      })
      const keep = (d: Buffer) => {
        outputs.set(slot.name, ((outputs.get(slot.name) ?? "") + d.toString()).slice(-20_000))
        for (const line of d.toString().split("\n")) if (line.trim()) log(`[${slot.name}] ${line}`)
      }
      child.stdout!.on("data", keep)
      child.stderr!.on("data", keep)
      children.set(slot.name, child)
      return child
    }
    const ready = (slot: (typeof slots)[number]) =>
      until(`${slot.name} ready`, 120_000, async () => {
        const child = children.get(slot.name)!
        if (child.exitCode !== null) throw new Error(`${slot.name} exited: ${outputs.get(slot.name)}`)
        const answers = await Promise.all([slot.catalogPort, slot.identityPort].map(async (port) => {
          const res = await fetch(`http://${HOST}:${port}/readyz`, { signal: AbortSignal.timeout(2000) })
          await res.arrayBuffer()
          return res.status === 200
        }))
        return answers.every(Boolean)
      })
    const stopAll = Effect.promise(() =>
      Promise.all([...children.values()].map((child) => {
        child.kill("SIGTERM")
        return exited(child)
      }))
    )
    yield* Effect.addFinalizer(() => stopAll)
    yield* Effect.promise(async () => {
      spawnProcess(slots[0]!, options.demoWorks ?? 200)
      await ready(slots[0]!)
      for (const slot of slots.slice(1)) spawnProcess(slot, 0)
      await Promise.all(slots.slice(1).map(ready))
    })

    const statsSocket = Path.join(directory, "haproxy.sock")
    const config = Path.join(directory, "haproxy.cfg")
    Fs.writeFileSync(config, haproxyConfig({ statsSocket, catalogPort, identityPort, servers: slots }))
    const haproxy = yield* Effect.acquireRelease(
      Effect.sync(() => {
        let output = ""
        const child = spawn("haproxy", ["-db", "-f", config], { stdio: ["ignore", "pipe", "pipe"] })
        child.stdout!.on("data", (d) => output += d)
        child.stderr!.on("data", (d) => output += d)
        return { child, output: () => output }
      }),
      ({ child }) =>
        Effect.promise(() => {
          child.kill("SIGTERM")
          return exited(child)
        })
    )
    const proxyStatus = async () => {
      const csv = await statsCommand(statsSocket, "show stat")
      const status = new Map<string, string>()
      for (const line of csv.split("\n")) {
        const [backend, server, ...rest] = line.split(",")
        if (backend && server && !line.startsWith("#")) status.set(`${backend}/${server}`, rest[15] ?? "")
      }
      return status
    }
    const inRotation = (name: string) =>
      until(`${name} up in haproxy`, 60_000, async () => {
        if (haproxy.child.exitCode !== null) throw new Error(`haproxy exited: ${haproxy.output()}`)
        const status = await proxyStatus()
        return status.get(`catalog/${name}`) === "UP" && status.get(`identity/${name}`) === "UP"
      })
    yield* Effect.promise(() => Promise.all(slots.map((slot) => inRotation(slot.name))))

    /**
     * SIGTERM (the process stops accepting connections, so haproxy's next check fails and it takes
     * the process out of rotation, and drains the requests it has), wait for it to exit, start it
     * again, wait until it is ready and haproxy has it back in rotation.
     */
    const restartProcess = async (slot: (typeof slots)[number]) => {
      const old = children.get(slot.name)!
      old.kill("SIGTERM")
      await exited(old)
      spawnProcess(slot, 0)
      await ready(slot)
      await inRotation(slot.name)
    }
    const rollingRestart = async (onEach?: (name: string) => void) => {
      for (const slot of slots) {
        await restartProcess(slot)
        onEach?.(slot.name)
      }
    }

    return {
      catalog,
      identity,
      issuer,
      databaseUrl,
      databaseReadUrl,
      env,
      processes: slots.map((slot) => ({
        ...slot,
        child: () => children.get(slot.name)!,
        output: () => outputs.get(slot.name) ?? ""
      })),
      proxyStatus,
      rollingRestart
    } satisfies Topology
  })
