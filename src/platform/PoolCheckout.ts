/**
 * Every connection a statement or a transaction takes from a pool passes here (docs/deploying.md,
 * "When the database misbehaves" and "Metrics"): the wait for a free connection has a deadline, and
 * the pool's use is measured.
 *
 * Why. @effect/sql-pg's pool (`PgPool`, over effect's `Pool`) queues a checkout until a connection
 * is free, without a limit: when every connection is held (a burst larger than the pool, slow
 * statements, a lock) the requests behind them would wait as long as that lasts. `PgClient.make`
 * builds its pool where no checkout can be bounded or counted, so the pool is made here
 * (`makePool`, `PgPool.make` with the same settings) and the process's client over it
 * (`makeCheckedClient`), the way @effect/sql-pg makes its own: statements borrow a connection,
 * transactions reserve one, each through a checkout of this module.
 *
 * How. Every checkout of the pool passes here (the read replica's polls included:
 * src/platform/ReadReplica.ts runs them on clients made here), so the pool's places are handed out
 * here: a checkout is let into the pool at once while fewer than its size are in and nobody waits,
 * which costs a counter; otherwise it waits in a queue of ours, first come first served, and takes
 * the place of the checkout that leaves before it. The pool itself never has more checkouts than
 * connections, so it never queues (opening a connection has its own deadline, `connectTimeout`). A
 * checkout queued past `DATABASE_ACQUIRE_TIMEOUT_SECONDS` leaves the queue and fails as a
 * `ConnectionError` whose cause is a `PoolExhausted`, which the request answers `503` with
 * `Retry-After` (src/platform/ServerFailure.ts). Every checkout waits the same time and the queue is
 * first come first served, so the one that waited longest is always at its head: one timer, set for
 * the head's deadline, serves the whole queue (no timer or fiber per checkout). A statement that
 * queues costs about as much CPU as one queued by @effect/sql-pg's own pool, one that does not the
 * same (bench/PoolCheckoutAB.ts).
 *
 * What is measured, by pool (`primary`, `replica`), in the OpenTelemetry names of database client
 * connection metrics (https://opentelemetry.io/docs/specs/semconv/database/database-metrics/):
 * the connections held and idle and the checkouts waiting (read at scrape time, `state`), the
 * pool's size, the wait of each checkout (`db_client_connection_wait_time_seconds`) and the waits
 * that ran out (`db_client_connection_timeouts_total`).
 */
import { PgClient, type PgConnection, PgPool } from "@effect/sql-pg"
import { type Array as Arr, Context, Duration, Effect, Metric, Scope, Stream } from "effect"
import { SqlClient, type SqlConnection, Statement } from "effect/sql"
import { ConnectionError, SqlError, UnknownError } from "effect/sql/SqlError"
import { performance } from "node:perf_hooks"

export type PoolName = "primary" | "replica"

/** The cause of a checkout that found no free connection in time: a 503 "busy" (src/platform/ServerFailure.ts). */
export class PoolExhausted extends Error {
  override readonly name = "PoolExhausted"
}

/** A failure of `u`'s chain of causes is a `PoolExhausted`: the database is busy, not unreachable. */
export const isPoolExhausted = (u: unknown): boolean => {
  let cause: unknown = u
  for (let depth = 0; typeof cause === "object" && cause !== null && depth < 4; depth++) {
    if (cause instanceof PoolExhausted) return true
    cause = (cause as { readonly reason?: unknown; readonly cause?: unknown }).reason ??
      (cause as { readonly cause?: unknown }).cause
  }
  return false
}

/** What a scrape reports of one pool. */
export interface PoolState {
  readonly pool: PoolName
  readonly max: number
  /** Connections held by a statement or a transaction. */
  readonly used: number
  /** Checkouts not given a connection yet (queued, or waiting for one being opened). */
  readonly pending: number
  /** Connections open and not held; `undefined` when the pool's sockets are not ours to count. */
  readonly idle: number | undefined
}

