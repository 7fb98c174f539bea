/**
 * Reads that tolerate lag on a streaming read replica (`DATABASE_READ_URL`; docs/deploying.md, "A
 * read replica"). Unset, nothing here runs: `ReadRouting`'s default sends everything to the primary.
 *
 * What goes where. Everything runs on the primary except the handlers of the catalog's reads, which
 * `ReadRouting.reads` wraps once, in the catalog's credential middleware after the credential check
 * (src/catalog/auth/Authorization.ts): its GET routes other than the change feed (`/v2/changes*`,
 * whose positions and horizon are the primary's). Writes, the write runner, migrations, LISTEN, the
 * credential checks, budgets, quotas, idempotent replay and the identity server never ask, so they
 * stay on the primary.
 *
 * How. The repositories took their `SqlClient` when they were built, so a read cannot be handed
 * another client; instead the process's one client picks the pool per statement (and per
 * transaction, whose statements stay on its connection): a checkout of the replica's pool when the
 * fiber runs inside `reads` (`OnReplica`), of the primary's otherwise (src/platform/PoolCheckout.ts).
 * Caches filled by a read computed on the replica inherit that fiber's choice.
 *
 * The fence (read-your-writes, and caches that never refill from the past). The process keeps
 * `fence`, a WAL position of the primary at or past every write it knows of, and the replica's
 * replayed position, polled every `DATABASE_READ_POLL_MILLIS` (100 ms) with one tiny statement on
 * the replica's pool. `raiseFence` is called wherever the catalog's caches are emptied
 * (src/catalog/shared/CatalogChanges.ts): after this process's own write commits, at every
 * `catalog_changed` notification (delivered after the commit), and whenever LISTEN is in force again.
 * From that moment until the primary has answered `pg_current_wal_insert_lsn()` (asked after the
 * call, so at or past the commit; one statement per burst of calls), reads go to the primary; after
 * it, a read goes to the replica only once the replica has replayed up to the fence. So a read that
 * starts after a write's commit (its writer's) or after its notification (anyone's) never sees the
 * replica without it, and a cache emptied by a write is never refilled from a replica that lacks it.
 *
 * A replica that lags, pauses or dies costs nothing but load on the primary: a read goes to the
 * replica only while it answered its last poll within `DATABASE_READ_STALE_MILLIS` (1 s) and has
 * replayed the fence; a failed poll sends reads back to the primary at once, and a read that fails on
 * the replica with a database error (the replica went away mid-read, a conflict with recovery) runs
 * again on the primary. The next poll that succeeds brings reads back.
 *
 * Metrics: `database_reads_total{target}` counts the reads `reads` routed, by where they ran
 * (`replica`, or `primary` when the replica was not fresh or failed); `database_replica_lag_bytes`
 * is how far the replica's replay is behind the fence.
 */
import { type Cause, Context, Duration, Effect, Latch, Metric, Option } from "effect"
import { isSqlError } from "effect/sql/SqlError"
import { performance } from "node:perf_hooks"
import { makeCheckedClient, type PoolCheckout } from "./PoolCheckout.js"

/** `pg_stat_activity.application_name` of the replica pool's sessions (the primary's are `shiori`). */
export const READ_APPLICATION_NAME = "shiori read"

/** Whether the current fiber's statements may run on the replica (set by `reads` only). */
const OnReplica = Context.Reference<boolean>("platform/ReadReplica/OnReplica", { defaultValue: () => false })

/** Runs `effect` on the primary, also inside a read routed to the replica (a horizon of the primary's). */
export const onPrimary = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.provideService(effect, OnReplica, false)

