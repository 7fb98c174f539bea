/**
 * Client-side deadlines for a database that does not answer at all (docs/deploying.md, "When the
 * database misbehaves"): a server that is reachable but frozen (its processes stopped, or a network
 * that accepts and never replies). A stopped database refuses connections and fails fast on its own;
 * a slow but alive one is PostgreSQL's to bound (`statement_timeout`, src/platform/Database.ts). A
 * frozen one would hold every statement, every request and shutdown until it thaws.
 *
 * How a frozen database is told from a slow statement: every pooled connection runs over a byte
 * stream of ours (@effect/sql-pg's `stream` option), which notes when the connection has sent
 * something and then waited without receiving a byte. A connection that has waited
 * `DATABASE_QUERY_TIMEOUT_SECONDS` that way is not cut at once: a long report may legitimately stay
 * silent that long. A probe (`SELECT 1` on a connection of its own, with the same deadline) asks the
 * database whether it answers at all. When it answers, the database is alive and the statement merely
 * slow: it runs on, under `statement_timeout`. When it does not, the database is frozen: every
 * connection waiting that long is destroyed, so its statement fails at once as a connection error
 * (503 with `Retry-After`), the pool discards it (src/platform/SqlState.ts, `isDatabaseUnavailable`)
 * and opens new ones when asked again. Until a byte arrives from the database again, later
 * connections (a new statement, a connection being opened) are cut after the deadline without
 * another probe. A request during a freeze is answered within twice the deadline, later ones within
 * the deadline; once the database answers, new connections succeed with nothing to reset.
 *
 * Why not a timeout around each statement: interrupting a statement makes the driver drain the
 * connection to `ReadyForQuery` and send a cancel request, both of which wait for the database (up to
 * 5 s each in @effect/sql-pg), so the timeout itself would hang on a frozen server. Destroying the
 * socket ends the statement without asking the database anything.
 *
 * The connection's own protocol is read only to tell when an answer is complete: an answer ends with
 * a `ReadyForQuery` message ('Z', length 5; PostgreSQL manual, "Message Formats"). Bytes arriving
 * while an answer is awaited but before that message (a large result, the start-up exchange) show
 * progress and restart the wait. Over TLS the bytes cannot be read, so any byte received ends the
 * wait: a database that freezes in the middle of a large encrypted answer is left to TCP keep-alive.
 */
import { PgConnection } from "@effect/sql-pg"
import { Context, Duration, Effect, Exit, Redacted, Scope } from "effect"
import * as Net from "node:net"
import { performance } from "node:perf_hooks"
import { Duplex } from "node:stream"

/** Where a `postgres://` URL points: host and port, or a Unix socket directory (`?host=/run/...`). */
export const connectOptionsOf = (url: Redacted.Redacted): Net.NetConnectOpts => {
  const parsed = new URL(Redacted.value(url))
  const host = parsed.searchParams.get("host") ??
    (parsed.hostname === "" ? "localhost" : decodeURIComponent(parsed.hostname.replace(/^\[(.*)\]$/, "$1")))
  const port = Number(parsed.searchParams.get("port") ?? (parsed.port === "" ? "5432" : parsed.port))
  return host.startsWith("/") ? { path: `${host}/.s.PGSQL.${port}` } : { host, port, noDelay: true }
}

/** `pg_stat_activity.application_name` of the probe's connection. */
export const PROBE_APPLICATION_NAME = "shiori probe"

/** `SSLRequest` (PostgreSQL manual, "Message Formats"): the only message whose answer is one byte. */
const SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f])

/** The last message of `chunk` is `ReadyForQuery` ('Z', length 5, one status byte). */
const endsWithReadyForQuery = (chunk: Buffer) => {
  const n = chunk.length
  return n >= 6 && chunk[n - 6] === 0x5a && chunk[n - 5] === 0 && chunk[n - 4] === 0 && chunk[n - 3] === 0 &&
    chunk[n - 2] === 5
}

/** A connection to PostgreSQL whose owner can tell how long it has waited for an answer, and cut it. */
class WatchedStream extends Duplex {
  /** When it started waiting for an answer (or last saw progress on one); `undefined` while idle. */
  waitingSince: number | undefined = undefined
  private sslRequested = false
  private encrypted = false

  constructor(private readonly socket: Net.Socket, onAnswer: () => void) {
    super()
    socket.on("data", (chunk: Buffer) => {
      onAnswer()
      if (this.sslRequested) {
        this.sslRequested = false
        this.encrypted = chunk.length === 1 && chunk[0] === 0x53
      }
      if (this.waitingSince !== undefined) {
        this.waitingSince = this.encrypted || endsWithReadyForQuery(chunk) ? undefined : performance.now()
      }
      if (!this.push(chunk)) socket.pause()
    })
    socket.on("end", () => this.push(null))
    socket.on("error", (error) => this.destroy(error))
    socket.on("close", () => this.destroy())
  }

  override _read() {
    this.socket.resume()
  }

  override _write(chunk: Buffer, encoding: BufferEncoding, callback: (error?: Error | null) => void) {
    if (this.waitingSince === undefined) this.waitingSince = performance.now()
    if (chunk.length === SSL_REQUEST.length && chunk.equals(SSL_REQUEST)) this.sslRequested = true
    this.socket.write(chunk, encoding, callback)
  }

  override _final(callback: (error?: Error | null) => void) {
    this.socket.end(() => callback())
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void) {
    this.socket.destroy()
    callback(error)
  }
}

