/**
 * The identity provider's periodic cleanup: rows that can no longer be used are deleted, so the
 * tables stay the size of what is alive.
 *
 * - authorization codes past their expiry;
 * - sessions ended or expired;
 * - refresh families revoked or expired, with their refresh tokens (first the tokens, in batches of
 *   their own, so no single statement cascades over a long rotation chain);
 * - rotated refresh tokens of live families once rotated longer ago than the idle timeout. Until then
 *   a rotated token is kept so that presenting it again revokes its family (RFC 9700 section
 *   4.14.2); a client holding a token that old lost it to the idle timeout anyway. Without an idle
 *   timeout they stay until their family dies;
 * - rate limit rows untouched for a day (every bucket is full by then, every backoff has forgotten);
 * - outbox mail sent or given up on (migrations/0014_mail_outbox.ts), kept meanwhile for the
 *   development mailbox and for inspection;
 * - half-done page sign-ins past their five minutes (migrations/0025_pending_sign_ins.ts);
 * - avatars no account shows any more, a day after they were last uploaded, and their files in the
 *   `MediaStore` (src/identity/account/Avatars.ts): a batch's rows are deleted first and, once that
 *   has committed, each file is removed unless a new upload of the same bytes recorded the avatar
 *   again meanwhile (see `avatars` below).
 *
 * Dead rows are kept a day first: a replayed code within that day still revokes what it produced
 * (src/identity/oauth/Grants.ts `revokeCodeReplay`), and the day-old state can be inspected.
 *
 * Every statement deletes at most `IDENTITY_CLEANUP_BATCH_SIZE` rows it could lock at once (`FOR
 * UPDATE SKIP LOCKED`): each holds its locks briefly, never waits for a row a request is using, and
 * several processes running the job at the same moment delete disjoint rows instead of queueing on
 * each other. A run stops after `MAX_BATCHES` batches per kind; the next one continues. Every
 * identity process runs it every `IDENTITY_CLEANUP_INTERVAL_SECONDS` (600, with jitter; 0: never).
 * Access tokens of a deleted family or session are refused like those of a revoked one
 * (src/identity/tokens/Liveness.ts finds no live row).
 */
