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
 * Shapes across processes. A shared bucket's key names its shape: `RateLimiterLive` stores the bucket
 * `catalog:key:7` of capacity 600 and refill 20 as the row `catalog:key:7@600/20`. Every caller
 * passes its own capacity to `rate_limit_take`, which clamps the row to it, so two processes
 * configured differently on one row would clamp it for each other (the smaller burst winning for
 * everybody, silently); with the shape in the key each configuration has its own rows and nobody's
 * bucket is clamped by another's. What this costs: while processes with two shapes run together a
 * client can spend from both buckets (at most one budget of each), and a change of shape starts
 * every client from a full bucket once. What it gives: a rolling restart that changes a limit on
 * purpose needs no step of its own (the new shape applies to the new processes at once and to all of
 * them when the last old one stops; the old rows go idle and the cleanup removes them after a day),
 * and the hot path is unchanged (the key is one string longer). Backoffs keep their plain key: a
 * backoff counts attempts, and two backoff policies reading one count differ only in the delay they
 * make of it. So that a difference is never silent, a process records each configured shape as it
 * starts (`recordPolicy`, beside the start rather than before it, in the table `rate_limit_policies`
 * of migrations/0032: name, capacity, refill, when, by whom) and logs a WARNING naming the setting,
 * the stored value and its own when the stored shape differs; it then records its own. Nothing reads
 * that table on a request.
 *
 * Outages. `take`, `takeUpTo` and `admit` of `RateLimiterLive` die with the `SqlError` when the
 * database is unavailable: every identity limiter fails closed (503), since the endpoint it guards
 * (sign-in, the token endpoint, authorize, userinfo, revocation, uploads) needs the database anyway.
 * A leased budget may be given a local allowance instead (`makeLeasedBudget`, the catalog's request
 * budget: a cached read needs no database, so it need not fail because its budget lives there).
 *
 * Why not `effect/persistence/RateLimiter`: its stores are memory and Redis; these buckets live in
 * PostgreSQL, the one store every process of a deployment shares, and sign-in needs the token and
 * the backoff counted in one statement (`admit`).
 */
