/**
 * The SQL behind authorization codes, refresh families, refresh tokens and consents (docs/decisions.md,
 * "Identity: protocol" and "Identity: tokens and sessions").
 * Every secret is looked up by its SHA-256; single use and rotation are conditional UPDATEs, so
 * concurrent redemptions of one code or one refresh token have exactly one winner.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { PkceMethod } from "../crypto/Secrets.js"
import { userAlongside } from "../users/Users.js"

const Id = Schema.Union([Schema.Number, Schema.NumberFromString])

const CodeRow = Schema.Struct({
  client_id: Schema.String,
  user_id: Id,
  session_id: Schema.NullOr(Schema.String),
  redirect_uri: Schema.String,
  scopes: Schema.Array(Schema.String),
  nonce: Schema.NullOr(Schema.String),
  code_challenge: Schema.NullOr(Schema.String),
  code_challenge_method: Schema.NullOr(Schema.Literals(["S256", "plain"])),
  auth_time: Schema.Date,
  amr: Schema.Array(Schema.String),
  fresh: Schema.Boolean
})
export type CodeRow = typeof CodeRow.Type

const RefreshRow = Schema.Struct({
  family_id: Schema.String,
  client_id: Schema.String,
  user_id: Id,
  scopes: Schema.Array(Schema.String),
  auth_time: Schema.Date,
  /** The sign-in's methods, kept by the family (RFC 8176). */
  amr: Schema.Array(Schema.String),
  expired: Schema.Boolean,
  /** Unused for longer than the idle timeout (`rotate`'s `idleTimeoutSeconds`). */
  idle: Schema.Boolean,
  rotated: Schema.Boolean,
  revoked: Schema.Boolean,
  family_revoked: Schema.Boolean
})
export type RefreshRow = typeof RefreshRow.Type

export interface NewCode {
  readonly codeHash: string
  readonly clientId: string
  readonly userId: number
  readonly sessionId: string | null
  readonly redirectUri: string
  readonly scopes: ReadonlyArray<string>
  readonly nonce: string | null
  readonly challenge: { readonly challenge: string; readonly method: PkceMethod } | null
  readonly authTime: Date
  /** The session's sign-in methods (RFC 8176), for the id_token. */
  readonly amr: ReadonlyArray<string>
  readonly ttlSeconds: number
}