export interface DatabaseDeadlineOptions {
  /** How the pool's connections are made; the probe's connection is made the same way. */
  readonly connection: PgConnection.Config
  readonly url: Redacted.Redacted
  /**
   * How long a connection may wait without a byte before the database is probed (and the probe's
   * own limit); zero turns the watch off.
   */
  readonly deadline: Duration.Duration
}

/**
 * The watch, for connections made outside the pool (the listeners of src/platform/Notifications.ts):
 * `stream` is the `stream` option of a `PgConnection` to `DatabaseUrl`.
 */
export class DatabaseDeadline extends Context.Service<DatabaseDeadline, {
  /** `undefined` when the deadline is off (`0`): the driver's own sockets. */
  readonly stream: (() => Duplex) | undefined
}>()("platform/DatabaseDeadline") {}

/** The watch over the pool's connections, for the scope's lifetime (see the module comment). */
export const makeDatabaseDeadline = (options: DatabaseDeadlineOptions) =>
  Effect.gen(function*() {
    const runFork = Effect.runForkWith(yield* Effect.context<never>())
    const deadlineMillis = Duration.toMillis(options.deadline)
    if (!(deadlineMillis > 0)) return DatabaseDeadline.of({ stream: undefined })
    const seconds = deadlineMillis / 1000
    const connect = connectOptionsOf(options.url)
    const watched = new Set<WatchedStream>()
    const probeStreams = new Set<WatchedStream>()
    /** No byte from the database since a probe went unanswered. */
    let frozen = false
    let probing = false
    let lastProbe = Number.NEGATIVE_INFINITY
    const answered = () => {
      if (!frozen) return
      frozen = false
      runFork(Effect.logInfo("database answers again"))
    }
    const open = (into: Set<WatchedStream>) => () => {
      const stream = new WatchedStream(Net.connect(connect), answered)
      into.add(stream)
      stream.once("close", () => into.delete(stream))
      return stream
    }

    const frozenError = () =>
      Object.assign(new Error(`PostgreSQL sent nothing for ${seconds} s and did not answer a probe`), {
        code: "ETIMEDOUT"
      })
    /** Destroys every connection that has waited past the deadline; how many it destroyed. */
    const cutOverdue = (now: number) => {
      let cut = 0
      for (const stream of watched) {
        if (stream.waitingSince !== undefined && now - stream.waitingSince >= deadlineMillis) {
          stream.destroy(frozenError())
          cut++
        }
      }
      return cut
    }

    // The probe's connection: opened at start, again after it died, closed with the scope.
    let probeConnection: { readonly connection: PgConnection.PgConnection; readonly scope: Scope.Closeable } | undefined
    const dropProbeConnection = Effect.suspend(() => {
      const current = probeConnection
      probeConnection = undefined
      return current === undefined ? Effect.void : Scope.close(current.scope, Exit.void)
    })
    const connectProbe = Effect.gen(function*() {
      const scope = yield* Scope.make()
      const connection = yield* PgConnection.make({
        ...options.connection,
        // Told apart from the pool's sessions in `pg_stat_activity` (src/platform/Metrics.ts counts those).
        applicationName: PROBE_APPLICATION_NAME,
        stream: open(probeStreams)
      }).pipe(
        Scope.provide(scope),
        Effect.onError(() => Scope.close(scope, Exit.void))
      )
      probeConnection = { connection, scope }
      return connection
    })
    const ping = Effect.suspend(() =>
      probeConnection === undefined ? connectProbe : Effect.succeed(probeConnection.connection)
    )
      .pipe(
        Effect.flatMap((connection) => connection.query("SELECT 1")),
        Effect.onError(() => dropProbeConnection)
      )
    /**
     * Whether the database answers a `SELECT 1` within the deadline. The probe's connection may have
     * ended since the last probe (the database restarted, say): one that fails before the deadline is
     * tried again on a new connection.
     */
    const probe = Effect.callback<boolean>((resume) => {
      let expired = false
      const timer = setTimeout(() => {
        expired = true
        for (const stream of probeStreams) stream.destroy(frozenError())
      }, deadlineMillis)
      const fiber = runFork(ping.pipe(Effect.retry({ times: 1, while: () => !expired })))
      fiber.addObserver((exit) => {
        clearTimeout(timer)
        resume(Effect.succeed(Exit.isSuccess(exit)))
      })
    })

    const check = () => {
      const now = performance.now()
      let overdue = false
      for (const stream of watched) {
        if (stream.waitingSince !== undefined && now - stream.waitingSince >= deadlineMillis) overdue = true
      }
      if (!overdue) return
      if (frozen) {
        cutOverdue(now)
        return
      }
      // A connection the last probe vouched for is probed again only after another deadline.
      if (probing || now - lastProbe < deadlineMillis) return
      probing = true
      lastProbe = now
      runFork(Effect.flatMap(probe, (alive) =>
        Effect.suspend(() => {
          probing = false
          if (alive) return Effect.void
          frozen = true
          const cut = cutOverdue(performance.now())
          return Effect.logWarning("database unavailable: it does not answer").pipe(
            Effect.annotateLogs({ deadline_seconds: seconds, connections_closed: cut })
          )
        })))
    }

    yield* Effect.acquireRelease(
      Effect.sync(() => setInterval(check, Math.max(10, Math.min(250, deadlineMillis / 4))).unref()),
      (timer) => Effect.andThen(Effect.sync(() => clearInterval(timer)), dropProbeConnection)
    )
    // Open the probe's connection now rather than when the database is already in trouble.
    yield* Effect.ignore(probe)
    return DatabaseDeadline.of({ stream: open(watched) })
  })
