/**
 * Token buckets shared by every process: the catalog's request budget per credential; the identity
 * provider's token endpoint per `client_id`, sign-in per address and per (account, address),
 * authorize, userinfo and revocation per address; and backoffs, the growing delays of sign-in per
 * account. One interface, two layers:
 *
 * - `RateLimiterLive`: PostgreSQL. One atomic statement refills and takes against
 *   `rate_limit_buckets`, so every process shares the same buckets.
 * - `RateLimiterMemory`: a map in this process; a single-process option and the unit-test layer.
 *
 * A bucket holds at most `capacity` tokens and gains `refillPerSecond` per second; `take` takes one,
 * `takeUpTo` as many as are there up to a number (a lease a process spends from memory). A refused
 * call takes nothing, so a client that keeps hammering is not pushed further back.
 *
 * A backoff counts attempts, forgets them at `decayPerSecond`, and past `free` of them makes the
 * next attempt wait a delay that doubles from one second up to `maxDelaySeconds`. `admit` takes a
 * bucket's token and counts the attempt in a backoff together, or neither; the attempt counts as a
 * failure from the start, so concurrent attempts cannot slip past the delay together, and
 * `succeeded` takes it back. Rows untouched for a day are removed by the identity cleanup job
 * (src/identity/cleanup/Cleanup.ts): by then every bucket is full and every backoff has forgotten.
 *
 * Why not `effect/persistence/RateLimiter`: its stores are memory and Redis; these buckets live in
 * PostgreSQL, the one store every process of a deployment shares, and sign-in needs the token and
 * the backoff counted in one statement (`admit`).
 */
import { Clock, Context, Deferred, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { countRateLimitRefusal } from "./Metrics.js"
import { serializeBareItem, serializeList } from "./StructuredFields.js"

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
  /** Whole tokens left in the bucket after this call. */
  readonly remaining: number
}

export interface BackoffPolicy {
  /** Attempts counted before any delay. */
  readonly free: number
  /** Counted attempts forgotten per second. */
  readonly decayPerSecond: number
  /** The longest delay; delays double from one second up to it. */
  readonly maxDelaySeconds: number
}

/** An attempt: one token of `bucket`, counted in `backoff`. */
export interface Attempt {
  readonly bucket: string
  readonly bucketPolicy: BucketPolicy
  readonly backoff: string
  readonly backoffPolicy: BackoffPolicy
}

export class RateLimiter extends Context.Service<RateLimiter, {
  readonly take: (key: string, policy: BucketPolicy) => Effect.Effect<TakeResult>
  readonly takeUpTo: (key: string, policy: BucketPolicy, want: number) => Effect.Effect<LeaseResult>
  /**
   * Admits the attempt when its bucket holds a token and its backoff's delay has run out: takes the
   * token and counts the attempt, atomically. A refused attempt changes nothing; `retryAfterSeconds`
   * says when the bucket or the delay would allow it.
   */
  readonly admit: (attempt: Attempt) => Effect.Effect<TakeResult>
  /** The admitted attempt succeeded: its bucket is full again and its backoff no longer counts it. */
  readonly succeeded: (attempt: Attempt) => Effect.Effect<void>
}>()("platform/RateLimiter") {}

const fromLease = (lease: LeaseResult): TakeResult => ({
  allowed: lease.granted > 0,
  retryAfterSeconds: lease.retryAfterSeconds
})

/**
 * A verdict of `take` or `admit`, a refusal counted by limiter (src/platform/Metrics.ts). `takeUpTo`
 * is not counted: it is how a leased budget refills, whose refusals `makeLeasedBudget` counts.
 */
const counted = (key: string) => (result: TakeResult): TakeResult => {
  if (!result.allowed) countRateLimitRefusal(key)
  return result
}

const retryAfter = (tokens: number, policy: BucketPolicy): number =>
  Math.max(1, Math.ceil((1 - tokens) / policy.refillPerSecond))

/** A backoff counts at most this many attempts past `free` (the delay is long capped by then). */
const BACKOFF_HEADROOM = 32

/** Seconds the next attempt waits after the attempt that brought the count to `count`. */
export const backoffDelay = (count: number, policy: BackoffPolicy): number =>
  count <= policy.free ? 0 : Math.min(policy.maxDelaySeconds, 2 ** (count - policy.free - 1))

// ---------------------------------------------------------------------------------------------
// The IETF RateLimit header fields
// ---------------------------------------------------------------------------------------------

/**
 * `RateLimit-Policy` of one policy (draft-ietf-httpapi-ratelimit-headers): a List of one Item, the
 * policy's name as an sf-string with its quota `q` and window `w` in seconds (RFC 9651, serialized by
 * StructuredFields.ts): `"requests";q=600;w=30`. Several policies of one answer are one List, so
 * appending `, <value>` to the field adds one.
 */