import { Clock, Context, Deferred, Effect, Layer, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Os from "node:os"
import { countRateLimitLocalAllowance, countRateLimitRefusal } from "./Metrics.js"
import { isDatabaseUnavailable } from "./SqlState.js"
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

/**
 * The settings a configured `BucketPolicy` is read from, named in the warning of `recordPolicy`: the
 * burst, and the refill per second or (`refillPerMinute`) per minute.
 */
export type PolicySettings =
  | { readonly capacity: string; readonly refillPerSecond: string }
  | { readonly capacity: string; readonly refillPerMinute: string }

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
  /**
   * At start: records `policy` as the shape of the configured limit `name` and logs a WARNING when
   * another shape was recorded before (see "Shapes across processes" above). Never fails: a database
   * that cannot be written to only loses the warning.
   */
  readonly recordPolicy: (name: string, settings: PolicySettings, policy: BucketPolicy) => Effect.Effect<void>
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

/** The row of a shared bucket: its key with its shape (see "Shapes across processes" above). */
export const sharedBucketKey = (key: string, policy: BucketPolicy): string =>
  `${key}@${policy.capacity}/${policy.refillPerSecond}`

const TakeRow = Schema.Struct({ granted: Schema.Number, tokens: Schema.Number })
const PolicyRow = Schema.Struct({
  capacity: Schema.Number,
  refill_per_second: Schema.Number,
  set_at: Schema.String,
  set_by: Schema.String
})
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
      const rowKey = sharedBucketKey(key, policy)
      const rows = yield* sql`
        SELECT granted, tokens
        FROM rate_limit_take(${rowKey}, ${policy.capacity}::float8, ${policy.refillPerSecond}::float8, ${want}::integer)
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
      const bucketKey = sharedBucketKey(attempt.bucket, bucket)
      const rows = yield* sql`
        SELECT allowed, retry_after
        FROM rate_limit_admit(${bucketKey}, ${bucket.capacity}::float8, ${bucket.refillPerSecond}::float8,
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
      yield* sql`DELETE FROM rate_limit_buckets WHERE key = ${sharedBucketKey(attempt.bucket, attempt.bucketPolicy)}`
        .pipe(Effect.orDie)
    })

    // The previous row and the write in one statement: the CTE `previous` reads the snapshot the
    // statement started with, before its own upsert.
    const setBy = `${Os.hostname()} pid ${process.pid}`
    const decodePolicy = Schema.decodeUnknownEffect(Schema.Array(PolicyRow))
    const recordPolicy = (name: string, settings: PolicySettings, policy: BucketPolicy) =>
      Effect.gen(function*() {
        const rows = yield* sql`
          WITH previous AS (
            SELECT capacity, refill_per_second, set_at, set_by FROM rate_limit_policies WHERE name = ${name}
          ), recorded AS (
            INSERT INTO rate_limit_policies (name, capacity, refill_per_second, set_at, set_by)
            VALUES (${name}, ${policy.capacity}::float8, ${policy.refillPerSecond}::float8, now(), ${setBy})
            ON CONFLICT (name) DO UPDATE SET capacity = EXCLUDED.capacity,
              refill_per_second = EXCLUDED.refill_per_second, set_at = EXCLUDED.set_at, set_by = EXCLUDED.set_by
          )
          SELECT capacity, refill_per_second, to_char(set_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"') AS set_at,
                 set_by
          FROM previous
        `.pipe(Effect.flatMap(decodePolicy))
        const stored = rows[0]
        if (stored === undefined) return
        const [refillSetting, perUnit] = "refillPerSecond" in settings
          ? [settings.refillPerSecond, 1]
          : [settings.refillPerMinute, 60]
        const differences = [
          [settings.capacity, stored.capacity, policy.capacity],
          [refillSetting, stored.refill_per_second * perUnit, policy.refillPerSecond * perUnit]
        ].filter(([, was, own]) => was !== own)
        for (const [setting, was, own] of differences) {
          yield* Effect.logWarning(
            `rate limit ${name}: ${setting} is ${own} here but ${was} as recorded by ${stored.set_by} at ` +
              `${stored.set_at}; this process keeps its own buckets of its own shape (a client may spend ` +
              `from both while both shapes run) and records its own`
          )
        }
      }).pipe(Effect.catchCause((cause) => Effect.logWarning(`could not record the rate limit ${name}`, cause)))

    return RateLimiter.of({
      take: (key, policy) => Effect.map(takeUpTo(key, policy, 1), (lease) => counted(key)(fromLease(lease))),
      takeUpTo,
      admit: (attempt) => Effect.map(admit(attempt), counted(attempt.bucket)),
      succeeded,
      recordPolicy
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
    succeeded,
    // One process, one shape: nothing to compare with.
    recordPolicy: () => Effect.void
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
/** While the shared store is unreachable, how long a budget spends local allowances before asking it again. */
const STORE_RETRY_MILLIS = 1_000

export interface LeasedBudgetOptions {
  /**
   * When the shared bucket cannot be reached (`isDatabaseUnavailable`: refused, lost, or cut by the
   * deadline of src/platform/DatabaseDeadline.ts), admit from a bucket of the same policy in this
   * process's memory instead of failing; `limiter` names it in the log. Without it the failure
   * reaches the caller (503).
   */
  readonly localAllowance?: { readonly limiter: string }
}

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
 *
 * Local allowances (`options.localAllowance`). When a refill finds the store unavailable, the key is
 * admitted from a bucket of the same policy, whole, in this process's memory (a refusal there is a
 * 429 with its `Retry-After`, not a 503), and for `STORE_RETRY_MILLIS` every key without a lease goes
 * there without asking the store; then the next refill asks it again, alone: while it waits (a
 * frozen database holds it for the deadline) the others stay local. The first failure of an outage
 * logs one WARNING, the first success after it one INFO; each admission from memory is counted in
 * `rate_limit_local_allowances_total`. During an outage a client thus gets at most one budget per
 * process (its burst, then its rate); the policy is not divided by the number of processes, which no
 * process knows, and what a client can do meanwhile is bounded anyway: everything else it asks for
 * needs the database and fails. When the store answers again its buckets apply again; what was spent
 * locally is not paid back to them. The local buckets are kept, so a client that spent its local
 * budget in one outage finds it still spent if another follows soon.
 */
export const makeLeasedBudget = (
  limiter: Context.Service.Shape<typeof RateLimiter>,
  policy: BucketPolicy,
  leaseMax: number,
  options: LeasedBudgetOptions = {}
): Effect.Effect<LeasedBudget> =>
  Effect.gen(function*() {
    const local = yield* makeMemoryRateLimiter
    const fallback = options.localAllowance
    /** Until when keys without a lease are admitted locally without asking the store. */
    let storeDownUntil = 0
    /** Whether the store was last found unavailable (so the outage has been logged). */
    let storeDown = false
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
          Effect.map((result): LeaseResult | undefined => result),
          Effect.catchDefect((defect) =>
            fallback !== undefined && isDatabaseUnavailable(defect) ? Effect.succeed(undefined) : Effect.die(defect)
          ),
          Effect.ensuring(Effect.suspend(() => {
            lease.refill = undefined
            return Deferred.succeed(done, undefined)
          }))
        )
        const now = yield* Clock.currentTimeMillis
        if (taken === undefined) {
          storeDownUntil = now + STORE_RETRY_MILLIS
          if (!storeDown) {
            storeDown = true
            yield* Effect.logWarning("rate limits use local allowances: database unavailable").pipe(
              Effect.annotateLogs("limiter", fallback!.limiter)
            )
          }
          return yield* takeLocally(key)
        }
        if (storeDown) {
          storeDown = false
          storeDownUntil = 0
          yield* Effect.logInfo("rate limits use the shared buckets again").pipe(
            Effect.annotateLogs("limiter", fallback!.limiter)
          )
        }
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

    const takeLocally = (key: string): Effect.Effect<Admission> =>
      Effect.map(local.takeUpTo(key, policy, 1), (taken) => {
        if (taken.granted === 0) {
          countRateLimitRefusal(key)
          return { retryAfterSeconds: taken.retryAfterSeconds, remaining: 0 }
        }
        countRateLimitLocalAllowance(key)
        return { retryAfterSeconds: 0, remaining: taken.remaining }
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
        if (spent !== undefined) return Effect.succeed(spent)
        if (now < storeDownUntil) return takeLocally(key)
        // During an outage one refill at a time asks the store; the others stay local until it answers.
        if (storeDown) storeDownUntil = now + STORE_RETRY_MILLIS
        return refillAndTake(key)
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