export interface PoolCheckout {
  readonly name: PoolName
  /** The pool's settings (the client made over it reports them as its `config`). */
  readonly config: PgClient.PgPoolConfig
  /** A connection of the pool until the scope closes, or a `ConnectionError` past the deadline. */
  readonly acquire: Effect.Effect<SqlConnection.Connection, SqlError, Scope.Scope>
  /** The same, for exclusive use across statements (a transaction). */
  readonly reserve: Effect.Effect<SqlConnection.Connection, SqlError, Scope.Scope>
  /** Lends a connection for one statement (no scope when a connection is free at once). */
  readonly borrow: SqlConnection.Borrower
  /** `LISTEN` on a connection of the pool (reserved until the scope closes). */
  readonly listen: PgClient.PgClient["listen"]
  readonly state: () => PoolState
}

/** The pools of the process, for the metrics scrape (src/platform/Metrics.ts); none until a client is made. */
export const DatabasePools = Context.Reference<ReadonlyArray<PoolCheckout>>("platform/DatabasePools", {
  defaultValue: () => []
})

/** Boundaries of the wait histogram, in seconds: a free connection is a fraction of a millisecond. */
const waitBoundaries = [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10]

/**
 * A `PgConnection` as @effect/sql's `Connection`, as @effect/sql-pg's own client adapts it: rows of
 * each statement, prepared unless asked otherwise.
 */
class PooledConnection implements SqlConnection.Connection {
  constructor(readonly connection: PgConnection.PgConnection) {}

  private rows(sql: string, params: ReadonlyArray<unknown>, prepare = true) {
    return Effect.map(this.connection.query(sql, params, prepare), (result) => result.rows)
  }

  execute(sql: string, params: ReadonlyArray<unknown>, transformRows: TransformRows | undefined) {
    return transformRows === undefined ? this.rows(sql, params) : Effect.map(this.rows(sql, params), transformRows)
  }
  executeRaw(sql: string, params: ReadonlyArray<unknown>) {
    return this.connection.query(sql, params)
  }
  executeValues(sql: string, params: ReadonlyArray<unknown>) {
    return this.connection.queryValues(sql, params)
  }
  executeValuesUnprepared(sql: string, params: ReadonlyArray<unknown>) {
    return this.connection.queryValues(sql, params, false)
  }
  executeUnprepared(sql: string, params: ReadonlyArray<unknown>, transformRows: TransformRows | undefined) {
    const rows = this.rows(sql, params, false)
    return transformRows === undefined ? rows : Effect.map(rows, transformRows)
  }
  executeStream(sql: string, params: ReadonlyArray<unknown>, transformRows: TransformRows | undefined) {
    const stream = this.connection.stream(sql, params)
    return transformRows === undefined
      ? stream
      : Stream.mapArray(stream, (rows) => transformRows(rows) as Arr.NonEmptyReadonlyArray<PgConnection.Row>)
  }
}

type TransformRows = <A extends object>(row: ReadonlyArray<A>) => ReadonlyArray<A>

/** One checkout: when it started, whether it was let into the pool, whether it holds a connection. */
class Ticket {
  readonly started = performance.now()
  admitted = false
  held = false
  queued = false
  resume: ((effect: Effect.Effect<void, SqlError>) => void) | undefined = undefined
}

/** The checkouts waiting for a place in the pool, first come first served; one may leave early. */
class WaitQueue {
  private items: Array<Ticket | undefined> = []
  private head = 0
  length = 0

  push(ticket: Ticket) {
    ticket.queued = true
    this.items.push(ticket)
    this.length++
  }

  /** The ticket that has waited longest, left in the queue. */
  peek(): Ticket | undefined {
    while (this.head < this.items.length) {
      const ticket = this.items[this.head]
      if (ticket?.queued === true) return ticket
      this.items[this.head++] = undefined
    }
    return undefined
  }

  /** The ticket that has waited longest, taken out of the queue. */
  shift(): Ticket | undefined {
    const ticket = this.peek()
    if (ticket !== undefined) this.remove(ticket)
    return ticket
  }

  /** Takes `ticket` out if it is still waiting (its slot is skipped later). */
  remove(ticket: Ticket) {
    if (!ticket.queued) return
    ticket.queued = false
    this.length--
    this.compact()
  }