import { Config, Context, Duration, Effect, Layer, Schedule, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { Statement } from "effect/sql"
import { MediaStore } from "../../platform/MediaStore.js"
import { lockAvatarFile } from "../account/Avatars.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"

/** How long a dead row is kept. */
const RETENTION_SECONDS = 24 * 3600
/** Batches of one kind per run. */
const MAX_BATCHES = 100

export interface CleanupCounts {
  readonly authorizationCodes: number
  readonly sessions: number
  readonly refreshFamilies: number
  readonly refreshTokens: number
  readonly rateLimitBuckets: number
  readonly mailOutbox: number
  readonly emailCodes: number
  readonly avatars: number
  readonly pendingSignIns: number
}

export class IdentityCleanup extends Context.Service<IdentityCleanup>()("identity/IdentityCleanup", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const media = yield* MediaStore
    const config = yield* IdentityConfig
    const intervalSeconds = yield* Config.schema(
      Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, {
        message: "IDENTITY_CLEANUP_INTERVAL_SECONDS must not be negative"
      })),
      "IDENTITY_CLEANUP_INTERVAL_SECONDS"
    ).pipe(Config.withDefault(600))
    const batchSize = yield* Config.schema(
      Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { message: "IDENTITY_CLEANUP_BATCH_SIZE must be at least 1" })),
      "IDENTITY_CLEANUP_BATCH_SIZE"
    ).pipe(Config.withDefault(1000))
    const retention = sql`now() - make_interval(secs => ${RETENTION_SECONDS}::float8)`
    const idleTimeout = config.refreshIdleTimeoutSeconds

    /** Runs `batch` (answering the rows it deleted) until one deletes fewer than a batch; answers the rows deleted. */
    const drainWith = <E>(batch: Effect.Effect<number, E>) =>
      Effect.gen(function*() {
        let total = 0
        for (let i = 0; i < MAX_BATCHES; i++) {
          const deleted = yield* batch
          total += deleted
          if (deleted < batchSize) break
        }
        return total
      })

    /** Runs a `DELETE ... RETURNING 1` batch until one deletes fewer than a batch; answers the rows deleted. */
    const drain = (batch: () => Statement.Statement<any>) =>
      drainWith(Effect.suspend(() =>
        Effect.map(
          sql<{ n: number }>`WITH gone AS (${batch()}) SELECT count(*)::int AS n FROM gone`,
          (rows) => rows[0]?.n ?? 0
        )
      ))

    const authorizationCodes = drain(() =>
      sql`
        DELETE FROM authorization_codes WHERE code_hash IN (
          SELECT code_hash FROM authorization_codes WHERE expires_at < ${retention}
          LIMIT ${batchSize} FOR UPDATE SKIP LOCKED
        ) RETURNING 1
      `
    )
    const sessions = drain(() =>
      sql`
        DELETE FROM sessions WHERE id IN (
          SELECT id FROM sessions WHERE least(ended_at, expires_at) < ${retention}
          LIMIT ${batchSize} FOR UPDATE SKIP LOCKED
        ) RETURNING 1
      `
    )
    const tokensOfDeadFamilies = drain(() =>
      sql`
        DELETE FROM refresh_tokens WHERE token_hash IN (
          SELECT t.token_hash FROM refresh_families f JOIN refresh_tokens t ON t.family_id = f.id
          WHERE least(f.revoked_at, f.expires_at) < ${retention}
          LIMIT ${batchSize} FOR UPDATE OF t SKIP LOCKED
        ) RETURNING 1
      `
    )
    const refreshFamilies = drain(() =>
      sql`
        DELETE FROM refresh_families WHERE id IN (
          SELECT id FROM refresh_families WHERE least(revoked_at, expires_at) < ${retention}
          LIMIT ${batchSize} FOR UPDATE SKIP LOCKED
        ) RETURNING 1
      `
    )
    const rotatedTokens = idleTimeout > 0
      ? drain(() =>
        sql`
          DELETE FROM refresh_tokens WHERE token_hash IN (
            SELECT token_hash FROM refresh_tokens
            WHERE rotated_at < now() - make_interval(secs => ${Math.max(idleTimeout, RETENTION_SECONDS)}::float8)
            LIMIT ${batchSize} FOR UPDATE SKIP LOCKED
          ) RETURNING 1
        `
      )
      : Effect.succeed(0)
    const rateLimitBuckets = drain(() =>
      sql`
        DELETE FROM rate_limit_buckets WHERE key IN (
          SELECT key FROM rate_limit_buckets WHERE updated_at < ${retention}
          LIMIT ${batchSize} FOR UPDATE SKIP LOCKED
        ) RETURNING 1
      `
    )
    const mailOutbox = drain(() =>
      sql`
        DELETE FROM mail_outbox WHERE id IN (
          SELECT id FROM mail_outbox
          WHERE (sent_at IS NOT NULL OR failed_at IS NOT NULL) AND coalesce(sent_at, failed_at) < ${retention}
          LIMIT ${batchSize} FOR UPDATE SKIP LOCKED
        ) RETURNING 1
      `
    )

    // Emailed codes past their lifetime or used (migrations/0016), kept a day for inspection.
    const emailCodes = drain(() =>
      sql`
        DELETE FROM email_codes WHERE id IN (
          SELECT id FROM email_codes WHERE least(expires_at, consumed_at) < ${retention}
          LIMIT ${batchSize} FOR UPDATE SKIP LOCKED
        ) RETURNING 1
      `
    )
    // Avatars no account shows any more (migrations/0019); a day old at least, so an upload racing
    // the sweep keeps its row. The rows go first, in a statement of their own; each file is removed
    // after that has committed, in a transaction holding the avatar's lock (`lockAvatarFile`), and
    // only if no row names it again. An upload writes the file and commits its row under the same
    // lock (src/identity/account/Avatars.ts), so either it came first and its row is seen here (the
    // file stays), or it comes after the removal and writes the file anew. A crash between the two
    // steps leaves files no row records: named by their content, harmless.
    const removeAvatarFile = (sha256: string) =>
      Effect.gen(function*() {
        yield* lockAvatarFile(sql, sha256)
        const again = yield* sql`SELECT 1 FROM avatars WHERE sha256 = ${sha256}`
        if (again.length === 0) yield* media.remove("avatars", sha256)
      }).pipe(sql.withTransaction)
    const avatars = drainWith(Effect.gen(function*() {
      const gone = yield* sql<{ sha256: string }>`
        DELETE FROM avatars WHERE sha256 IN (
          SELECT a.sha256 FROM avatars a
          WHERE a.created_at < ${retention}
            AND NOT EXISTS (SELECT 1 FROM users u WHERE u.avatar_sha256 = a.sha256)
          LIMIT ${batchSize} FOR UPDATE SKIP LOCKED
        ) RETURNING sha256
      `
      yield* Effect.forEach(gone, ({ sha256 }) => removeAvatarFile(sha256), { concurrency: 4, discard: true })
      return gone.length
    }))

    // Half-done sign-ins past their lifetime (migrations/0025); a used or cancelled one is deleted at once.
    const pendingSignIns = drain(() =>
      sql`
        DELETE FROM pending_sign_ins WHERE nonce IN (
          SELECT nonce FROM pending_sign_ins WHERE expires_at < ${retention}
          LIMIT ${batchSize} FOR UPDATE SKIP LOCKED
        ) RETURNING 1
      `
    )

    /** One pass over every kind of row; safe to run in several processes at once. */
    const run = Effect.fn("IdentityCleanup.run")(function*() {
      const counts: CleanupCounts = {
        authorizationCodes: yield* authorizationCodes,
        sessions: yield* sessions,
        refreshTokens: (yield* tokensOfDeadFamilies) + (yield* rotatedTokens),
        refreshFamilies: yield* refreshFamilies,
        rateLimitBuckets: yield* rateLimitBuckets,
        mailOutbox: yield* mailOutbox,
        emailCodes: yield* emailCodes,
        avatars: yield* avatars,
        pendingSignIns: yield* pendingSignIns
      }
      const total = Object.values(counts).reduce((sum, n) => sum + n, 0)
      if (total > 0) yield* Effect.logInfo("identity cleanup deleted rows").pipe(Effect.annotateLogs({ ...counts }))
      return counts
    }, Effect.orDie)

    if (intervalSeconds > 0) {
      const interval = Duration.seconds(intervalSeconds)
      yield* run().pipe(
        Effect.catchCause((cause) => Effect.logWarning("identity cleanup failed", cause)),
        Effect.repeat(Schedule.spaced(interval).pipe(Schedule.jittered)),
        Effect.delay(interval),
        Effect.forkScoped
      )
    }

    return { run } as const
  })
}) {
  /**
   * On its own `MediaStore.layer`, for use alone; the servers take `layerWithoutDependencies`, over the store
   * provided once to the whole process (src/App.ts).
   */
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide(MediaStore.layer))
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
}
