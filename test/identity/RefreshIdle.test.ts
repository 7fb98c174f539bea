/**
 * Refresh token idle timeout (RFC 9700 section 4.14.2: refresh tokens should expire once the client
 * has been inactive for some time): next to the family's absolute lifetime, a refresh token unused
 * for `IDENTITY_REFRESH_IDLE_TIMEOUT_SECONDS` (30 days by default) is `invalid_grant`. Tokens are
 * aged in the database rather than waited for.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import {
  createClient,
  IdentityServers,
  IdentityTestEnv,
  refreshRequest,
  serverLayerOptions,
  signIn,
  tokensFor
} from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)
const hashOf = (token: string) => Crypto.createHash("sha256").update(token).digest("hex")

/** Pretends the refresh token was issued `days` ago. */
const age = (token: string, days: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql`
      UPDATE refresh_tokens SET created_at = now() - make_interval(days => ${days})
      WHERE token_hash = ${hashOf(token)}
    `)

describe("refresh token idle timeout", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect("RFC 9700 section 4.14.2: unused for more than 30 days (the default) is invalid_grant", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const first = yield* promise(() => tokensFor(identity, client, session, "openid"))
        // Used within the window: rotates, and the successor's clock starts afresh.
        yield* age(first.refresh_token, 29)
        const second = yield* promise(() => refreshRequest(identity, client, first.refresh_token))
        expect(second.status, JSON.stringify(second.body)).toBe(200)
        yield* age(second.body.refresh_token, 31)
        const idle = yield* promise(() => refreshRequest(identity, client, second.body.refresh_token))
        expect(idle.status).toBe(400)
        expect(idle.body).toEqual({ error: "invalid_grant", error_description: "the refresh token has expired unused" })
        // Presenting the rotated first token is still reuse, and still revokes the family.
        const replay = yield* promise(() => refreshRequest(identity, client, first.refresh_token))
        expect(replay.body.error_description).toMatch(/already used/)
      }))
  })

  it.layer(IdentityTestEnv({ IDENTITY_REFRESH_IDLE_TIMEOUT_SECONDS: "0" }), serverLayerOptions)((it) => {
    it.effect("IDENTITY_REFRESH_IDLE_TIMEOUT_SECONDS=0: only the absolute lifetime applies", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const first = yield* promise(() => tokensFor(identity, client, session, "openid"))
        yield* age(first.refresh_token, 60)
        const refreshed = yield* promise(() => refreshRequest(identity, client, first.refresh_token))
        expect(refreshed.status).toBe(200)
      }))
  })
})