export interface ReadRoutingShape {
  /** Runs `read` (which must not write) on the replica when it is fresh enough, else on the primary. */
  readonly reads: <A, E, R>(read: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** A write was committed or notified: no replica read until it has replayed the primary's WAL as of now. */
  readonly raiseFence: () => void
}

/** Without a replica: every read on the primary, no fence to keep. */
const primaryOnly: ReadRoutingShape = { reads: (read) => read, raiseFence: () => {} }

/** Where reads go; its default (no `DATABASE_READ_URL`) is the primary for everything. */
export const ReadRouting = Context.Reference<ReadRoutingShape>("platform/ReadRouting", {
  defaultValue: () => primaryOnly
})

/** `pg_lsn` text (`16/B374D848`) as a byte position. */
export const lsnBytes = (lsn: string): bigint => {
  const [high, low] = lsn.split("/")
  return (BigInt(`0x${high}`) << 32n) + BigInt(`0x${low}`)
}

const readsBy = (target: "replica" | "primary") =>
  Metric.counter("database_reads", {
    description: "Catalog reads that may run on the read replica, by where they ran.",
    incremental: true,
    attributes: { target }
  })
const replicaReads = readsBy("replica")
const primaryReads = readsBy("primary")
const replicaLag = Metric.gauge("database_replica_lag_bytes", {
  description: "How far the read replica's replay is behind the newest primary WAL position this process knows of."
})
const count = (metric: Metric.Metric<number, unknown>) => metric.updateUnsafe(1, Context.empty())

/** Any `SqlError` among the failures and defects of `cause`: the replica could not answer the read. */
const failedInDatabase = (cause: Cause.Cause<unknown>) =>
  cause.reasons.some((reason) =>
    (reason._tag === "Fail" && isSqlError(reason.error)) || (reason._tag === "Die" && isSqlError(reason.defect))
  )

export interface ReadReplicaOptions {
  /** How often the replica's replayed position is read. */
  readonly pollInterval: Duration.Duration
  /** A replica whose last answer to a poll is older than this gets no reads. */
  readonly staleAfter: Duration.Duration
}

/**
 * The routed client and the `ReadRouting` over the `primary` and `replica` pools (each a checkout of
 * its pool), for the scope's lifetime: see the module comment.
 */
export const makeReadReplica = (
  primary: PoolCheckout,
  replica: PoolCheckout,
  options: ReadReplicaOptions
) =>
  Effect.gen(function*() {
    const choose = Effect.map(Effect.service(OnReplica), (onReplica) => onReplica ? replica : primary)
    const client = yield* makeCheckedClient(primary.config, {
      acquire: Effect.flatMap(choose, (pool) => pool.acquire),
      reserve: Effect.flatMap(choose, (pool) => pool.reserve),
      borrow: (f) => Effect.flatMap(choose, (pool) => pool.borrow(f)),
      listen: primary.listen
    })
    // The fence's and the polls' own statements, each on its pool.
    const primarySql = yield* makeCheckedClient(primary.config, primary)
    const replicaSql = yield* makeCheckedClient(replica.config, replica)
    const pollMillis = Duration.toMillis(options.pollInterval)
    const staleMillis = Duration.toMillis(options.staleAfter)

    /** Primary WAL position at or past every write this process knows of; unknown until first read. */
    let fence: bigint | undefined = undefined
    /** Raises asked for, and the last of them a fence read has covered (asked after it). */
    let asked = 1
    let covered = 0
    let replayed = -1n
    let answeredAt = Number.NEGATIVE_INFINITY
    /** Whether the replica answered its last poll (`undefined` before the first). */
    let up: boolean | undefined = undefined
    const wanted = Latch.makeUnsafe(true)

    const fresh = () =>
      up === true && covered === asked && fence !== undefined && replayed >= fence &&
      performance.now() - answeredAt < staleMillis

    const raiseFence = () => {
      asked++
      wanted.openUnsafe()
    }

    const markDown = (reason: unknown) =>
      Effect.suspend(() => {
        if (up === false) return Effect.void
        up = false
        return Effect.logWarning("read replica unavailable; reads go to the primary").pipe(
          Effect.annotateLogs({ reason: String(reason) })
        )
      })

    const currentLsn = primarySql<{ lsn: string }>`SELECT pg_current_wal_insert_lsn()::text AS lsn`
    // One statement per burst: calls made while it runs are covered by the next one.
    const fenceLoop = Effect.gen(function*() {
      yield* wanted.await
      wanted.closeUnsafe()
      const covering = asked
      const rows = yield* currentLsn.pipe(Effect.option)
      if (Option.isNone(rows) || rows.value[0] === undefined) {
        // The primary did not answer: reads keep going to it; asked again shortly.
        wanted.openUnsafe()
        return yield* Effect.sleep(options.pollInterval)
      }
      const at = lsnBytes(rows.value[0].lsn)
      if (fence === undefined || at > fence) fence = at
      covered = covering
    }).pipe(Effect.forever)

    // The replica's replay position; a primary named as replica (no recovery) is never behind itself.
    const replayLsn = replicaSql<{ lsn: string | null }>`
      SELECT (CASE WHEN pg_is_in_recovery() THEN pg_last_wal_replay_lsn() ELSE pg_current_wal_insert_lsn() END)::text
        AS lsn`
    const pollLoop = Effect.gen(function*() {
      const answer = yield* replayLsn.pipe(Effect.result)
      if (answer._tag === "Failure") {
        yield* markDown(answer.failure.message)
      } else {
        const lsn = answer.success[0]?.lsn
        replayed = lsn === null || lsn === undefined ? -1n : lsnBytes(lsn)
        answeredAt = performance.now()
        if (up !== true) {
          up = true
          yield* Effect.logInfo("read replica answers; reads may go to it")
        }
        if (fence !== undefined) {
          replicaLag.updateUnsafe(Number(fence > replayed ? fence - replayed : 0n), Context.empty())
        }
      }
      yield* Effect.sleep(Duration.millis(pollMillis))
    }).pipe(Effect.forever)

    yield* Effect.forkScoped(fenceLoop)
    yield* Effect.forkScoped(pollLoop)

    const reads = <A, E, R>(read: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
      Effect.suspend(() => {
        if (!fresh()) {
          count(primaryReads)
          return read
        }
        return Effect.matchCauseEffect(Effect.provideService(read, OnReplica, true), {
          onSuccess: (value) => {
            count(replicaReads)
            return Effect.succeed(value)
          },
          onFailure: (cause) => {
            if (!failedInDatabase(cause)) {
              count(replicaReads)
              return Effect.failCause(cause)
            }
            count(primaryReads)
            return Effect.andThen(markDown("a read failed on the replica"), read)
          }
        })
      })

    return { client, routing: { reads, raiseFence } satisfies ReadRoutingShape } as const
  })
