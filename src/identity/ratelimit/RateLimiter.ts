/**
 * Token buckets for the identity provider (DECISIONS 9): the token endpoint per `client_id`, login
 * per account and per IP. One interface, two layers:
 *
 * - `RateLimiterLive`: PostgreSQL. One atomic statement refills and takes against
 *   `rate_limit_buckets`, so every process shares the same buckets (ARCHITECTURE "Scale-out").
 * - `RateLimiterMemory`: a map in this process; a single-process option and the unit-test layer.
 *
 * A bucket holds at most `capacity` tokens and gains `refillPerSecond` per second; each call takes
 * one. A refused call takes nothing, so a client that keeps hammering is not pushed further back.
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

export class RateLimiter extends Context.Tag("identity/RateLimiter")<RateLimiter, {
  readonly take: (key: string, policy: BucketPolicy) => Effect.Effect<TakeResult>
}>() {}

const retryAfter = (tokens: number, policy: BucketPolicy): number =>
  Math.max(1, Math.ceil((1 - tokens) / policy.refillPerSecond))

// ---------------------------------------------------------------------------------------------
// PostgreSQL
// ---------------------------------------------------------------------------------------------

/** Buckets untouched this long are full again (for any policy refilling within a day) and pruned. */
const PRUNE_AFTER = Duration.days(1)
const PRUNE_EVERY = Duration.minutes(10)

const TakeRow = Schema.Struct({ allowed: Schema.Boolean, tokens: Schema.Number })

export const RateLimiterLive: Layer.Layer<RateLimiter, never, SqlClient.SqlClient> = Layer.scoped(
  RateLimiter,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const decode = Schema.decodeUnknown(Schema.Array(TakeRow))

    // The first call inserts a bucket that is full minus one. Otherwise the row is locked, refilled
    // from the elapsed time (database clock, so processes agree) and decremented only when at least
    // one token is there; the UPDATE's WHERE leaves a refused bucket untouched. When it refuses,
    // `upsert` returns no row and the second branch reads the bucket to compute Retry-After.
    const take = Effect.fn("RateLimiter.take")(function*(key: string, policy: BucketPolicy) {
      const { capacity, refillPerSecond: rate } = policy
      const rows = yield* sql`
        WITH upsert AS (
          INSERT INTO rate_limit_buckets AS b (key, tokens, updated_at)
          VALUES (${key}, ${capacity}::float8 - 1, now())
          ON CONFLICT (key) DO UPDATE
          SET tokens = least(${capacity}::float8,
                             b.tokens + greatest(0, extract(epoch FROM now() - b.updated_at)) * ${rate}::float8) - 1,
              updated_at = now()
          WHERE least(${capacity}::float8,
                      b.tokens + greatest(0, extract(epoch FROM now() - b.updated_at)) * ${rate}::float8) >= 1
          RETURNING tokens
        )
        SELECT true AS allowed, tokens FROM upsert
        UNION ALL
        SELECT false AS allowed,
               least(${capacity}::float8,
                     b.tokens + greatest(0, extract(epoch FROM now() - b.updated_at)) * ${rate}::float8) AS tokens
        FROM rate_limit_buckets b
        WHERE b.key = ${key} AND NOT EXISTS (SELECT 1 FROM upsert)
      `.pipe(Effect.flatMap(decode), Effect.orDie)
      const row = rows[0]
      if (row?.allowed === true) return { allowed: true, retryAfterSeconds: 0 }
      // `upsert` returns nothing only when it refused. The read branch can still miss the row when a
      // concurrent first insert committed after this statement's snapshot; then assume an empty bucket.
      return { allowed: false, retryAfterSeconds: retryAfter(row?.tokens ?? 0, policy) }
    })

    yield* sql`DELETE FROM rate_limit_buckets WHERE updated_at < now() - make_interval(secs => ${
      Duration.toSeconds(PRUNE_AFTER)
    })`.pipe(
      Effect.catchAllCause((cause) => Effect.logWarning("rate limit bucket pruning failed", cause)),
      Effect.delay(PRUNE_EVERY),
      Effect.forever,
      Effect.forkScoped
    )

    return RateLimiter.of({ take })
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
  const take = (key: string, policy: BucketPolicy) =>
    Effect.map(Clock.currentTimeMillis, (now): TakeResult => {
      const bucket = buckets.get(key)
      const tokens = bucket === undefined ? policy.capacity : refilled(bucket, policy, now)
      const allowed = tokens >= 1
      if (bucket === undefined && buckets.size >= MEMORY_SWEEP_THRESHOLD) sweep(now)
      buckets.set(key, { tokens: allowed ? tokens - 1 : tokens, updatedAt: now })
      policies.set(key, policy)
      return allowed ? { allowed, retryAfterSeconds: 0 } : { allowed, retryAfterSeconds: retryAfter(tokens, policy) }
    })

  return RateLimiter.of({ take })
})

export const RateLimiterMemory: Layer.Layer<RateLimiter> = Layer.effect(RateLimiter, makeMemoryRateLimiter)