  private compact() {
    if (this.length === 0) {
      this.items = []
      this.head = 0
    } else if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head)
      this.head = 0
    }
  }
}

export interface PoolOptions {
  readonly name: PoolName
  /** How long a checkout may wait for a connection of a full pool; `Duration.infinity` for no limit. */
  readonly timeout: Duration.Duration
  /** The pool's open connections (its sockets), when known. */
  readonly open?: (() => number | undefined) | undefined
}

/** The pool of `config` (`maxConnections`) and its checkouts, for the scope's lifetime (module comment). */
export const makePool = (config: PgClient.PgPoolConfig, options: PoolOptions) =>
  Effect.gen(function*() {
    const pool = yield* PgPool.make(config)
    const { name } = options
    const size = config.maxConnections ?? 10
    const waitTime = Metric.histogram("db_client_connection_wait_time_seconds", {
      description: "Time a statement or a transaction waited for a connection of the pool.",
      boundaries: waitBoundaries,
      attributes: { db_client_connection_pool_name: name }
    })
    const timeouts = Metric.counter("db_client_connection_timeouts", {
      description: "Checkouts that found no free connection of the pool within DATABASE_ACQUIRE_TIMEOUT_SECONDS.",
      incremental: true,
      attributes: { db_client_connection_pool_name: name }
    })
    const seconds = Duration.toSeconds(options.timeout)
    const timeoutMillis = Duration.isFinite(options.timeout) ? Duration.toMillis(options.timeout) : undefined
    const exhausted = Effect.suspend(() =>
      Effect.fail(
        new SqlError({
          reason: new ConnectionError({
            cause: new PoolExhausted(`no connection of the ${name} pool (${size}) was free within ${seconds} s`),
            message: `PgClient: no free connection within ${seconds} s`,
            operation: "acquire"
          })
        })
      )
    )

    /** Checkouts let into the pool (at most `size`), those holding a connection, and the queue. */
    let admitted = 0
    let used = 0
    const queue = new WaitQueue()

    /** Lets `ticket` into the pool now when a place is free and nobody waits, else queues it. */
    const enter = (ticket: Ticket): Effect.Effect<void, SqlError> => {
      if (admitted < size && queue.length === 0) {
        admitted++
        ticket.admitted = true
        return Effect.void
      }
      return Effect.callback<void, SqlError>((resume) => {
        ticket.resume = resume
        queue.push(ticket)
        arm()
        // Interrupted while queued: out of the queue (a ticket let in meanwhile is `leave`'s to release).
        return Effect.sync(() => {
          queue.remove(ticket)
        })
      })
    }

    /** The one timer of the queue: set for its head's deadline while anybody waits. */
    let timer: ReturnType<typeof setTimeout> | undefined = undefined
    const arm = () => {
      if (timer !== undefined || timeoutMillis === undefined) return
      const head = queue.peek()
      if (head === undefined) return
      timer = setTimeout(expire, Math.max(0, head.started + timeoutMillis - performance.now()))
    }
    /** Fails every ticket that has waited its time, oldest first, then waits for the next one's. */
    const expire = () => {
      timer = undefined
      const now = performance.now()
      for (let head = queue.peek(); head !== undefined && now - head.started >= timeoutMillis!; head = queue.peek()) {
        queue.shift()
        timeouts.updateUnsafe(1, Context.empty())
        head.resume!(exhausted)
      }
      arm()
    }

    /** `ticket` is done: its place goes to the next in the queue, or back to the pool. */
    const leave = (ticket: Ticket) => {
      if (ticket.held) {
        ticket.held = false
        used--
      }
      if (!ticket.admitted) {
        queue.remove(ticket)
        return
      }
      ticket.admitted = false
      const next = queue.shift()
      if (next === undefined) {
        admitted--
        return
      }
      next.admitted = true
      next.resume!(Effect.void)
    }

    const hold = (ticket: Ticket) => {
      ticket.held = true
      used++
      waitTime.updateUnsafe((performance.now() - ticket.started) / 1000, Context.empty())
    }

    /** `take` once let in, its connection held until the scope closes. */
    const checkout = (take: Effect.Effect<PgConnection.PgConnection, SqlError, Scope.Scope>) =>
      Effect.flatMap(Effect.scope, (scope) =>
        Effect.suspend(() => {
          const ticket = new Ticket()
          return Scope.addFinalizer(scope, Effect.sync(() => leave(ticket))).pipe(
            Effect.andThen(enter(ticket)),
            Effect.andThen(take),
            Effect.map((connection): SqlConnection.Connection => {
              hold(ticket)
              return new PooledConnection(connection)
            })
          )
        }))
    const acquire = checkout(pool.get)
    const reserve = checkout(pool.reserve)

    const borrow: SqlConnection.Borrower = (f) =>
      Effect.suspend(() => {
        const ticket = new Ticket()
        return Effect.andThen(
          enter(ticket),
          pool.use((connection) => {
            hold(ticket)
            return f(new PooledConnection(connection))
          })
        ).pipe(Effect.ensuring(Effect.sync(() => leave(ticket))))
      })

    return {
      name,
      config,
      acquire,
      reserve,
      borrow,
      listen: (channel) => Effect.flatMap(pool.reserve, (connection) => connection.listen(channel)),
      state: () => {
        const open = options.open?.()
        return {
          pool: name,
          max: size,
          used,
          pending: queue.length + admitted - used,
          idle: open === undefined ? undefined : Math.max(0, open - used)
        }
      }
    } satisfies PoolCheckout
  })

