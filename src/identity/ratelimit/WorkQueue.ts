/**
 * A bounded line for expensive work in this process: at most `permits` run at once, at most `queue`
 * more wait, in arrival order, for at most `waitMillis`; anything beyond is refused at once, and a
 * wait that runs out is refused then. A refusal names the seconds after which a retry is likely to
 * get in (`WorkQueueFull`), from the mean time the work has taken (at least 1).
 *
 * Built on callbacks and a timer rather than an interrupted `Semaphore.take`: the routes run
 * uninterruptibly (`runToCompletion`, src/platform/HttpListener.ts), so a wait must end on its own.
 * A permit is handed from the finishing work to the first waiter directly, so nothing that arrives
 * later can overtake a waiter.
 */
import { Data, Effect } from "effect"

export class WorkQueueFull extends Data.TaggedError("WorkQueueFull")<{ readonly retryAfterSeconds: number }> {}

export interface WorkQueueOptions {
  readonly permits: number
  readonly queue: number
  readonly waitMillis: number
  /** Called with the number of running works whenever it changes (a gauge). */
  readonly onActive?: (active: number) => void
}

export interface WorkQueue {
  /** Runs `work` when a permit is free, or fails with `WorkQueueFull`. */
  readonly run: <A, E, R>(work: Effect.Effect<A, E, R>) => Effect.Effect<A, E | WorkQueueFull, R>
  /** Works running now. */
  readonly active: () => number
  /** Works waiting now. */
  readonly waiting: () => number
}

/** Mean duration assumed before any work has finished. */
const FIRST_GUESS_MILLIS = 1_000
/** Weight of the newest duration in the running mean. */
const SMOOTHING = 0.2
const MAX_RETRY_AFTER_SECONDS = 60

export const makeWorkQueue = (options: WorkQueueOptions): WorkQueue => {
  let active = 0
  let meanMillis = FIRST_GUESS_MILLIS
  const waiters: Array<(granted: boolean) => void> = []
  const setActive = (n: number) => {
    active = n
    options.onActive?.(n)
  }

  /** Seconds until the line ahead of a newcomer has likely drained. */
  const retryAfterSeconds = () =>
    Math.min(
      MAX_RETRY_AFTER_SECONDS,
      Math.max(1, Math.ceil(((waiters.length + 1) / options.permits) * meanMillis / 1000))
    )

  // True with a permit held; false when the line is full or the wait ran out.
  const acquire = Effect.callback<boolean>((resume) => {
    if (active < options.permits) {
      setActive(active + 1)
      return resume(Effect.succeed(true))
    }
    if (waiters.length >= options.queue) return resume(Effect.succeed(false))
    const waiter = (granted: boolean) => {
      clearTimeout(timer)
      resume(Effect.succeed(granted))
    }
    const timer = setTimeout(() => {
      const at = waiters.indexOf(waiter)
      if (at >= 0) waiters.splice(at, 1)
      resume(Effect.succeed(false))
    }, options.waitMillis)
    waiters.push(waiter)
  })

  const release = (startedAt: number) =>
    Effect.sync(() => {
      meanMillis += SMOOTHING * (Math.max(1, Date.now() - startedAt) - meanMillis)
      const next = waiters.shift()
      // The permit passes to the first waiter; `active` stays.
      if (next !== undefined) next(true)
      else setActive(active - 1)
    })

  const run = <A, E, R>(work: Effect.Effect<A, E, R>): Effect.Effect<A, E | WorkQueueFull, R> =>
    Effect.acquireUseRelease(
      Effect.map(acquire, (granted) => ({ granted, startedAt: Date.now() })),
      ({ granted }): Effect.Effect<A, E | WorkQueueFull, R> =>
        granted ? work : Effect.fail(new WorkQueueFull({ retryAfterSeconds: retryAfterSeconds() })),
      ({ granted, startedAt }) => granted ? release(startedAt) : Effect.void
    )

  return { run, active: () => active, waiting: () => waiters.length }
}