export const rateLimitPolicyField = (name: string, quota: number, windowSeconds: number): string =>
  serializeList([{ value: name, params: { q: quota, w: windowSeconds } }])

/**
 * `RateLimit` of one policy: its name with what is left `r` and the seconds `t` until the quota is
 * whole again: `"requests";r=599;t=1`.
 */
export const rateLimitField = (name: string, remaining: number, resetSeconds: number): string =>
  rateLimitFieldOf(name)(remaining, resetSeconds)

/**
 * `rateLimitField` of one policy, its name serialized once: the catalog writes the field on every
 * answer. The parameters are an sf-integer each after their fixed keys (RFC 9651 section 4.1.1.2).
 */
export const rateLimitFieldOf = (name: string): (remaining: number, resetSeconds: number) => string => {
  const item = serializeBareItem(name)
  return (remaining, resetSeconds) => `${item};r=${serializeBareItem(remaining)};t=${serializeBareItem(resetSeconds)}`
}

// ---------------------------------------------------------------------------------------------
// PostgreSQL
// ---------------------------------------------------------------------------------------------

const TakeRow = Schema.Struct({ granted: Schema.Number, tokens: Schema.Number })
const AdmitRow = Schema.Struct({ allowed: Schema.Boolean, retry_after: Schema.Number })

