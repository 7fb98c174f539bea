/**
 * `POST /api/v1/oauth/token` (README, "Flows"; RFC 6749 sections 2.3.1, 4.1.3, 5.1, 5.2, 6; RFC 7636
 * section 4.6; RFC 9068; RFC 9700 section 4.14.2; OIDC Core 3.1.3.6;
 * docs/decisions.md, "Identity: protocol", "Identity: tokens and sessions"), including the
 * attacks README, "Security" guards against: code replay, PKCE mismatch and downgrade, redirect_uri mismatch, wrong secret,
 * refresh reuse, refresh by another client, scope widening, and 200 concurrent refreshes.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as Jose from "jose"
import * as Crypto from "node:crypto"
import { Grants } from "../../src/identity/oauth/Grants.js"
import { eventually } from "../support/Eventually.js"
import {
  bearerGet,
  createClient,
  exchangeCode,
  getCode,
  IdentityServers,
  IdentityTestEnv,
  pkcePair,
  refreshRequest,
  serverLayerOptions,
  signIn,
  tokenRequest,
  tokensFor
} from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const expectOAuthError = (res: { status: number; body: any; headers: Headers }, status: number, error: string) => {
  expect(res.status, JSON.stringify(res.body)).toBe(status)
  expect(res.body).toEqual({ error, error_description: expect.any(String) })
  expect(res.headers.get("cache-control")).toBe("no-store")
}

const userinfoStatus = (identity: string, accessToken: string) =>
  promise(() => bearerGet(`${identity}/api/v1/oauth/userinfo`, accessToken).then((res) => res.status))

describe("POST /api/v1/oauth/token", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect("authorization_code with a JSON body: Bearer access token (900 s), opaque refresh token, no-store (README, \"Flows\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const client = yield* createClient({ site: "vn_portal" })
        const session = yield* signIn(identity, { roles: ["moderator"] })
        const { code } = yield* promise(() => getCode(identity, client, session.accessToken, { scope: "catalog:read" }))
        const res = yield* promise(() =>
          tokenRequest(identity, {
            grant_type: "authorization_code",
            code,
            redirect_uri: client.redirectUri,
            client_id: client.clientId,
            client_secret: client.secret!
          }, { json: true })
        )
        expect(res.status).toBe(200)
        expect(res.headers.get("cache-control")).toBe("no-store")
        expect(res.headers.get("pragma")).toBe("no-cache")
        expect(res.body).toEqual({
          access_token: expect.any(String),
          token_type: "Bearer",
          expires_in: 900,
          refresh_token: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
          scope: "catalog:read"
        })
        // The refresh token is opaque, not a JWT (docs/decisions.md, "Identity: tokens and sessions").
        expect(() => Jose.decodeJwt(res.body.refresh_token)).toThrow()
        // RS256 at+jwt with the claims listed in README, "Flows".
        expect(Jose.decodeProtectedHeader(res.body.access_token)).toMatchObject({ alg: "RS256", typ: "at+jwt" })
        const claims = Jose.decodeJwt(res.body.access_token)
        // RFC 9068 section 3: aud is the resource server (the catalog); the client is client_id.
        expect(claims).toMatchObject({
          iss: issuer,
          sub: session.user.sub,
          aud: "urn:shiori:catalog",
          client_id: client.clientId,
          scope: "catalog:read",
          jti: expect.any(String),
          uid: session.user.id,
          roles: ["moderator"],
          site_roles: [],
          site: "vn_portal"
        })
        expect(claims.exp! - claims.iat!).toBe(900)
        expect(Math.abs(claims.iat! - Date.now() / 1000)).toBeLessThan(60)
      }))

    it.effect("OIDC Core 3.1.3.6: with openid an RS256 id_token with nonce, at_hash, auth_time, azp, verified by the JWKS", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity, { name: "Saber" })
        const { code } = yield* promise(() =>
          getCode(identity, client, session.accessToken, { scope: "openid profile email", nonce: "n-0S6_WzA2Mj" })
        )
        const res = yield* promise(() => exchangeCode(identity, client, code))
        expect(res.status).toBe(200)
        const jwks = Jose.createRemoteJWKSet(new URL(`${issuer}/oauth/jwks`))
        const { payload, protectedHeader } = yield* promise(() =>
          Jose.jwtVerify(res.body.id_token, jwks, { issuer, audience: client.clientId, algorithms: ["RS256"] })
        )
        expect(protectedHeader.alg).toBe("RS256")
        expect(payload).toMatchObject({
          sub: session.user.sub,
          azp: client.clientId,
          nonce: "n-0S6_WzA2Mj",
          auth_time: expect.any(Number),
          name: "Saber",
          email: session.user.email
        })
        const digest = Crypto.createHash("sha256").update(res.body.access_token).digest()
        expect(payload.at_hash).toBe(digest.subarray(0, 16).toString("base64url"))
        // Without openid there is no id_token.
        const plain = yield* promise(() => tokensFor(identity, client, session, "profile"))
        expect(plain.id_token).toBeUndefined()
      }))

    it.effect("RFC 6749 2.3.1: client_secret_basic (form-urlencoded id and secret) works; two methods at once do not", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const { code } = yield* promise(() => getCode(identity, client, session.accessToken))
        const basic = { id: client.clientId, secret: client.secret! }
        const both = yield* promise(() =>
          tokenRequest(identity, {
            grant_type: "authorization_code",
            code,
            redirect_uri: client.redirectUri,
            client_secret: client.secret!
          }, { basic })
        )
        expectOAuthError(both, 400, "invalid_request")
        const second = yield* promise(() => getCode(identity, client, session.accessToken))
        const ok = yield* promise(() =>
          tokenRequest(identity, {
            grant_type: "authorization_code",
            code: second.code,
            redirect_uri: client.redirectUri
          }, { basic })
        )
        expect(ok.status).toBe(200)
      }))

    it.effect("RFC 6749 5.2: wrong secret, unknown client or no authentication: 401 invalid_client with a Basic challenge", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const { code } = yield* promise(() => getCode(identity, client, session.accessToken))
        const wrong = yield* promise(() => exchangeCode(identity, client, code, { client_secret: "x".repeat(32) }))
        expectOAuthError(wrong, 401, "invalid_client")
        expect(wrong.headers.get("www-authenticate")).toMatch(/^Basic realm="shiori"/)
        const wrongBasic = yield* promise(() =>
          tokenRequest(identity, { grant_type: "authorization_code", code, redirect_uri: client.redirectUri }, {
            basic: { id: client.clientId, secret: `${client.secret}x` }
          })
        )
        expectOAuthError(wrongBasic, 401, "invalid_client")
        const unknown = yield* promise(() => exchangeCode(identity, { ...client, clientId: "ghost" }, code))
        expectOAuthError(unknown, 401, "invalid_client")
        const none = yield* promise(() => exchangeCode(identity, client, code, { client_secret: undefined }))
        expectOAuthError(none, 401, "invalid_client")
        const anonymous = yield* promise(() =>
          tokenRequest(identity, { grant_type: "authorization_code", code, redirect_uri: client.redirectUri })
        )
        expectOAuthError(anonymous, 401, "invalid_client")
        // Failed authentication does not burn the code.
        expect((yield* promise(() => exchangeCode(identity, client, code))).status).toBe(200)
      }))

    it.effect("a code is single use; replaying it is invalid_grant and revokes what it produced (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const { code } = yield* promise(() => getCode(identity, client, session.accessToken, { scope: "openid" }))
        const first = yield* promise(() => exchangeCode(identity, client, code))
        expect(first.status).toBe(200)
        expect(yield* userinfoStatus(identity, first.body.access_token)).toBe(200)
        const replay = yield* promise(() => exchangeCode(identity, client, code))
        expectOAuthError(replay, 400, "invalid_grant")
        // The first exchange's tokens are dead: userinfo refuses the access token, refresh fails.
        expect(yield* userinfoStatus(identity, first.body.access_token)).toBe(401)
        expectOAuthError(
          yield* promise(() => refreshRequest(identity, client, first.body.refresh_token)),
          400,
          "invalid_grant"
        )
      }))

    it.effect("a replay that lands between redemption and the family insert leaves nothing alive (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const grants = yield* Grants
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const { code } = yield* promise(() => getCode(identity, client, session.accessToken))
        const codeHash = Crypto.createHash("sha256").update(code).digest("hex")
        // The winner's first statement, then a replay, then the winner's second statement.
        const redeemed = yield* grants.redeemCode(codeHash, null)
        expect(redeemed._tag).toBe("Some")
        expect(yield* grants.revokeCodeReplay(codeHash)).toBe(true)
        const family = yield* grants.createFamily({
          clientId: client.clientId,
          userId: session.user.id,
          codeHash,
          sessionId: null,
          authTime: new Date(),
          ttlSeconds: 60,
          scopes: [],
          refreshHash: Crypto.randomBytes(32).toString("hex")
        })
        expect(family._tag).toBe("None")
      }).pipe(Effect.provide(Grants.layer)))

    it.effect("50 concurrent redemptions of one code: at most one answer, and its tokens end up dead (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const { code } = yield* promise(() => getCode(identity, client, session.accessToken, { scope: "openid" }))
        const results = yield* promise(() =>
          Promise.all(Array.from({ length: 50 }, () => exchangeCode(identity, client, code)))
        )
        const won = results.filter((res) => res.status === 200)
        expect(won.length).toBeLessThanOrEqual(1)
        for (const res of results.filter((res) => res.status !== 200)) expectOAuthError(res, 400, "invalid_grant")
        for (const res of won) {
          expect(yield* userinfoStatus(identity, res.body.access_token)).toBe(401)
          expectOAuthError(
            yield* promise(() => refreshRequest(identity, client, res.body.refresh_token)),
            400,
            "invalid_grant"
          )
        }
      }))

    it.effect("a code older than 10 minutes is invalid_grant (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const sql = yield* SqlClient.SqlClient
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const { code } = yield* promise(() => getCode(identity, client, session.accessToken))
        const hash = Crypto.createHash("sha256").update(code).digest("hex")
        const [row] = yield* sql<{ ttl: number }>`
          SELECT extract(epoch FROM expires_at - created_at)::int AS ttl FROM authorization_codes WHERE code_hash = ${hash}
        `
        expect(row!.ttl).toBe(600)
        yield* sql`UPDATE authorization_codes SET expires_at = now() - interval '1 second' WHERE code_hash = ${hash}`
        expectOAuthError(yield* promise(() => exchangeCode(identity, client, code)), 400, "invalid_grant")
      }))

    it.effect("RFC 6749 4.1.3: redirect_uri at the token endpoint must equal the one sent to authorize", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const second = "https://rp.example/other-callback"
        const client = yield* createClient({ redirectUris: ["https://rp.example/callback", second] })
        const session = yield* signIn(identity)
        const { code } = yield* promise(() => getCode(identity, client, session.accessToken))
        // Registered, but not the one the code was issued for.
        expectOAuthError(
          yield* promise(() => exchangeCode(identity, client, code, { redirect_uri: second })),
          400,
          "invalid_grant"
        )
        const another = yield* promise(() => getCode(identity, client, session.accessToken))
        expectOAuthError(
          yield* promise(() => exchangeCode(identity, client, another.code, { redirect_uri: undefined })),
          400,
          "invalid_request"
        )
      }))

    it.effect("RFC 6749 4.1.3: a code issued to one client is invalid_grant for another", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const thief = yield* createClient({ redirectUris: [client.redirectUri] })
        const session = yield* signIn(identity)
        const { code } = yield* promise(() => getCode(identity, client, session.accessToken))
        expectOAuthError(yield* promise(() => exchangeCode(identity, thief, code)), 400, "invalid_grant")
      }))

    it.effect("RFC 7636 4.6: PKCE S256 (the default method) must match; mismatch, absence and plain downgrade fail", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const issue = (challenge: string, method?: string) =>
          promise(() =>
            getCode(identity, client, session.accessToken, { code_challenge: challenge, code_challenge_method: method })
          ).pipe(Effect.map((r) => r.code))
        const pkce = pkcePair()
        // No method given: S256 (docs/decisions.md, "Identity: protocol").
        const good = yield* issue(pkce.challenge)
        expect((yield* promise(() => exchangeCode(identity, client, good, { code_verifier: pkce.verifier }))).status)
          .toBe(200)

        const wrong = yield* issue(pkce.challenge, "S256")
        expectOAuthError(
          yield* promise(() => exchangeCode(identity, client, wrong, { code_verifier: pkcePair().verifier })),
          400,
          "invalid_grant"
        )
        const missing = yield* issue(pkce.challenge, "S256")
        expectOAuthError(yield* promise(() => exchangeCode(identity, client, missing)), 400, "invalid_grant")
        // Downgrade: the S256 challenge itself sent back as if the method were plain.
        const downgrade = yield* issue(pkce.challenge, "S256")
        expectOAuthError(
          yield* promise(() => exchangeCode(identity, client, downgrade, { code_verifier: pkce.challenge })),
          400,
          "invalid_grant"
        )
        // Method switched by the client at the token endpoint: there is no such parameter; the method is bound.
        const switched = yield* issue(pkce.challenge, "S256")
        expectOAuthError(
          yield* promise(() =>
            exchangeCode(identity, client, switched, { code_verifier: pkce.challenge, code_challenge_method: "plain" })
          ),
          400,
          "invalid_grant"
        )
      }))

    it.effect("plain PKCE is bound to its code; a verifier for a code issued without a challenge fails (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const verifier = pkcePair().verifier
        const plain = yield* promise(() =>
          getCode(identity, client, session.accessToken, { code_challenge: verifier, code_challenge_method: "plain" })
        )
        expect((yield* promise(() => exchangeCode(identity, client, plain.code, { code_verifier: verifier }))).status)
          .toBe(200)
        // Stripping the challenge at authorize and sending a verifier anyway is caught here.
        const bare = yield* promise(() => getCode(identity, client, session.accessToken))
        expectOAuthError(
          yield* promise(() => exchangeCode(identity, client, bare.code, { code_verifier: verifier })),
          400,
          "invalid_grant"
        )
      }))

    it.effect("a public client authenticates with PKCE alone and may not send a secret (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient({ public: true })
        const session = yield* signIn(identity)
        const pkce = pkcePair()
        const { code } = yield* promise(() =>
          getCode(identity, client, session.accessToken, { code_challenge: pkce.challenge })
        )
        const withSecret = yield* promise(() =>
          exchangeCode(identity, client, code, { client_secret: "s".repeat(32), code_verifier: pkce.verifier })
        )
        expectOAuthError(withSecret, 401, "invalid_client")
        const ok = yield* promise(() => exchangeCode(identity, client, code, { code_verifier: pkce.verifier }))
        expect(ok.status).toBe(200)
        const refreshed = yield* promise(() => refreshRequest(identity, client, ok.body.refresh_token))
        expect(refreshed.status).toBe(200)
      }))

    it.effect("refresh rotates; reusing the old token is invalid_grant and revokes the whole family (docs/decisions.md, \"Identity: tokens and sessions\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const first = yield* promise(() => tokensFor(identity, client, session, "openid profile"))
        const second = yield* promise(() => refreshRequest(identity, client, first.refresh_token))
        expect(second.status).toBe(200)
        expect(second.headers.get("cache-control")).toBe("no-store")
        expect(second.body.refresh_token).not.toBe(first.refresh_token)
        expect(second.body.id_token).toEqual(expect.any(String))
        expect(Jose.decodeJwt(second.body.id_token).nonce).toBeUndefined()
        expect(yield* userinfoStatus(identity, second.body.access_token)).toBe(200)

        expectOAuthError(
          yield* promise(() => refreshRequest(identity, client, first.refresh_token)),
          400,
          "invalid_grant"
        )
        // RFC 9700 4.14.2: the successor and its access token are dead too.
        expectOAuthError(
          yield* promise(() => refreshRequest(identity, client, second.body.refresh_token)),
          400,
          "invalid_grant"
        )
        expect(yield* userinfoStatus(identity, second.body.access_token)).toBe(401)
        expect(yield* userinfoStatus(identity, first.access_token)).toBe(401)
      }))

    it.effect("a refresh token is bound to its client: another client gets invalid_grant, no effect (docs/decisions.md, \"Identity: tokens and sessions\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const other = yield* createClient()
        const session = yield* signIn(identity)
        const tokens = yield* promise(() => tokensFor(identity, client, session, "openid"))
        expectOAuthError(
          yield* promise(() => refreshRequest(identity, other, tokens.refresh_token)),
          400,
          "invalid_grant"
        )
        expect((yield* promise(() => refreshRequest(identity, client, tokens.refresh_token))).status).toBe(200)
      }))

    it.effect("RFC 6749 6: scope may narrow, never widen; the successor keeps the original grant", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const tokens = yield* promise(() => tokensFor(identity, client, session, "openid profile"))
        const wider = yield* promise(() =>
          refreshRequest(identity, client, tokens.refresh_token, { scope: "openid profile email" })
        )
        expectOAuthError(wider, 400, "invalid_scope")
        const narrow = yield* promise(() =>
          refreshRequest(identity, client, tokens.refresh_token, { scope: "profile" })
        )
        expect(narrow.status).toBe(200)
        expect(narrow.body.scope).toBe("profile")
        expect(narrow.body.id_token).toBeUndefined()
        expect(Jose.decodeJwt(narrow.body.access_token).scope).toBe("profile")
        const full = yield* promise(() => refreshRequest(identity, client, narrow.body.refresh_token))
        expect(full.status).toBe(200)
        expect(full.body.scope).toBe("openid profile")
      }))

    it.effect("RFC 6749 3.1 / 6: an empty scope on refresh counts as omitted; it never yields an empty-scope token", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const tokens = yield* promise(() => tokensFor(identity, client, session, "openid"))
        const refreshed = yield* promise(() => refreshRequest(identity, client, tokens.refresh_token, { scope: "" }))
        expect(refreshed.status).toBe(200)
        expect(refreshed.body.scope).toBe("openid")
        expect(Jose.decodeJwt(refreshed.body.access_token).scope).toBe("openid")
        // userinfo answers an empty-scope token in full; this one releases no more than openid.
        const info = yield* promise(() =>
          bearerGet(`${identity}/api/v1/oauth/userinfo`, refreshed.body.access_token).then((res) => res.json() as any)
        )
        expect(info).not.toHaveProperty("email")
        expect(info).not.toHaveProperty("name")
      }))

    it.effect("RFC 6749 3.3 / 6: refresh with a scope the client is not allowed is invalid_scope and rotates nothing", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient({ scopes: ["openid", "catalog:read"] })
        const session = yield* signIn(identity)
        const tokens = yield* promise(() => tokensFor(identity, client, session, "openid catalog:read"))
        for (const scope of ["openid moderation", "email"]) {
          expectOAuthError(
            yield* promise(() => refreshRequest(identity, client, tokens.refresh_token, { scope })),
            400,
            "invalid_scope"
          )
        }
        const ok = yield* promise(() =>
          refreshRequest(identity, client, tokens.refresh_token, { scope: "catalog:read" })
        )
        expect(ok.status).toBe(200)
        expect(ok.body.scope).toBe("catalog:read")
      }))

    it.effect("refresh lifetime follows the session, 90 days by default, shorter when the client says so (docs/decisions.md, \"Identity: tokens and sessions\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const sql = yield* SqlClient.SqlClient
        const session = yield* signIn(identity)
        const normal = yield* createClient()
        const short = yield* createClient({ refreshTtlSeconds: 1 })
        const a = yield* promise(() => tokensFor(identity, normal, session, "openid"))
        const hash = Crypto.createHash("sha256").update(a.refresh_token).digest("hex")
        const [row] = yield* sql<{ days: number }>`
          SELECT round(extract(epoch FROM expires_at - created_at) / 86400)::int AS days FROM refresh_tokens
          WHERE token_hash = ${hash}
        `
        expect(row!.days).toBe(90)
        const b = yield* promise(() => tokensFor(identity, short, session, "openid"))
        const shortHash = Crypto.createHash("sha256").update(b.refresh_token).digest("hex")
        const [lifetime] = yield* sql<{ seconds: number }>`
          SELECT extract(epoch FROM expires_at - created_at)::float8 AS seconds FROM refresh_tokens
          WHERE token_hash = ${shortHash}
        `
        expect(lifetime!.seconds).toBe(1)
        // Refused once expired by the database's clock, which is the one the grant checks (Grants.ts).
        yield* eventually(Effect.map(
          sql<{ expired: boolean }>`SELECT expires_at <= now() AS expired FROM refresh_tokens
            WHERE token_hash = ${shortHash}`,
          ([row]) => expect(row!.expired).toBe(true)
        ))
        expectOAuthError(yield* promise(() => refreshRequest(identity, short, b.refresh_token)), 400, "invalid_grant")
      }))

    it.effect("RFC 9700 4.14.2: 200 concurrent refreshes of one token produce exactly one successor", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const sql = yield* SqlClient.SqlClient
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const tokens = yield* promise(() => tokensFor(identity, client, session, "openid"))
        const results = yield* promise(() =>
          Promise.all(Array.from({ length: 200 }, () => refreshRequest(identity, client, tokens.refresh_token)))
        )
        const statuses = results.map((r) => r.status)
        expect(statuses.filter((s) => s === 200)).toHaveLength(1)
        expect(statuses.filter((s) => s === 400)).toHaveLength(199)
        for (const r of results) if (r.status === 400) expect(r.body.error).toBe("invalid_grant")
        const hash = Crypto.createHash("sha256").update(tokens.refresh_token).digest("hex")
        const rows = yield* sql<{ count: string }>`
          SELECT count(*)::text AS count FROM refresh_tokens
          WHERE family_id = (SELECT family_id FROM refresh_tokens WHERE token_hash = ${hash}) AND token_hash <> ${hash}
        `
        expect(rows[0]!.count).toBe("1")
      }))

    it.effect("RFC 6749 5.2: grant_type missing or unknown, missing parameters, unsupported body type", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const auth = { client_id: client.clientId, client_secret: client.secret! }
        expectOAuthError(yield* promise(() => tokenRequest(identity, { ...auth })), 400, "invalid_request")
        expectOAuthError(
          yield* promise(() => tokenRequest(identity, { ...auth, grant_type: "password" })),
          400,
          "unsupported_grant_type"
        )
        expectOAuthError(
          yield* promise(() => tokenRequest(identity, { ...auth, grant_type: "client_credentials" }, { json: true })),
          400,
          "unsupported_grant_type"
        )
        expectOAuthError(
          yield* promise(() => tokenRequest(identity, { ...auth, grant_type: "authorization_code" })),
          400,
          "invalid_request"
        )
        expectOAuthError(
          yield* promise(() => tokenRequest(identity, { ...auth, grant_type: "refresh_token" })),
          400,
          "invalid_request"
        )
        expectOAuthError(
          yield* promise(() => tokenRequest(identity, { ...auth, grant_type: "refresh_token", refresh_token: "nope" })),
          400,
          "invalid_grant"
        )
        const text = yield* promise(async () => {
          const res = await fetch(`${identity}/api/v1/oauth/token`, {
            method: "POST",
            headers: { "content-type": "text/plain" },
            body: "grant_type=authorization_code"
          })
          return { status: res.status, body: await res.json(), headers: res.headers }
        })
        expectOAuthError(text, 400, "invalid_request")
        const repeated = yield* promise(async () => {
          const res = await fetch(`${identity}/api/v1/oauth/token`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: "grant_type=refresh_token&grant_type=authorization_code"
          })
          return { status: res.status, body: await res.json(), headers: res.headers }
        })
        expectOAuthError(repeated, 400, "invalid_request")
      }))
  })
})