/** PostgreSQL answers `ROLLBACK` to `COMMIT` in an aborted transaction (as @effect/sql-pg checks too). */
const commit = (conn: SqlConnection.Connection): Effect.Effect<void, SqlError> =>
  Effect.flatMap(
    conn.executeRaw("COMMIT", []),
    (result) =>
      (result as { readonly command?: string }).command === "ROLLBACK"
        ? Effect.fail(
          new SqlError({
            reason: new UnknownError({
              cause: new Error("COMMIT rolled back an aborted transaction"),
              message: "PgClient: COMMIT rolled back an aborted transaction",
              operation: "commit"
            })
          })
        )
        : Effect.void
  )

/** `sql.json(value)`: a `jsonb` parameter, as @effect/sql-pg's compiler knows it. */
const PgJson = Statement.custom<Statement.Custom<"PgJson", unknown>>("PgJson")

/** Where a client's statements, transactions and listeners take their connections. */
export interface Checkouts {
  readonly acquire: Effect.Effect<SqlConnection.Connection, SqlError, Scope.Scope>
  readonly reserve: Effect.Effect<SqlConnection.Connection, SqlError, Scope.Scope>
  readonly borrow: SqlConnection.Borrower
  readonly listen: PgClient.PgClient["listen"]
}

/**
 * A client over `checkouts` (one pool's, or a choice between two) with `config`'s settings, built as
 * @effect/sql-pg builds its own (`PgClient.make`): the same compiler, span attributes, transaction
 * controls and `COMMIT` check. `NOTIFY` runs as a statement of its own.
 */
export const makeCheckedClient = (config: PgClient.PgPoolConfig, checkouts: Checkouts) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.make({
      acquirer: checkouts.acquire,
      borrower: checkouts.borrow,
      transactionAcquirer: checkouts.reserve,
      compiler: PgClient.makeCompiler(config.transformQueryNames, config.transformJson),
      driver: "pg",
      prepareTransactionControls: true,
      commit,
      releaseSavepoint: (name) => `RELEASE SAVEPOINT ${name}`,
      spanAttributes: [
        ...(config.spanAttributes === undefined ? [] : Object.entries(config.spanAttributes)),
        ["db.system.name", "postgresql"],
        ["db.namespace", config.database ?? config.username ?? "postgres"],
        ["server.address", config.host ?? "localhost"],
        ["server.port", config.port ?? 5432]
      ]
    })
    const client: PgClient.PgClient = Object.assign(sql, {
      [PgClient.TypeId]: PgClient.TypeId,
      config,
      json: (value: unknown) => Statement.fragment([PgJson(value)]),
      listen: checkouts.listen,
      notify: (channel: string, payload: string) => Effect.asVoid(sql`SELECT pg_notify(${channel}, ${payload})`)
    })
    return client
  })
