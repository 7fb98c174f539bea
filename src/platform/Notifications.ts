/**
 * PostgreSQL LISTEN that survives its connection. A cache kept fresh by NOTIFY misses every
 * notification sent while its listener is away (a dropped connection, a restarted server, a
 * terminated backend), and nothing tells it so. `keepListening` keeps a dedicated connection with
 * LISTEN on one channel, reconnects whenever that connection is lost (the client reports an error
 * or its end, or a heartbeat goes unanswered), and runs `onConnected` each time the server has
 * acknowledged LISTEN: from then on every commit that notifies reaches the listener, so a cache
 * emptied at that moment cannot keep anything a lost notification was about. Emptying it earlier
 * (before LISTEN is in force) would leave a window where a write is neither notified nor forgotten.
 *
 * Why not `PgClient.listen` (@effect/sql-pg): its stream does not end when its connection is lost
 * (the connection's errors are swallowed and the stream waits forever), and it connects lazily,
 * inside the stream, with no way to learn when LISTEN is in force.
 *
 * The connection is a raw `pg` client on `DatabaseUrl`, named `shiori listen <channel>` in
 * `pg_stat_activity.application_name`.
 */
import { Cause, Deferred, Duration, Effect, Queue, Redacted, type Scope } from "effect"
import Pg from "pg"
import { DatabaseUrl, quoteIdentifier } from "./Database.js"

export interface ListenHandlers {
  /**
   * Runs each time LISTEN is in force on a new connection, before any notification of that
   * connection is delivered: forget whatever a notification lost while nobody listened was about.
   */
  readonly onConnected: Effect.Effect<void>
  /** Runs for each notification on the channel, in order (the payload may be empty). */
  readonly onNotification: (payload: string) => Effect.Effect<void>
}

export interface ListenOptions {
  /** How often the idle connection is checked with `SELECT 1` (a silently dead link). Default 10 s. */
  readonly heartbeat?: Duration.DurationInput
  /** Longest pause between reconnection attempts; they start at 100 ms and double. Default 5 s. */
  readonly maxRetryDelay?: Duration.DurationInput
}

/** `pg_stat_activity.application_name` of the connection listening on `channel`. */
export const listenerApplicationName = (channel: string) => `shiori listen ${channel}`.slice(0, 63)

class ListenerLost extends Error {}

/** One connection: connect, LISTEN, `onConnected`, then notifications until the connection is lost. */
const session = (url: Redacted.Redacted, channel: string, handlers: ListenHandlers, heartbeat: Duration.Duration) =>
  Effect.gen(function*() {
    const notifications = yield* Queue.unbounded<string>()
    const lost = yield* Deferred.make<never, ListenerLost>()
    const client = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const client = new Pg.Client({
          connectionString: Redacted.value(url),
          application_name: listenerApplicationName(channel),
          connectionTimeoutMillis: 5_000,
          keepAlive: true
        })
        client.on("error", (error) => Deferred.unsafeDone(lost, Effect.fail(new ListenerLost(error.message))))
        client.on("end", () => Deferred.unsafeDone(lost, Effect.fail(new ListenerLost("connection ended"))))
        client.on("notification", (message) => {
          if (message.channel === channel) notifications.unsafeOffer(message.payload ?? "")
        })
        return client
      }),
      (client) => Effect.promise(() => client.end().catch(() => {})).pipe(Effect.timeoutOption("1 second"))
    )
    yield* Effect.tryPromise({
      try: () => client.connect(),
      catch: (cause) => new ListenerLost(`cannot connect: ${String(cause)}`)
    }).pipe(
      // Resolves once the server has run (and committed) LISTEN: notifications are queued from here on.
      Effect.andThen(Effect.tryPromise({
        try: () => client.query(`LISTEN ${quoteIdentifier(channel)}`),
        catch: (cause) => new ListenerLost(`LISTEN failed: ${String(cause)}`)
      })),
      Effect.andThen(handlers.onConnected),
      Effect.withSpan("Notifications.listen", { attributes: { channel } })
    )
    const deliver = Effect.forever(Effect.flatMap(Queue.take(notifications), handlers.onNotification))
    const ping = Effect.tryPromise({
      try: () => client.query("SELECT 1"),
      catch: (cause) => new ListenerLost(`heartbeat failed: ${String(cause)}`)
    }).pipe(
      Effect.timeoutFail({ duration: "5 seconds", onTimeout: () => new ListenerLost("heartbeat timed out") })
    )
    const pings = Effect.forever(Effect.andThen(Effect.sleep(heartbeat), ping))
    // Whichever ends first ends the connection: its loss, a failed heartbeat, a failing handler.
    return yield* Deferred.await(lost).pipe(Effect.raceFirst(deliver), Effect.raceFirst(pings))
  })

/**
 * Keeps LISTEN on `channel` for the life of the scope, in a background fiber: see the module
 * comment. Never fails; connection losses are logged and retried with a growing pause.
 */
export const keepListening = (
  channel: string,
  handlers: ListenHandlers,
  options: ListenOptions = {}
): Effect.Effect<void, never, DatabaseUrl | Scope.Scope> =>
  Effect.gen(function*() {
    const url = yield* DatabaseUrl
    const heartbeat = Duration.decode(options.heartbeat ?? "10 seconds")
    const maxDelay = Duration.toMillis(options.maxRetryDelay ?? "5 seconds")
    /** Failed attempts since the last connection that reached LISTEN. */
    let failures = 0
    const connected: ListenHandlers = {
      ...handlers,
      onConnected: Effect.andThen(
        Effect.suspend(() => failures === 0 ? Effect.void : Effect.logInfo("notification listener reconnected")),
        Effect.andThen(handlers.onConnected, Effect.sync(() => void (failures = 0)))
      )
    }
    yield* Effect.scoped(session(url, channel, connected, heartbeat)).pipe(
      Effect.catchCause((cause) =>
        Effect.suspend(() => {
          failures++
          const delay = Math.min(100 * 2 ** (failures - 1), maxDelay)
          // One warning per outage; further failed attempts of the same outage at debug level.
          const log = failures === 1
            ? Effect.logWarning("notification listener lost; reconnecting")
            : Effect.logDebug("notification listener still down")
          return Effect.andThen(
            Effect.annotateLogs(log, { reason: String(Cause.squash(cause)) }),
            Effect.sleep(Duration.millis(delay))
          )
        })
      ),
      Effect.forever,
      Effect.annotateLogs({ channel }),
      Effect.forkScoped
    )
  })