export const RateLimiterLive: Layer.Layer<RateLimiter, never, SqlClient.SqlClient> = Layer.effect(
  RateLimiter,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const decode = Schema.decodeUnknownEffect(Schema.Array(TakeRow))
    const decodeAdmit = Schema.decodeUnknownEffect(Schema.Array(AdmitRow))

    // `rate_limit_take` (migrations/0007) locks the bucket (creating it full on first use), refills
    // it from the elapsed time on the database clock, so processes agree, and takes what it grants.
    const takeUpTo = Effect.fn("RateLimiter.takeUpTo")(function*(key: string, policy: BucketPolicy, want: number) {
      const rows = yield* sql`
        SELECT granted, tokens
        FROM rate_limit_take(${key}, ${policy.capacity}::float8, ${policy.refillPerSecond}::float8, ${want}::integer)
      `.pipe(Effect.flatMap(decode), Effect.orDie)
      const row = rows[0] ?? { granted: 0, tokens: 0 }
      return {
        granted: row.granted,
        retryAfterSeconds: row.granted > 0 ? 0 : retryAfter(row.tokens, policy),
        remaining: Math.max(0, Math.floor(row.tokens))
      }
    })

    // `rate_limit_admit` (migrations/0013): one round trip that locks the backoff's row, then the
    // bucket's, and takes and counts only when both allow.
    const admit = Effect.fn("RateLimiter.admit")(function*(attempt: Attempt) {
      const { backoffPolicy: backoff, bucketPolicy: bucket } = attempt
      const rows = yield* sql`
        SELECT allowed, retry_after
        FROM rate_limit_admit(${attempt.bucket}, ${bucket.capacity}::float8, ${bucket.refillPerSecond}::float8,
                              ${attempt.backoff}, ${backoff.free}::float8, ${backoff.decayPerSecond}::float8,
                              ${backoff.maxDelaySeconds}::float8, ${backoff.free + BACKOFF_HEADROOM}::float8)
      `.pipe(Effect.flatMap(decodeAdmit), Effect.orDie)
      const row = rows[0] ?? { allowed: false, retry_after: 1 }
      return { allowed: row.allowed, retryAfterSeconds: row.allowed ? 0 : Math.max(1, Math.ceil(row.retry_after)) }
    })

    // Two statements, one row each: `rate_limit_admit` locks the backoff before the bucket, and a
    // statement touching both in the other order could deadlock with it.
    const succeeded = Effect.fn("RateLimiter.succeeded")(function*(attempt: Attempt) {
      yield* sql`
        UPDATE rate_limit_buckets
        SET tokens = greatest(0, tokens - greatest(0, extract(epoch FROM now() - updated_at))
                                        * ${attempt.backoffPolicy.decayPerSecond}::float8 - 1),
            updated_at = now()
        WHERE key = ${attempt.backoff}
      `.pipe(Effect.orDie)
      yield* sql`DELETE FROM rate_limit_buckets WHERE key = ${attempt.bucket}`.pipe(Effect.orDie)
    })

    return RateLimiter.of({
      take: (key, policy) => Effect.map(takeUpTo(key, policy, 1), (lease) => counted(key)(fromLease(lease))),
      takeUpTo,
      admit: (attempt) => Effect.map(admit(attempt), counted(attempt.bucket)),
      succeeded
    })
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

interface Backoff {
  count: number
  updatedAt: number
  readonly policy: BackoffPolicy
}

export const makeMemoryRateLimiter = Effect.sync(() => {
  const buckets = new Map<string, Bucket>()
  // Each bucket is refilled with its own policy at sweep time; policies are remembered per key.
  const policies = new Map<string, BucketPolicy>()
  const backoffs = new Map<string, Backoff>()
  const refilled = (bucket: Bucket, policy: BucketPolicy, now: number) =>
    Math.min(policy.capacity, bucket.tokens + Math.max(0, now - bucket.updatedAt) / 1000 * policy.refillPerSecond)
  const secondsSince = (then: number, now: number) => Math.max(0, now - then) / 1000
  const forgotten = (backoff: Backoff, now: number) =>
    Math.max(0, backoff.count - secondsSince(backoff.updatedAt, now) * backoff.policy.decayPerSecond)

  const sweep = (now: number) => {
    for (const [key, bucket] of buckets) {
      const policy = policies.get(key)!
      if (refilled(bucket, policy, now) >= policy.capacity) {
        buckets.delete(key)
        policies.delete(key)
      }
    }
    for (const [key, backoff] of backoffs) {
      const waited = secondsSince(backoff.updatedAt, now) >= backoffDelay(backoff.count, backoff.policy)
      if (waited && forgotten(backoff, now) === 0) backoffs.delete(key)
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
      return {
        granted,
        retryAfterSeconds: granted > 0 ? 0 : retryAfter(tokens, policy),
        remaining: Math.max(0, Math.floor(tokens - granted))
      }
    })

  // The same rules as `rate_limit_admit` (migrations/0013), synchronous like `takeUpTo`.
  const admit = (attempt: Attempt) =>
    Effect.map(Clock.currentTimeMillis, (now): TakeResult => {
      const { backoffPolicy, bucketPolicy } = attempt
      const bucket = buckets.get(attempt.bucket)
      const tokens = bucket === undefined ? bucketPolicy.capacity : refilled(bucket, bucketPolicy, now)
      if (tokens < 1) return { allowed: false, retryAfterSeconds: retryAfter(tokens, bucketPolicy) }
      const backoff = backoffs.get(attempt.backoff)
      if (backoff !== undefined) {
        const wait = backoffDelay(backoff.count, backoffPolicy) - secondsSince(backoff.updatedAt, now)
        if (wait > 0) return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(wait)) }
      }
      if (buckets.size + backoffs.size >= MEMORY_SWEEP_THRESHOLD) sweep(now)
      const count = backoff === undefined ? 0 : forgotten(backoff, now)
      backoffs.set(attempt.backoff, {
        count: Math.min(count + 1, backoffPolicy.free + BACKOFF_HEADROOM),
        updatedAt: now,
        policy: backoffPolicy
      })
      buckets.set(attempt.bucket, { tokens: tokens - 1, updatedAt: now })
      policies.set(attempt.bucket, bucketPolicy)
      return { allowed: true, retryAfterSeconds: 0 }
    })

  const succeeded = (attempt: Attempt) =>
    Effect.map(Clock.currentTimeMillis, (now) => {
      buckets.delete(attempt.bucket)
      policies.delete(attempt.bucket)
      const backoff = backoffs.get(attempt.backoff)
      if (backoff !== undefined) {
        backoff.count = Math.max(0, forgotten(backoff, now) - 1)
        backoff.updatedAt = now
      }
    })

  return RateLimiter.of({
    take: (key, policy) => Effect.map(takeUpTo(key, policy, 1), (lease) => counted(key)(fromLease(lease))),
    takeUpTo,
    admit: (attempt) => Effect.map(admit(attempt), counted(attempt.bucket)),
    succeeded
  })
})

export const RateLimiterMemory: Layer.Layer<RateLimiter> = Layer.effect(RateLimiter, makeMemoryRateLimiter)

// ---------------------------------------------------------------------------------------------
// Leased buckets
// ---------------------------------------------------------------------------------------------

/** How long a process keeps leased tokens; unspent ones lapse, which only makes the limit stricter. */
const LEASE_MILLIS = 1_000
/** Above this many keys a map of this process's limiter state starts afresh. */
const LEASE_KEYS_MAX = 10_000

/** The verdict on one request: admitted (`retryAfterSeconds` 0) or refused for that many seconds. */
export interface Admission {
  readonly retryAfterSeconds: number
  /** Tokens left for the key as this process knows them (its lease plus the shared bucket's rest). */
  readonly remaining: number
}

export interface LeasedBudget {
  /** Takes one token of `key`'s shared bucket, from this process's lease or a new one. */
  readonly take: (key: string) => Effect.Effect<Admission>
  /**
   * Takes one token from this process's current lease without any I/O, for answers given before
   * the request stack runs. `undefined` when there is no lease to spend from: the caller then goes
   * the way of `take`.
   */
  readonly takeNow: (key: string) => Admission | undefined
}

