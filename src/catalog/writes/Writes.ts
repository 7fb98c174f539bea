/**
 * The write runner: the one path every catalog write takes (docs/writing.md). It owns the
 * transaction and, in it and in this order:
 *
 * 0. a retry of a write that committed is answered first, outside any transaction: a stored answer is
 *    final (it commits with its write), so it is replayed (or the key refused as reused) at once;
 * 1. idempotency (when the route's rule says so and the request sent `Idempotency-Key`): the key,
 *    scoped to the credential's owner, is locked with a transaction-scoped advisory lock (of the
 *    idempotency class, src/platform/AdvisoryLocks.ts) taken without waiting (held elsewhere: 409
 *    `IDEMPOTENCY_REQUEST_IN_PROGRESS` with `Retry-After`); a stored answer younger than a day is
 *    replayed as it was (`Idempotent-Replayed: true`) when the request's fingerprint (method, path,
 *    canonical body) is the same, and a different request is 409 `IDEMPOTENCY_KEY_REUSED`. This
 *    comes before any precondition, so a retried decision replays its first answer although its
 *    `If-Match` is stale by then;
 * 2. the write itself, which checks preconditions and tenancy against the rows it locks;
 * 3. the site's daily quota of the rule's kind (429 `QUOTA_EXCEEDED`) and the answer's record
 *    under the key, in one statement (`finish`). A write counts one against its quota, or its
 *    `weight` where the quota counts bytes (schema/Api/Writes.ts `QuotaUnits`); such a write, costly
 *    to run, is also refused before it starts when the quota cannot take it any more.
 *
 * Everything commits together or not at all: a crash never leaves a write without its record or a
 * record without its write, and a refused request (any failure) stores nothing, so its retry is
 * judged afresh. After the commit this process's read caches are emptied at once; other processes
 * hear the catalog notification the write's tables send.
 */
import { Context, Duration, Effect, Layer, Option, Schedule, Schema } from "effect"
import { HttpServerRequest, HttpServerResponse } from "effect/http"
import { SqlClient, SqlSchema } from "effect/sql"
import { isSqlError, type SqlError } from "effect/sql/SqlError"
import * as Crypto from "node:crypto"
import type { PrincipalShape } from "../../../schema/Api/Security.js"
import { idempotencyKeyValue, type QuotaKind, QuotaUnits, type RouteRule } from "../../../schema/Api/Writes.js"
import {
  IdempotencyKeyReused,
  IdempotencyRequestInProgress,
  PreconditionFailed,
  PreconditionRequired,
  QuotaExceeded,
  TenantMismatch
} from "../../../schema/Problem.js"
import { AdvisoryLockClass } from "../../platform/AdvisoryLocks.js"
import { gzipEtag } from "../../platform/Compression.js"
import { ifMatchPasses } from "../../platform/EntityTags.js"
import { isRetryableTransaction, transactionRetrySchedule } from "../../platform/SqlState.js"
import { CatalogLimits } from "../limits/Limits.js"
import { ReadCache } from "../shared/ReadCache.js"

/** What a write answers: kept as it was sent, so a replay is byte-identical. */
export interface WriteAnswer {
  readonly status: number
  readonly headers: Readonly<Record<string, string>>
  readonly body: string
}

/** A JSON answer encoded through its schema. */
export const jsonAnswer = <A, I>(
  schema: Schema.Codec<A, I>,
  value: A,
  options: { readonly status?: number; readonly headers?: Record<string, string> } = {}
): Effect.Effect<WriteAnswer> =>
  Effect.map(Schema.encodeEffect(schema)(value).pipe(Effect.orDie), (encoded) => ({
    status: options.status ?? 200,
    headers: { "content-type": "application/json", ...options.headers },
    body: JSON.stringify(encoded)
  }))

