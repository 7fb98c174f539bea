/**
 * Condition-based synchronization for tests: wait until something holds rather than for a fixed time.
 */
import { Cause, Effect, Exit } from "effect"
import { sleepReal } from "./Problems.js"

export interface EventuallyOptions {
  /** Real-time budget before giving up with the last error; 5 s unless told. */
  readonly timeoutMs?: number
  /** Real-time pause between attempts; 10 ms unless told. */
  readonly intervalMs?: number
}

/**
 * Re-runs `effect` until it succeeds, then returns its value. A failure or a defect (a thrown `expect`)
 * counts as "not yet": the effect runs again after `intervalMs` until `timeoutMs` of real time has passed,
 * and then the last attempt's cause is re-raised, so the test fails with the assertion that never held.
 * Interruption is never retried. Real time (`Date.now`, `setTimeout`) because `it.effect` runs on the
 * TestClock, where `Effect.sleep` never elapses.
 */
export const eventually = <A, E, R>(
  effect: Effect.Effect<A, E, R>,
  options: EventuallyOptions = {}
): Effect.Effect<A, E, R> =>
  Effect.suspend(() => {
    const deadline = Date.now() + (options.timeoutMs ?? 5_000)
    const intervalMs = options.intervalMs ?? 10
    const attempt: Effect.Effect<A, E, R> = Effect.flatMap(Effect.exit(effect), (exit) => {
      if (Exit.isSuccess(exit)) return Effect.succeed(exit.value)
      if (Cause.hasInterruptsOnly(exit.cause) || Date.now() >= deadline) return exit
      return Effect.andThen(sleepReal(intervalMs), attempt)
    })
    return attempt
  })

/** `eventually` for promise-based tests: re-runs `attempt` until it resolves, rethrowing its last rejection. */
export const eventuallyAsync = async <A>(attempt: () => Promise<A>, options: EventuallyOptions = {}): Promise<A> => {
  const deadline = Date.now() + (options.timeoutMs ?? 5_000)
  const intervalMs = options.intervalMs ?? 10
  for (;;) {
    try {
      return await attempt()
    } catch (error) {
      if (Date.now() >= deadline) throw error
    }
    await new Promise<void>((resolve) => setTimeout(resolve, intervalMs))
  }
}