/**
 * Shared buckets (one per key, all with `policy`) for a path too busy for a database round trip per
 * request: a process takes several tokens of the shared bucket at once (`capacity / 20`, at most
 * `leaseMax`) and spends them from memory for up to a second, with one refill per key at a time; a
 * key the shared bucket refused is refused from memory until it refills. With n processes a key can
 * overdraw by at most n leases.
 */
export const makeLeasedBudget = (
  limiter: Context.Service.Shape<typeof RateLimiter>,
  policy: BucketPolicy,
  leaseMax: number
): Effect.Effect<LeasedBudget> =>
  Effect.sync(() => {
    const blockedUntil = new Map<string, number>()
    interface Lease {
      tokens: number
      until: number
      /** The shared bucket's rest when the lease was taken. */
      shared: number
      refill: Deferred.Deferred<void> | undefined
    }
    const leases = new Map<string, Lease>()
    const leaseSize = Math.max(1, Math.min(leaseMax, Math.floor(policy.capacity / 20)))

    const blocked = (key: string, now: number) => {
      const until = blockedUntil.get(key)
      return until !== undefined && until > now ? Math.max(1, Math.ceil((until - now) / 1000)) : 0
    }

    const refill = (key: string, lease: Lease) =>
      Effect.gen(function*() {
        const done = yield* Deferred.make<void>()
        lease.refill = done
        const taken = yield* limiter.takeUpTo(key, policy, leaseSize).pipe(
          Effect.ensuring(Effect.suspend(() => {
            lease.refill = undefined
            return Deferred.succeed(done, undefined)
          }))
        )
        const now = yield* Clock.currentTimeMillis
        if (taken.granted === 0) {
          countRateLimitRefusal(key)
          if (blockedUntil.size > LEASE_KEYS_MAX) blockedUntil.clear()
          blockedUntil.set(key, now + taken.retryAfterSeconds * 1000)
          return { retryAfterSeconds: taken.retryAfterSeconds, remaining: 0 }
        }
        blockedUntil.delete(key)
        lease.tokens = taken.granted - 1
        lease.shared = taken.remaining
        lease.until = now + LEASE_MILLIS
        return { retryAfterSeconds: 0, remaining: lease.tokens + lease.shared }
      })

    const takeNow = (key: string, now = Date.now()): Admission | undefined => {
      const lease = leases.get(key)
      if (lease === undefined || lease.until <= now || lease.tokens <= 0) return undefined
      lease.tokens -= 1
      return { retryAfterSeconds: 0, remaining: lease.tokens + lease.shared }
    }

    const refillAndTake = (key: string): Effect.Effect<Admission> =>
      Effect.gen(function*() {
        let lease = leases.get(key)
        if (lease === undefined) {
          if (leases.size > LEASE_KEYS_MAX) leases.clear()
          lease = { tokens: 0, until: 0, shared: 0, refill: undefined }
          leases.set(key, lease)
        }
        if (lease.refill === undefined) return yield* refill(key, lease)
        yield* Deferred.await(lease.refill)
        return yield* take(key)
      })

    // Every catalog request takes a token, almost always from its lease in memory: that is answered
    // without a generator.
    const take = (key: string): Effect.Effect<Admission> =>
      Effect.flatMap(Clock.currentTimeMillis, (now) => {
        const wait = blocked(key, now)
        if (wait > 0) {
          countRateLimitRefusal(key)
          return Effect.succeed({ retryAfterSeconds: wait, remaining: 0 })
        }
        const spent = takeNow(key, now)
        return spent !== undefined ? Effect.succeed(spent) : refillAndTake(key)
      })

    return { take, takeNow: (key) => takeNow(key) }
  })

/** Lease sizes of `makeLeasedBuckets`: a few tokens at a time. */
const LEASE_MAX = 16

/**
 * A leased budget (`makeLeasedBudget`, at most 16 tokens a lease) with an in-process bucket of the
 * same policy in front, which cuts a burst to `capacity` round trips. Answers the `Retry-After`
 * seconds of a refused request, 0 for an admitted one.
 */
export const makeLeasedBuckets = (
  limiter: Context.Service.Shape<typeof RateLimiter>,
  policy: BucketPolicy
): Effect.Effect<(key: string) => Effect.Effect<number>> =>
  Effect.gen(function*() {
    const local = yield* makeMemoryRateLimiter
    const budget = yield* makeLeasedBudget(limiter, policy, LEASE_MAX)
    return (key: string) =>
      Effect.gen(function*() {
        const inProcess = yield* local.take(key, policy)
        if (!inProcess.allowed) return inProcess.retryAfterSeconds
        return (yield* budget.take(key)).retryAfterSeconds
      })
  })
