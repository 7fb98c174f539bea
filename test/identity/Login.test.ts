/**
 * Accounts and sessions (README, "Flows"; docs/decisions.md, "Identity: tokens and sessions", "Identity: pages";
 * docs/api-contract.md, "Errors: identity (OAuth errors and the envelope)"): `POST /auth/login`
 * answers the envelope and sets the session cookie; wrong credentials, banned accounts and brute
 * force get envelope errors; `GET /auth/me` shows 10001/10002/10003.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import * as Jose from "jose"
import { LoginRequest } from "../../schema/Identity/Login.js"
import { DEFAULT_LOG_N, parseHash, Passwords } from "../../src/identity/crypto/Passwords.js"
import { Users } from "../../src/identity/users/Users.js"
import { identityClient } from "../support/Clients.js"
import { signWithProviderKey } from "../support/IdentityKeys.js"
import { createUser, IdentityServers, IdentityTestEnv, login, serverLayerOptions } from "../support/IdentityServers.js"
import { loginFrom } from "../support/LocalAddress.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const Env = IdentityTestEnv({
  // Small buckets so brute force is visible within a test; each test uses its own account.
  IDENTITY_LOGIN_FAILURE_BURST: "3",
  IDENTITY_LOGIN_FAILURE_PER_MINUTE: "1",
  IDENTITY_LOGIN_IP_BURST: "40",
  IDENTITY_LOGIN_IP_PER_MINUTE: "1"
})

const postLogin = (identity: string, body: unknown, headers: Record<string, string> = {}) =>
  Effect.promise(async () => {
    const res = await fetch(`${identity}/api/v1/auth/login`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body)
    })
    return { res, body: await res.json() as any }
  })

describe("POST /api/v1/auth/login and GET /api/v1/auth/me", () => {
  it.layer(Env, serverLayerOptions)((it) => {
    it.effect("success is {code: 0, message, data: {access_token, token_type: Bearer, expires_in: 900}} (README, \"Flows\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const user = yield* createUser({ roles: ["creator"] })
        const client = yield* identityClient(identity)
        const body = yield* client.auth.login({
          payload: new LoginRequest({ email: user.email, password: user.password })
        })
        expect(body).toEqual({
          code: 0,
          message: expect.any(String),
          data: { access_token: expect.any(String), token_type: "Bearer", expires_in: 900 }
        })
        // An RS256 at+jwt with the user's integer id, sub and roles (docs/decisions.md, "Identity: tokens and sessions").
        const header = Jose.decodeProtectedHeader(body.data.access_token)
        expect(header).toMatchObject({ alg: "RS256", typ: "at+jwt" })
        const claims = Jose.decodeJwt(body.data.access_token)
        expect(claims).toMatchObject({ iss: issuer, sub: user.sub, uid: user.id, roles: ["creator"] })
        expect(claims.exp! - claims.iat!).toBe(900)
      }))

    it.effect("the session cookie is HttpOnly, SameSite=Lax, path /api/v1, not Secure over http (docs/decisions.md, \"Identity: tokens and sessions\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const { res } = yield* postLogin(identity, { email: user.email, password: user.password })
        const cookie = res.headers.get("set-cookie") ?? ""
        expect(cookie).toMatch(/^shiori_session=[A-Za-z0-9_-]{43};/)
        expect(cookie).toMatch(/HttpOnly/i)
        expect(cookie).toMatch(/SameSite=Lax/i)
        expect(cookie).toMatch(/Path=\/api\/v1/)
        expect(cookie).not.toMatch(/Secure/i)
      }))

    it.effect("email is matched case-insensitively; the same answer for a wrong password and an unknown email (10011)", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const upper = yield* (yield* identityClient(identity)).auth.login({
          payload: new LoginRequest({ email: user.email.toUpperCase(), password: user.password })
        })
        expect(upper.code).toBe(0)
        const wrong = yield* postLogin(identity, { email: user.email, password: "not-the-password" })
        expect(wrong.res.status).toBe(401)
        expect(wrong.body).toEqual({ code: 10011, message: "Wrong password", data: null })
        expect(wrong.res.headers.get("set-cookie")).toBeNull()
        const unknown = yield* postLogin(identity, { email: "nobody@example.com", password: "whatever" })
        expect(unknown.res.status).toBe(401)
        expect(unknown.body).toEqual(wrong.body)
      }))

    it.effect("a banned account is HTTP 403 (40302), and its tokens and sessions die (README, \"Flows\"; docs/decisions.md, \"Identity: tokens and sessions\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const before = yield* Effect.promise(() => login(identity, user))
        yield* Effect.flatMap(Users, (users) => users.setBanned(user.id, true))
        const { res, body } = yield* postLogin(identity, { email: user.email, password: user.password })
        expect(res.status).toBe(403)
        expect(body).toEqual({ code: 40302, message: "Account banned", data: null })
        const me = yield* Effect.promise(() =>
          fetch(`${identity}/api/v1/auth/me`, { headers: { authorization: `Bearer ${before.accessToken}` } })
        )
        expect(me.status).toBe(403)
        expect((yield* Effect.promise(() => me.json())).code).toBe(40302)
        // A wrong password on a banned account still says only "wrong credentials".
        const guess = yield* postLogin(identity, { email: user.email, password: "guess" })
        expect(guess.body.code).toBe(10011)
      }))

    it.effect("brute force on one account from one address gets 429 (10012) with Retry-After; not elsewhere", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const statuses: Array<number> = []
        let last: { res: Response; body: any } | undefined
        for (let i = 0; i < 5; i++) {
          last = yield* postLogin(identity, { email: user.email, password: `guess-${i}` })
          statuses.push(last.res.status)
        }
        expect(statuses).toEqual([401, 401, 401, 429, 429])
        expect(last!.body).toEqual({ code: 10012, message: "Too many attempts", data: null })
        expect(Number(last!.res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
        // Even the right password is refused from this address while its bucket for the account is
        // empty; from another address the account signs in (test/identity/LoginThrottle.test.ts).
        const right = yield* postLogin(identity, { email: user.email, password: user.password })
        expect(right.res.status).toBe(429)
        const elsewhere = yield* promise(() => loginFrom("127.0.0.2", identity, user))
        expect(elsewhere.status).toBe(200)
      }))

    it.effect("login is limited per IP too, across accounts (429 10012) (docs/api-contract.md, \"Rate limits and body limits\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        let status = 0
        let retryAfter: string | null = null
        // The IP bucket holds 40 (shared with the other tests of this file); fresh emails never hit the account limit.
        for (let i = 0; i < 60 && status !== 429; i++) {
          const { res } = yield* postLogin(identity, { email: `spray${i}@example.com`, password: "x" })
          status = res.status
          retryAfter = res.headers.get("retry-after")
        }
        expect(status).toBe(429)
        expect(Number(retryAfter)).toBeGreaterThanOrEqual(1)
      }))
  })

  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect("README Configuration, IDENTITY_LOGIN_FAILURE_BURST: a block's setting reaches its servers and no others", () =>
      Effect.gen(function*() {
        // These servers run this block's settings (the harness's burst of 1000); beside them, the
        // servers of the first block's `Env` (a burst of 3), both up at once.
        const here = yield* IdentityServers
        const first = yield* Layer.build(Env)
        const there = Context.get(first, IdentityServers)
        const fourWrong = (identity: string, user: { readonly email: string }) =>
          Effect.forEach(
            [0, 1, 2, 3],
            (i) =>
              Effect.map(postLogin(identity, { email: user.email, password: `guess-${i}` }), ({ res }) => res.status)
          )
        const thereUser = yield* createUser().pipe(Effect.provide(first))
        expect(yield* fourWrong(there.identity, thereUser)).toEqual([401, 401, 401, 429])
        const hereUser = yield* createUser()
        expect(yield* fourWrong(here.identity, hereUser)).toEqual([401, 401, 401, 401])
      }))

    it.effect("a malformed body is envelope 40001; a form-encoded body is refused 415 41501 (no login CSRF)", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const bad = yield* postLogin(identity, { email: "not-an-email" })
        expect(bad.res.status).toBe(400)
        expect(bad.body).toEqual({ code: 40001, message: "Invalid request", data: null })
        const broken = yield* postLogin(identity, "{not json")
        expect(broken.res.status).toBe(400)
        expect(broken.body.code).toBe(40001)
        const user = yield* createUser()
        const form = yield* Effect.promise(async () => {
          const res = await fetch(`${identity}/api/v1/auth/login`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({ email: user.email, password: user.password }).toString()
          })
          return { res, body: await res.json() as any }
        })
        expect(form.res.status).toBe(415)
        expect(form.body.code).toBe(41501)
        expect(form.res.headers.get("set-cookie")).toBeNull()
      }))

    it.effect("the sign-in form needs its CSRF token and follows return_to only to paths on this server (docs/decisions.md, \"Identity: pages\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const submit = (returnTo: string, withToken = true) =>
          Effect.promise(async () => {
            const page = await fetch(`${identity}/api/v1/ui/login?return_to=${encodeURIComponent(returnTo)}`)
            const html = await page.text()
            const csrfCookie = page.headers.getSetCookie().map((c) => c.split(";")[0]).join("; ")
            const token = /name="csrf" value="([^"]+)"/.exec(html)![1]!
            return fetch(`${identity}/api/v1/ui/login`, {
              method: "POST",
              redirect: "manual",
              headers: { cookie: csrfCookie, "content-type": "application/x-www-form-urlencoded" },
              body: new URLSearchParams({
                ...(withToken ? { csrf: token } : {}),
                email: user.email,
                password: user.password,
                return_to: returnTo
              }).toString()
            })
          })
        const ok = yield* submit("/api/v1/oauth/authorize?client_id=x")
        expect(ok.status).toBe(303)
        expect(ok.headers.get("location")).toBe(`${identity}/api/v1/oauth/authorize?client_id=x`)
        expect(ok.headers.get("set-cookie")).toMatch(/^shiori_session=/)
        for (
          const evil of [
            "https://evil.example/",
            "//evil.example/api/v1/",
            "/\\evil.example",
            "/api/v1/../../evil",
            "javascript:alert(1)",
            "/elsewhere"
          ]
        ) {
          const res = yield* submit(evil)
          expect(res.status, evil).toBe(200)
          expect(res.headers.get("location"), evil).toBeNull()
        }
        const forged = yield* submit("/api/v1/oauth/authorize", false)
        expect(forged.status).toBe(403)
        expect(forged.headers.get("set-cookie") ?? "").not.toMatch(/shiori_session=/)
      }))

    it.effect("/auth/me answers 10001 without a token, 10002 for a bad one, 10003 expired (docs/api-contract.md, \"Errors: identity (OAuth errors and the envelope)\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const me = (token?: string) =>
          Effect.promise(async () => {
            const res = await fetch(`${identity}/api/v1/auth/me`, {
              headers: token === undefined ? {} : { authorization: `Bearer ${token}` }
            })
            return { status: res.status, body: await res.json() as any }
          })
        expect(yield* me()).toEqual({ status: 401, body: { code: 10001, message: "Token missing", data: null } })
        expect(yield* me("garbage")).toEqual({
          status: 401,
          body: { code: 10002, message: "Token invalid", data: null }
        })

        const user = yield* createUser({ name: "Rin" })
        const session = yield* Effect.promise(() => login(identity, user))
        const ok = yield* me(session.accessToken)
        expect(ok.status).toBe(200)
        expect(ok.body).toEqual({
          code: 0,
          message: expect.any(String),
          data: {
            id: user.id,
            sub: user.sub,
            email: user.email,
            email_verified: true,
            name: "Rin",
            picture: "",
            bio: "",
            roles: [],
            created_at: expect.any(Number),
            updated_at: expect.any(Number),
            two_factor: false
          }
        })

        // The same claims, signed by the provider's key, with `exp` half an hour ago.
        const claims = Jose.decodeJwt(session.accessToken)
        const expired = yield* signWithProviderKey({ ...claims, iat: claims.iat! - 3600, exp: claims.iat! - 1800 })
        expect((yield* me(expired)).body.code).toBe(10003)
      }))
  })

  it.layer(IdentityTestEnv({ IDENTITY_SCRYPT_LOG_N: String(DEFAULT_LOG_N) }), serverLayerOptions)((it) => {
    it.effect("OWASP password storage: a hash of the old cost (N = 2^15) is upgraded to N = 2^17 at sign-in", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const sql = yield* SqlClient.SqlClient
        const user = yield* createUser()
        const oldHash = yield* Effect.flatMap(Passwords, (passwords) => passwords.hash(user.password)).pipe(
          Effect.provide(Passwords.layer.pipe(
            Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: { IDENTITY_SCRYPT_LOG_N: "15" } })))
          ))
        )
        yield* sql`UPDATE users SET password_hash = ${oldHash} WHERE id = ${user.id}`
        const stored = () =>
          Effect.map(
            sql<{ password_hash: string }>`SELECT password_hash FROM users WHERE id = ${user.id}`,
            (rows) => rows[0]!.password_hash
          )
        expect(parseHash(yield* stored())).toMatchObject({ N: 2 ** 15, r: 8, p: 1 })

        expect((yield* postLogin(identity, { email: user.email, password: user.password })).res.status).toBe(200)
        const upgraded = yield* stored()
        expect(parseHash(upgraded)).toMatchObject({ N: 131072, r: 8, p: 1 })
        expect(upgraded).not.toBe(oldHash)
        // The new hash is the same password: signing in again works and leaves it alone.
        expect((yield* postLogin(identity, { email: user.email, password: user.password })).res.status).toBe(200)
        expect(yield* stored()).toBe(upgraded)
        expect((yield* postLogin(identity, { email: user.email, password: "wrong" })).res.status).toBe(401)
      }))
  })
})