export class Grants extends Context.Service<Grants>()("identity/Grants", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const decodeRefresh = Schema.decodeUnknownEffect(Schema.Array(RefreshRow))
    const withUser = userAlongside(sql)
    const firstRedeemed = withUser.first(CodeRow.fields)
    const firstRotated = withUser.first(RefreshRow.fields)

    const insertCode = (code: NewCode) =>
      sql`
        INSERT INTO authorization_codes (code_hash, client_id, user_id, session_id, redirect_uri, scopes, nonce,
                                         code_challenge, code_challenge_method, auth_time, amr, expires_at)
        VALUES (${code.codeHash}, ${code.clientId}, ${code.userId}, ${code.sessionId}, ${code.redirectUri},
                ${code.scopes}::text[], ${code.nonce}, ${code.challenge?.challenge ?? null},
                ${code.challenge?.method ?? null}, ${code.authTime}, ${code.amr}::text[],
                now() + make_interval(secs => ${code.ttlSeconds}))
      `.pipe(Effect.orDie, Effect.asVoid)

    /**
     * Marks the code used and answers it with its user and the user's roles on `site`, or none when
     * it is unknown or was used before. Concurrent callers serialise on the row; the loser sees
     * `consumed_at` set. One statement, committed at once: a consumed code stays consumed whatever
     * the checks that follow decide.
     */
    const redeemCode = (codeHash: string, site: string | null) =>
      sql`
        WITH code AS (
          UPDATE authorization_codes SET consumed_at = now()
          WHERE code_hash = ${codeHash} AND consumed_at IS NULL
          RETURNING client_id, user_id, session_id, redirect_uri, scopes, nonce, code_challenge,
                    code_challenge_method, auth_time, amr, expires_at > now() AS fresh
        )
        SELECT code.*, ${withUser.columns}, ${withUser.siteRoles("u.id", site)}
        FROM code JOIN users u ON u.id = code.user_id
      `.pipe(
        Effect.flatMap(firstRedeemed),
        Effect.map(Option.map(({ row, siteRoles, user }) => ({ code: row, user, siteRoles }))),
        Effect.orDie
      )

    /**
     * A replayed code revokes every family it produced (RFC 6749 section 4.1.2). The code is marked
     * first (which waits for a redemption holding its row), then the families are revoked in a
     * second statement of the same transaction, whose snapshot includes a family committed
     * meanwhile; a family not yet inserted will see the mark and not be (`createFamily`). Answers
     * whether the code exists.
     */
    const revokeCodeReplay = (codeHash: string) =>
      Effect.gen(function*() {
        const known = yield* sql`
          UPDATE authorization_codes SET replayed_at = coalesce(replayed_at, now())
          WHERE code_hash = ${codeHash} RETURNING 1 AS one
        `
        if (known.length === 0) return false
        yield* sql`
          UPDATE refresh_families SET revoked_at = now(), revoked_reason = 'code_replay'
          WHERE code_hash = ${codeHash} AND revoked_at IS NULL
        `
        return true
      }).pipe(sql.withTransaction, Effect.orDie)

    /**
     * The family a redeemed code produces and its first refresh token, in one statement that locks
     * the code row and inserts only while no replay has marked it. None when a replay came first.
     */
    const createFamily = (input: {
      readonly clientId: string
      readonly userId: number
      readonly codeHash: string
      readonly sessionId: string | null
      readonly authTime: Date
      /** The code's sign-in methods; a password alone unless told. */
      readonly amr?: ReadonlyArray<string>
      readonly ttlSeconds: number
      readonly scopes: ReadonlyArray<string>
      readonly refreshHash: string
    }) =>
      sql<{ id: string }>`
        WITH code AS (
          SELECT code_hash FROM authorization_codes
          WHERE code_hash = ${input.codeHash} AND replayed_at IS NULL
          FOR UPDATE
        ),
        family AS (
          INSERT INTO refresh_families (id, client_id, user_id, code_hash, session_id, auth_time, amr, expires_at)
          SELECT gen_random_uuid(), ${input.clientId}, ${input.userId}, code.code_hash, ${input.sessionId},
                 ${input.authTime}, ${input.amr ?? ["pwd"]}::text[], now() + make_interval(secs => ${input.ttlSeconds})
          FROM code
          RETURNING id, client_id, user_id, auth_time, expires_at
        ),
        token AS (
          INSERT INTO refresh_tokens (token_hash, family_id, client_id, user_id, scopes, auth_time, expires_at)
          SELECT ${input.refreshHash}, id, client_id, user_id, ${input.scopes}::text[], auth_time, expires_at
          FROM family
        )
        SELECT id::text AS id FROM family
      `.pipe(Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), (row) => row.id)), Effect.orDie)

    /** The token and its state; `idleTimeoutSeconds` as for `rotate` (0: `idle` is always false). */
    const findRefreshToken = (tokenHash: string, idleTimeoutSeconds = 0) =>
      sql`
        SELECT t.family_id, t.client_id, t.user_id, t.scopes, t.auth_time, f.amr, t.expires_at <= now() AS expired,
               (${idleTimeoutSeconds}::float8 > 0
                AND t.created_at <= now() - make_interval(secs => ${idleTimeoutSeconds}::float8)) AS idle,
               t.rotated_at IS NOT NULL AS rotated, t.revoked_at IS NOT NULL AS revoked,
               f.revoked_at IS NOT NULL AS family_revoked
        FROM refresh_tokens t JOIN refresh_families f ON f.id = t.family_id
        WHERE t.token_hash = ${tokenHash}
      `.pipe(
        Effect.flatMap(decodeRefresh),
        Effect.map((rows) => Option.fromNullishOr(rows[0])),
        Effect.orDie
      )

    /**
     * Rotation in one statement: the presented token is marked rotated and its successor
     * inserted only while the token is the caller's, unrotated, unrevoked and unexpired, used within
     * `idleTimeoutSeconds` of its issue (a token is issued when its predecessor is used, so its age
     * is the family's idle time; 0: no idle limit), its family alive, its user not banned and the
     * `requested` scopes within its grant. Answers the token with
     * its user and the user's roles on `site` when this caller won; of N concurrent callers exactly
     * one does. None says nothing about why: `findRefreshToken` tells.
     */
    const rotate = (input: {
      readonly tokenHash: string
      readonly successorHash: string
      readonly clientId: string
      readonly requested: ReadonlyArray<string>
      readonly site: string | null
      readonly idleTimeoutSeconds: number
    }) =>
      sql`
        WITH old AS (
          UPDATE refresh_tokens t SET rotated_at = now(), replaced_by = ${input.successorHash}
          FROM refresh_families f, users u
          WHERE t.token_hash = ${input.tokenHash} AND t.client_id = ${input.clientId}
            AND t.rotated_at IS NULL AND t.revoked_at IS NULL AND t.expires_at > now()
            AND (${input.idleTimeoutSeconds}::float8 <= 0
                 OR t.created_at > now() - make_interval(secs => ${input.idleTimeoutSeconds}::float8))
            AND t.scopes @> ${input.requested}::text[]
            AND f.id = t.family_id AND f.revoked_at IS NULL
            AND u.id = t.user_id AND NOT u.banned
          RETURNING t.family_id, t.client_id, t.user_id, t.scopes, t.auth_time, f.amr, t.expires_at,
                    ${withUser.columns}
        ),
        successor AS (
          INSERT INTO refresh_tokens (token_hash, family_id, client_id, user_id, scopes, auth_time, expires_at)
          SELECT ${input.successorHash}, family_id, client_id, user_id, scopes, auth_time, expires_at FROM old
        )
        SELECT old.*, false AS expired, false AS idle, false AS rotated, false AS revoked, false AS family_revoked,
               ${withUser.siteRoles("old.id", input.site)}
        FROM old
      `.pipe(
        Effect.flatMap(firstRotated),
        Effect.map(Option.map(({ row, siteRoles, user }) => ({ token: row, user, siteRoles }))),
        Effect.orDie
      )

    const revokeFamily = (familyId: string, reason: string) =>
      sql`
        UPDATE refresh_families SET revoked_at = now(), revoked_reason = ${reason}
        WHERE id = ${familyId}::uuid AND revoked_at IS NULL
      `.pipe(Effect.orDie, Effect.asVoid)

    const familyClient = (familyId: string) =>
      sql<{ client_id: string }>`SELECT client_id FROM refresh_families WHERE id = ${familyId}::uuid`.pipe(
        Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), (row) => row.client_id)),
        Effect.orDie
      )

    /** The scopes the user already granted the client, if ever. */
    const consentedScopes = (userId: number, clientId: string) =>
      sql<{ scopes: ReadonlyArray<string> }>`
        SELECT scopes FROM consents WHERE user_id = ${userId} AND client_id = ${clientId}
      `.pipe(Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), (row) => row.scopes)), Effect.orDie)

    /** Adds `scopes` to what the user granted the client. */
    const recordConsent = (userId: number, clientId: string, scopes: ReadonlyArray<string>) =>
      sql`
        INSERT INTO consents (user_id, client_id, scopes) VALUES (${userId}, ${clientId}, ${scopes}::text[])
        ON CONFLICT (user_id, client_id) DO UPDATE
        SET scopes = ARRAY(SELECT DISTINCT s FROM unnest(consents.scopes || EXCLUDED.scopes) AS s ORDER BY s),
            updated_at = now()
      `.pipe(Effect.orDie, Effect.asVoid)

    return {
      insertCode,
      redeemCode,
      revokeCodeReplay,
      createFamily,
      findRefreshToken,
      rotate,
      revokeFamily,
      familyClient,
      consentedScopes,
      recordConsent
    } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
