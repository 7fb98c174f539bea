/**
 * PostgreSQL LISTEN that survives its connection. A cache kept fresh by NOTIFY misses every
 * notification sent while its listener is away (a dropped connection, a restarted server, a
 * terminated backend), and nothing tells it so. `keepListening` keeps a dedicated connection with
 * LISTEN on one channel, reconnects whenever that connection is lost (the connection fails, or a
 * heartbeat goes unanswered), and runs `onConnected` each time the server has acknowledged LISTEN:
 * from then on every commit that notifies reaches the listener, so a cache emptied at that moment
 * cannot keep anything a lost notification was about. Emptying it earlier (before LISTEN is in
 * force) would leave a window where a write is neither notified nor forgotten.
 *
 * The connection is @effect/sql-pg's `PgConnection` on `DatabaseUrl` (not one of the pool's), named
 * `shiori listen <channel>` in `pg_stat_activity.application_name`. Its `listen` answers once the
 * server has confirmed LISTEN, and fails its queue of notifications when the connection is lost.
 * The pool's `PgClient.listen` would do the same on a pooled connection, but without a way to send
 * the heartbeat on the connection that listens.
 */
import { PgConnection } from "@effect/sql-pg"
import { Cause, Duration, Effect, Option, Queue, type Redacted, type Scope } from "effect"
import type { Duplex } from "node:stream"
import { DatabaseUrl } from "./Database.js"
import { DatabaseDeadline } from "./DatabaseDeadline.js"

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
  readonly heartbeat?: Duration.Input
  /** Longest pause between reconnection attempts; they start at 100 ms and double. Default 5 s. */
  readonly maxRetryDelay?: Duration.Input
}

/** `pg_stat_activity.application_name` of the connection listening on `channel`. */
export const listenerApplicationName = (channel: string) => `shiori listen ${channel}`.slice(0, 63)

class ListenerLost extends Error {}

/** One connection: connect, LISTEN, `onConnected`, then notifications until the connection is lost. */
const session = (
  url: Redacted.Redacted,
  stream: (() => Duplex) | undefined,
  channel: string,
  handlers: ListenHandlers,
  heartbeat: Duration.Duration
) =>
  Effect.gen(function*() {
    const { connection, notifications } = yield* Effect.gen(function*() {
      const connection = yield* PgConnection.make({
        url,
        ...(stream === undefined ? {} : { stream }),
        applicationName: listenerApplicationName(channel),
        connectTimeout: Duration.seconds(5),
        keepAlive: heartbeat
      }).pipe(Effect.mapError((error) => new ListenerLost(`cannot connect: ${error.message}`)))
      // The connection is this listener's alone: pinned, its LISTEN and its heartbeat share it.
      const pinned = yield* connection.pin
      // Answers once the server has run (and committed) LISTEN: notifications are queued from here on.
      const notifications = yield* pinned.listen(channel).pipe(
        Effect.mapError((error) => new ListenerLost(`LISTEN failed: ${error.message}`))
      )
      yield* handlers.onConnected
      return { connection: pinned, notifications }
    }).pipe(Effect.withSpan("Notifications.listen", { attributes: { channel } }))
    // The queue fails with the connection's error once the connection is lost.
    const deliver = Effect.forever(
      Effect.flatMap(
        Queue.take(notifications).pipe(Effect.mapError((error) => new ListenerLost(error.message))),
        (notification) => handlers.onNotification(notification.payload)
      )
    )
    const ping = connection.query("SELECT 1").pipe(
      Effect.mapError((error) => new ListenerLost(`heartbeat failed: ${error.message}`)),
      Effect.timeoutOrElse({
        duration: Duration.seconds(5),
        orElse: () => Effect.fail(new ListenerLost("heartbeat timed out"))
      })
    )
    const pings = Effect.forever(Effect.andThen(Effect.sleep(heartbeat), ping))
    // Whichever ends first ends the connection: its loss, a failed heartbeat, a failing handler.
    return yield* deliver.pipe(Effect.raceFirst(pings))
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
    // Over the pool's deadline watch when there is one, so a frozen database cannot hold the
    // listener's statements, or shutdown, either (src/platform/DatabaseDeadline.ts).
    const stream = Option.getOrUndefined(yield* Effect.serviceOption(DatabaseDeadline))?.stream
    const heartbeat = Duration.fromInputUnsafe(options.heartbeat ?? "10 seconds")
    const maxDelay = Duration.toMillis(Duration.fromInputUnsafe(options.maxRetryDelay ?? "5 seconds"))
    /** Failed attempts since the last connection that reached LISTEN. */
    let failures = 0
    const connected: ListenHandlers = {
      ...handlers,
      onConnected: Effect.andThen(
        Effect.suspend(() => failures === 0 ? Effect.void : Effect.logInfo("notification listener reconnected")),
        Effect.andThen(handlers.onConnected, Effect.sync(() => void (failures = 0)))
      )
    }
    yield* Effect.scoped(session(url, stream, channel, connected, heartbeat)).pipe(
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
