/**
 * Token buckets for the identity provider (DECISIONS 9): the token endpoint per `client_id`, login
 * per account and per IP. One interface, two layers:
 *
 * - `RateLimiterLive`: PostgreSQL. One atomic statement refills and takes against
 *   `rate_limit_buckets`, so every process shares the same buckets (ARCHITECTURE "Scale-out").
 * - `RateLimiterMemory`: a map in this process; a single-process option and the unit-test layer.
 *
 * A bucket holds at most `capacity` tokens and gains `refillPerSecond` per second; `take` takes one,
 * `takeUpTo` as many as are there up to a number (a lease a process spends from memory). A refused
 * call takes nothing, so a client that keeps hammering is not pushed further back.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Context, Duration, Effect, Layer, Schema } from "effect"

export interface BucketPolicy {
  /** Burst size: the most calls allowed back to back. */
  readonly capacity: number
  /** Sustained rate. */
  readonly refillPerSecond: number
}

export interface TakeResult {
  readonly allowed: boolean
  /** Whole seconds until one token is available (the `Retry-After` value); 0 when allowed. */
  readonly retryAfterSeconds: number
}

export interface LeaseResult {
  /** Tokens taken, from 0 to the number asked for. */
  readonly granted: number
  /** Whole seconds until one token is available when none was granted; 0 otherwise. */
  readonly retryAfterSeconds: number
}

export class RateLimiter extends Context.Tag("identity/RateLimiter")<RateLimiter, {
  readonly take: (key: string, policy: BucketPolicy) => Effect.Effect<TakeResult>
  readonly takeUpTo: (key: string, policy: BucketPolicy, want: number) => Effect.Effect<LeaseResult>
}>() {}

const fromLease = (lease: LeaseResult): TakeResult => ({
  allowed: lease.granted > 0,
  retryAfterSeconds: lease.retryAfterSeconds
})

const retryAfter = (tokens: number, policy: BucketPolicy): number =>
  Math.max(1, Math.ceil((1 - tokens) / policy.refillPerSecond))

// ---------------------------------------------------------------------------------------------
// PostgreSQL
// ---------------------------------------------------------------------------------------------

/** Buckets untouched this long are full again (for any policy refilling within a day) and pruned. */
const PRUNE_AFTER = Duration.days(1)
const PRUNE_EVERY = Duration.minutes(10)

const TakeRow = Schema.Struct({ granted: Schema.Number, tokens: Schema.Number })

export const RateLimiterLive: Layer.Layer<RateLimiter, never, SqlClient.SqlClient> = Layer.scoped(
  RateLimiter,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const decode = Schema.decodeUnknown(Schema.Array(TakeRow))

    // `rate_limit_take` (migrations/0007) locks the bucket (creating it full on first use), refills
    // it from the elapsed time on the database clock, so processes agree, and takes what it grants.
    const takeUpTo = Effect.fn("RateLimiter.takeUpTo")(function*(key: string, policy: BucketPolicy, want: number) {
      const rows = yield* sql`
        SELECT granted, tokens
        FROM rate_limit_take(${key}, ${policy.capacity}::float8, ${policy.refillPerSecond}::float8, ${want}::integer)
      `.pipe(Effect.flatMap(decode), Effect.orDie)
      const row = rows[0] ?? { granted: 0, tokens: 0 }
      return { granted: row.granted, retryAfterSeconds: row.granted > 0 ? 0 : retryAfter(row.tokens, policy) }
    })

    yield* sql`DELETE FROM rate_limit_buckets WHERE updated_at < now() - make_interval(secs => ${
      Duration.toSeconds(PRUNE_AFTER)
    })`.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("rate limit bucket pruning failed", cause)),
      Effect.delay(PRUNE_EVERY),
      Effect.forever,
      Effect.forkScoped
    )

    return RateLimiter.of({ take: (key, policy) => Effect.map(takeUpTo(key, policy, 1), fromLease), takeUpTo })
  })
)

// ---------------------------------------------------------------------------------------------
// Memory
// ---------------------------------------------------------------------------------------------

interface Bucket {
  tokens: number
  updatedAt: number
}

/** Above this many buckets, full ones are dropped (a full bucket equals a missing one). */
const MEMORY_SWEEP_THRESHOLD = 10_000

export const makeMemoryRateLimiter = Effect.sync(() => {
  const buckets = new Map<string, Bucket>()
  // Each bucket is refilled with its own policy at sweep time; policies are remembered per key.
  const policies = new Map<string, BucketPolicy>()
  const refilled = (bucket: Bucket, policy: BucketPolicy, now: number) =>
    Math.min(policy.capacity, bucket.tokens + Math.max(0, now - bucket.updatedAt) / 1000 * policy.refillPerSecond)

  const sweep = (now: number) => {
    for (const [key, bucket] of buckets) {
      const policy = policies.get(key)!
      if (refilled(bucket, policy, now) >= policy.capacity) {
        buckets.delete(key)
        policies.delete(key)
      }
    }
  }

  // Synchronous between reading the clock and writing the bucket, so fibers cannot interleave.
  const takeUpTo = (key: string, policy: BucketPolicy, want: number) =>
    Effect.map(Clock.currentTimeMillis, (now): LeaseResult => {
      const bucket = buckets.get(key)
      const tokens = bucket === undefined ? policy.capacity : refilled(bucket, policy, now)
      const granted = Math.max(0, Math.min(want, Math.floor(tokens)))
      if (bucket === undefined && buckets.size >= MEMORY_SWEEP_THRESHOLD) sweep(now)
      // A refused call leaves the bucket as it was, refill clock included.
      if (granted > 0 || bucket === undefined) buckets.set(key, { tokens: tokens - granted, updatedAt: now })
      policies.set(key, policy)
      return { granted, retryAfterSeconds: granted > 0 ? 0 : retryAfter(tokens, policy) }
    })

  return RateLimiter.of({ take: (key, policy) => Effect.map(takeUpTo(key, policy, 1), fromLease), takeUpTo })
})

export const RateLimiterMemory: Layer.Layer<RateLimiter> = Layer.effect(RateLimiter, makeMemoryRateLimiter)
