/**
 * The provider's own browser session (docs/decisions.md, "Identity: tokens and sessions"). The
 * cookie holds 256 random bits; the table keeps only its SHA-256. A session also has a public `sid`
 * (a UUID) that the access tokens minted by sign-in carry, so ending the session kills them too.
 * Ending a session revokes the refresh families it produced: logging out of the provider logs the
 * user out of the relying parties that signed in through it.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { HttpServerRequest } from "effect/http"
import { HttpServerResponse } from "effect/http"
import type { SqlError } from "effect/sql"
import { SqlClient } from "effect/sql"
import { randomToken, sha256Hex } from "../crypto/Secrets.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"

/** The session cookie's name over http; over https it is `__Host-shiori_session` (src/identity/shared/IdentityConfig.ts). */
export const SESSION_COOKIE = "shiori_session"

export interface Session {
  /** SHA-256 of the cookie value; the primary key. */
  readonly id: string
  readonly sid: string
  readonly userId: number
  readonly authTime: Date
  readonly expiresAt: Date
  /** How the user signed in (RFC 8176): `pwd`, or `pwd` and `otp` (migrations/0018). */
  readonly amr: ReadonlyArray<string>
}

const SessionRow = Schema.Struct({
  id: Schema.String,
  sid: Schema.String,
  user_id: Schema.Union([Schema.Number, Schema.NumberFromString]),
  auth_time: Schema.Date,
  expires_at: Schema.Date,
  amr: Schema.Array(Schema.String)
})

const toSession = (row: typeof SessionRow.Type): Session => ({
  id: row.id,
  sid: row.sid,
  userId: row.user_id,
  authTime: row.auth_time,
  expiresAt: row.expires_at,
  amr: row.amr
})

/**
 * Ends every session of `userId` except `keep` (the session making a change, or none) and revokes
 * every refresh family of the account, so old cookies and every relying party's refresh tokens
 * (`invalid_grant`) stop working. `reason` is recorded on the families (`password_changed`, ...).
 * Runs in the caller's transaction, next to the change it follows from.
 */
export const endSignInsOf = (
  sql: SqlClient.SqlClient,
  userId: number,
  reason: string,
  keep?: string
): Effect.Effect<void, SqlError.SqlError> =>
  Effect.gen(function*() {
    yield* sql`
      UPDATE sessions SET ended_at = now()
      WHERE user_id = ${userId} AND ended_at IS NULL AND id <> ${keep ?? ""}
    `
    yield* sql`
      UPDATE refresh_families SET revoked_at = now(), revoked_reason = ${reason}
      WHERE user_id = ${userId} AND revoked_at IS NULL
    `
  })

export class Sessions extends Context.Service<Sessions>()("identity/Sessions", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* IdentityConfig
    const decodeRows = Schema.decodeUnknownEffect(Schema.Array(SessionRow))

    /** `amr`: the methods the sign-in used; a password alone unless told. */
    const create = Effect.fn("Sessions.create")(function*(userId: number, client: {
      readonly userAgent: string
      readonly ip: string
    }, amr: ReadonlyArray<string> = ["pwd"]) {
      const cookie = randomToken()
      const rows = yield* sql`
        INSERT INTO sessions (id, user_id, auth_time, expires_at, user_agent, ip, amr)
        VALUES (${sha256Hex(cookie)}, ${userId}, now(), now() + make_interval(secs => ${config.sessionTtlSeconds}),
                ${client.userAgent.slice(0, 512)}, ${client.ip.slice(0, 64)}, ${amr}::text[])
        RETURNING id, sid, user_id, auth_time, expires_at, amr
      `.pipe(Effect.flatMap(decodeRows), Effect.orDie)
      return { cookie, session: toSession(rows[0]!) }
    })

    /** The live session behind a cookie value: not ended, not expired, its user not banned. */
    const fromCookie = Effect.fn("Sessions.fromCookie")(function*(cookie: string | undefined) {
      if (cookie === undefined || !/^[A-Za-z0-9_-]{43}$/.test(cookie)) return Option.none<Session>()
      const rows = yield* sql`
        SELECT s.id, s.sid, s.user_id, s.auth_time, s.expires_at, s.amr
        FROM sessions s JOIN users u ON u.id = s.user_id
        WHERE s.id = ${sha256Hex(cookie)} AND s.ended_at IS NULL AND s.expires_at > now() AND NOT u.banned
      `.pipe(Effect.flatMap(decodeRows), Effect.orDie)
      return Option.map(Option.fromNullishOr(rows[0]), toSession)
    })

    /** The live session with public id `sid`. */
    const fromSid = Effect.fn("Sessions.fromSid")(function*(sid: string) {
      if (!/^[0-9a-f-]{36}$/i.test(sid)) return Option.none<Session>()
      const rows = yield* sql`
        SELECT id, sid, user_id, auth_time, expires_at, amr FROM sessions
        WHERE sid = ${sid} AND ended_at IS NULL AND expires_at > now()
      `.pipe(Effect.flatMap(decodeRows), Effect.orDie)
      return Option.map(Option.fromNullishOr(rows[0]), toSession)
    })

    /** Ends the session and revokes the refresh families it produced. */
    const end = Effect.fn("Sessions.end")(function*(id: string) {
      yield* Effect.gen(function*() {
        yield* sql`UPDATE sessions SET ended_at = now() WHERE id = ${id} AND ended_at IS NULL`
        yield* sql`
          UPDATE refresh_families SET revoked_at = now(), revoked_reason = 'logout'
          WHERE session_id = ${id} AND revoked_at IS NULL
        `
      }).pipe(sql.withTransaction, Effect.orDie)
    })

    /** Whether the session's sign-in happened less than `seconds` ago, on the database's clock. */
    const signedInWithin = Effect.fn("Sessions.signedInWithin")(function*(id: string, seconds: number) {
      const rows = yield* sql`
        SELECT 1 FROM sessions WHERE id = ${id} AND auth_time > now() - make_interval(secs => ${seconds})
      `.pipe(Effect.orDie)
      return rows.length > 0
    })

    const cookieName = config.cookies.session
    const cookieOptions = {
      path: config.cookies.path,
      httpOnly: true,
      secure: config.secureCookies,
      sameSite: "lax" as const
    }

    /** `Set-Cookie` for a new session (HttpOnly, SameSite=Lax; over https Secure and `__Host-`). */
    const setCookie = (response: HttpServerResponse.HttpServerResponse, cookie: string) =>
      HttpServerResponse.setCookieUnsafe(response, cookieName, cookie, {
        ...cookieOptions,
        maxAge: `${config.sessionTtlSeconds} seconds`
      })

    const clearCookie = (response: HttpServerResponse.HttpServerResponse) =>
      HttpServerResponse.expireCookieUnsafe(response, cookieName, cookieOptions)

    const fromRequest = (request: HttpServerRequest.HttpServerRequest) => fromCookie(request.cookies[cookieName])

    return {
      create,
      fromCookie,
      fromSid,
      fromRequest,
      signedInWithin,
      end,
      setCookie,
      clearCookie,
      cookieOptions
    } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([IdentityConfig.layer]))
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
}