/** JSON with object keys sorted, so two bodies that differ only in key order or spacing are one request. */
const canonical = (value: unknown): string => {
  if (Array.isArray(value)) return `[${value.map(canonical).join(",")}]`
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined)
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(",")}}`
  }
  return JSON.stringify(value) ?? "null"
}

const StoredRow = Schema.Struct({
  fingerprint: Schema.Uint8Array,
  status: Schema.Number,
  headers: Schema.Record(Schema.String, Schema.String),
  body: Schema.String
})

/** Seconds until the next UTC midnight, when daily quotas start again. */
const secondsToUtcMidnight = (now: Date): number => {
  const next = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + 1)
  return Math.max(1, Math.ceil((next - now.getTime()) / 1000))
}

/** A statement failure after which the whole transaction can simply run again. */
const retryable = (u: unknown): u is SqlError => isSqlError(u) && isRetryableTransaction(u)

/**
 * What the idempotency lock of (owner, key) is hashed from, within `AdvisoryLockClass.idempotency`:
 * `pg_try_advisory_xact_lock(class, hashtext(name))`. Owners cannot contain a newline.
 */
export const idempotencyLockName = (owner: string, key: string): string => `${owner}\n${key}`

/** How long answers are kept under their key. */
const KEEP = "24 hours"

/**
 * `If-Match` against the current strong ETag (RFC 9110 13.1.1: strong comparison; `*` matches any
 * current representation; a malformed value matches nothing, src/platform/EntityTags.ts). A read sent
 * gzip-encoded carried the gzip representation's tag (src/platform/Compression.ts): it names the same
 * state of the resource, so it passes too.
 * `required` and absent: 428.
 */
export const checkIfMatch = (
  rule: RouteRule,
  header: string | undefined,
  current: string
): Effect.Effect<void, PreconditionRequired | PreconditionFailed> => {
  if (header === undefined) {
    return rule.ifMatch === "required"
      ? Effect.fail(
        new PreconditionRequired({
          detail: "Send `If-Match` with the ETag from your last read of this resource.",
          errors: [{ reason: "REQUIRED", detail: "`If-Match` is required.", header: "If-Match" }]
        })
      )
      : Effect.void
  }
  return ifMatchPasses(header, current) || ifMatchPasses(header, gzipEtag(current)) ? Effect.void : Effect.fail(
    new PreconditionFailed({ detail: `The resource changed since it was read; its ETag is now ${current}.` })
  )
}

/** 403 `TENANT_MISMATCH` unless the resource belongs to the credential's site. */
export const checkTenant = (principal: PrincipalShape, site: string): Effect.Effect<void, TenantMismatch> =>
  principal.site === site
    ? Effect.void
    : Effect.fail(new TenantMismatch({ detail: "The resource belongs to another site than this credential." }))

export class Writes extends Context.Service<Writes>()("catalog/Writes", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const cache = yield* ReadCache
    const limits = yield* CatalogLimits
    const findStored = SqlSchema.findOneOption({
      Request: Schema.Struct({ scope: Schema.String, key: Schema.String }),
      Result: StoredRow,
      execute: ({ key, scope }) =>
        sql`
          SELECT fingerprint, status, headers, body FROM catalog_idempotency
          WHERE scope = ${scope} AND key = ${key} AND created_at > now() - ${KEEP}::interval`
    })
    // The quota and the lock keep their SQL failures as failures (the transaction retries on a
    // deadlock or serialization failure, below); a row that does not decode is a defect.
    const tryLock = SqlSchema.findOne({
      Request: Schema.String,
      Result: Schema.Struct({ ok: Schema.Boolean }),
      execute: (name) =>
        sql`SELECT pg_try_advisory_xact_lock(${AdvisoryLockClass.idempotency}::int4, hashtext(${name})) AS ok`
    })

    // Expired answers, past quota days and request budgets untouched for a day (full again, so equal to
    // none), swept by every catalog process now and then (cheap, indexed); a deployment that runs no
    // identity process still sweeps its budgets.
    const sweep = Effect.gen(function*() {
      yield* sql`DELETE FROM catalog_idempotency WHERE created_at < now() - ${KEEP}::interval`
      yield* sql`DELETE FROM catalog_quota_usage WHERE day < (now() AT TIME ZONE 'UTC')::date - 1`
      yield* sql`
        DELETE FROM rate_limit_buckets WHERE key IN (
          SELECT key FROM rate_limit_buckets
          WHERE updated_at < now() - interval '1 day' AND key LIKE 'catalog:%' LIMIT 10000)`
    }).pipe(Effect.orDie, Effect.withSpan("Writes.sweep"))
    yield* sweep.pipe(
      Effect.catchCause((cause) => Effect.logWarning("write sweep failed", cause)),
      Effect.repeat(Schedule.spaced(Duration.minutes(10))),
      Effect.delay(Duration.seconds(30)),
      Effect.forkScoped
    )

    const fingerprintOf = (request: HttpServerRequest.HttpServerRequest, payload: unknown) => {
      const path = request.url.split("?")[0] ?? "/"
      return Crypto.createHash("sha256").update(`${request.method} ${path}\n${canonical(payload)}`).digest()
    }

    const respond = (answer: WriteAnswer, extra: Record<string, string> = {}) => {
      const { "content-type": contentType, ...headers } = answer.headers
      return HttpServerResponse.text(answer.body, {
        status: answer.status,
        contentType: contentType ?? "application/json",
        headers: { ...headers, ...extra }
      })
    }

    /** 429 `QUOTA_EXCEEDED` for `quota`. */
    const quotaExceeded = (kind: QuotaKind) => {
      const limit = limits.quotas[kind]
      const allowance = QuotaUnits[kind] === "bytes" ? `${limit} bytes of ${kind} uploads` : `${limit} ${kind} writes`
      return new QuotaExceeded({
        detail: `The site's daily quota of ${allowance} is used up; it starts again at 00:00 UTC.`,
        retry_after: secondsToUtcMidnight(new Date()),
        quota: kind,
        limit
      })
    }

    /** What the site has used of `kind` today. */
    const usedToday = SqlSchema.findOneOption({
      Request: Schema.Struct({ site: Schema.String, kind: Schema.String }),
      Result: Schema.Struct({ used: Schema.NumberFromString }),
      execute: ({ kind, site }) =>
        sql`
          SELECT used::text AS used FROM catalog_quota_usage
          WHERE site = ${site} AND kind = ${kind} AND day = (now() AT TIME ZONE 'UTC')::date`
    })

    /**
     * The write's last steps, in one statement (they run while the write may hold a lock others wait
     * for): `weight` units of the rule's kind counted against the site's quota for today, and the
     * answer stored under the key, only when the quota allowed it. Fails when the quota cannot take it.
     */
    const finish = (
      quota: { readonly site: string; readonly kind: QuotaKind; readonly weight: number } | undefined,
      stored: {
        readonly scope: string
        readonly key: string
        readonly fingerprint: Buffer
        readonly answer: WriteAnswer
      } | undefined
    ) =>
      Effect.gen(function*() {
        if (quota === undefined && stored === undefined) return
        const limit = quota === undefined ? 0 : limits.quotas[quota.kind]
        const counted = quota === undefined
          ? sql`SELECT 1 AS used`
          : sql`
            INSERT INTO catalog_quota_usage AS q (site, kind, day, used)
            SELECT ${quota.site}, ${quota.kind}, (now() AT TIME ZONE 'UTC')::date, ${quota.weight}::bigint
            WHERE ${quota.weight}::bigint <= ${limit}::bigint
            ON CONFLICT (site, kind, day) DO UPDATE SET used = q.used + EXCLUDED.used
              WHERE q.used + EXCLUDED.used <= ${limit}::bigint
            RETURNING used`
        const keep = stored === undefined ? sql`SELECT 1` : sql`
          INSERT INTO catalog_idempotency (scope, key, fingerprint, status, headers, body)
          SELECT ${stored.scope}, ${stored.key}, ${stored.fingerprint}, ${stored.answer.status},
                 ${JSON.stringify(stored.answer.headers)}::jsonb, ${stored.answer.body}
          FROM counted
          ON CONFLICT (scope, key) DO UPDATE SET fingerprint = EXCLUDED.fingerprint, status = EXCLUDED.status,
            headers = EXCLUDED.headers, body = EXCLUDED.body, created_at = now()`
        const { allowed } = yield* SqlSchema.findOne({
          Request: Schema.Void,
          Result: Schema.Struct({ allowed: Schema.Int }),
          execute: () =>
            sql`
              WITH counted AS (${counted}), kept AS (${keep})
              SELECT count(*)::int AS allowed FROM counted`
        })(undefined).pipe(Effect.catchTags({ SchemaError: Effect.die, NoSuchElementError: Effect.die }))
        if (quota !== undefined && allowed === 0) return yield* quotaExceeded(quota.kind)
      })

    /**
     * Runs `write` as the route's write for `principal`: idempotency, the write, the quota and the
     * stored answer in one transaction. `payload` is the decoded body (the request's fingerprint).
     */
    const run = <E, R>(options: {
      readonly principal: PrincipalShape
      readonly rule: RouteRule
      readonly idempotencyKey: string | undefined
      readonly payload: unknown
      readonly write: Effect.Effect<WriteAnswer, E, R>
      /** What the write counts against its quota when that counts bytes (schema/Api/Writes.ts `QuotaUnits`). */
      readonly weight?: number | undefined
    }) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const { principal, rule } = options
        const key = rule.idempotent && options.idempotencyKey !== undefined
          ? Option.some(idempotencyKeyValue(options.idempotencyKey))
          : Option.none<string>()
        const fingerprint = fingerprintOf(request, options.payload)

        /** A stored answer under the key: replayed for the same request, 409 for another. */
        const judge = (found: typeof StoredRow.Type) => {
          const same = found.fingerprint.length === fingerprint.length &&
            Crypto.timingSafeEqual(found.fingerprint, fingerprint)
          return same
            ? Effect.succeed({ replayed: true as const, answer: found })
            : Effect.fail(
              new IdempotencyKeyReused({
                detail: "This Idempotency-Key was used with a different request; use a new key."
              })
            )
        }
        const storedAnswer = (value: string) =>
          findStored({ scope: principal.owner, key: value }).pipe(Effect.orDie, Effect.map(Option.getOrUndefined))

        // A retry of a write that committed: its answer is final, so it is replayed without a transaction.
        if (Option.isSome(key)) {
          const found = yield* storedAnswer(key.value)
          if (found !== undefined) {
            const replayed = yield* judge(found)
            return respond(replayed.answer, { "idempotent-replayed": "true" })
          }
        }

        const quota = rule.quota === undefined ? undefined : {
          site: principal.site,
          kind: rule.quota,
          weight: QuotaUnits[rule.quota] === "bytes" ? Math.max(1, options.weight ?? 1) : 1
        }
        // A write whose quota counts bytes is costly to run: refused before it starts when it cannot fit
        // any more (the count in `finish` stays the one that holds under concurrency).
        if (quota !== undefined && QuotaUnits[quota.kind] === "bytes") {
          const used = yield* usedToday(quota).pipe(
            Effect.map(Option.match({ onNone: () => 0, onSome: (row) => row.used })),
            Effect.orDie
          )
          if (used + quota.weight > limits.quotas[quota.kind]) return yield* quotaExceeded(quota.kind)
        }

        const outcome = yield* Effect.gen(function*() {
          if (Option.isSome(key)) {
            // In the idempotency class of its own (platform/AdvisoryLocks.ts), so no key can block
            // another lock. `hashtext` is 32 bits: two different keys may share a lock, which costs at
            // most a spurious 409 IN_PROGRESS while the other runs (the stored answer is per exact key).
            const lock = yield* tryLock(idempotencyLockName(principal.owner, key.value)).pipe(
              Effect.catchTags({ SchemaError: Effect.die, NoSuchElementError: Effect.die })
            )
            if (!lock.ok) {
              return yield* new IdempotencyRequestInProgress({
                detail: "A request with this Idempotency-Key is still running; retry with the same body.",
                retry_after: 1
              })
            }
            // Holding the key: an answer stored since the look above (by the request that held it) is final.
            const found = yield* storedAnswer(key.value)
            if (found !== undefined) return yield* judge(found)
          }
          const answer = yield* options.write
          yield* finish(
            quota,
            Option.isNone(key) ? undefined : { scope: principal.owner, key: key.value, fingerprint, answer }
          )
          return { replayed: false as const, answer }
        }).pipe(
          sql.withTransaction,
          // A deadlock or serialization failure rolled everything back: the whole write runs again.
          // Repositories make their statements' failures defects, so those are looked for there too.
          Effect.catchDefect((defect) => retryable(defect) ? Effect.fail(defect) : Effect.die(defect)),
          Effect.retry({ while: retryable, schedule: transactionRetrySchedule }),
          Effect.catchTag("SqlError", Effect.die)
        )

        if (outcome.replayed) return respond(outcome.answer, { "idempotent-replayed": "true" })
        cache.invalidate()
        return respond(outcome.answer)
      })

    return { run, sweep } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([CatalogLimits.layer]))
}
