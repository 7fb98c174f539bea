/**
 * `GET /api/v1/oauth/userinfo` (README, "Flows"; RFC 6750 section 3; OIDC Core 5.3) and `POST
 * /api/v1/oauth/revoke` (RFC 7009; docs/decisions.md, "Identity: protocol"), including forged tokens: `alg: none`, HS256 keyed
 * with the public key, an id_token presented as an access token, a foreign issuer, an expired token.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option } from "effect"
import * as Jose from "jose"
import { Users } from "../../src/identity/users/Users.js"
import { catalogClientAt } from "../support/Clients.js"
import { eventually } from "../support/Eventually.js"
import { hs256WithPublicKey, signWithProviderKey, unsignedToken } from "../support/IdentityKeys.js"
import {
  bearerGet,
  createClient,
  IdentityServers,
  IdentityTestEnv,
  refreshRequest,
  serverLayerOptions,
  signIn,
  tokensFor
} from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const userinfo = (identity: string, token: string | undefined, init: RequestInit = {}) =>
  promise(async () => {
    const res = await fetch(`${identity}/api/v1/oauth/userinfo`, {
      ...init,
      headers: token === undefined ? {} : { authorization: `Bearer ${token}` }
    })
    const text = await res.text()
    return { status: res.status, body: text === "" ? null : JSON.parse(text), headers: res.headers }
  })

const revoke = (identity: string, body: Record<string, string>, options: { json?: boolean; basic?: string } = {}) =>
  promise(async () => {
    const res = await fetch(`${identity}/api/v1/oauth/revoke`, {
      method: "POST",
      headers: {
        "content-type": options.json === true ? "application/json" : "application/x-www-form-urlencoded",
        ...(options.basic !== undefined ? { authorization: `Basic ${options.basic}` } : {})
      },
      body: options.json === true ? JSON.stringify(body) : new URLSearchParams(body).toString()
    })
    const text = await res.text()
    return { status: res.status, body: text === "" ? null : JSON.parse(text) }
  })

// One server stack for the three parts of this file.
it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
  describe("GET /api/v1/oauth/userinfo", () => {
    it.effect("fields and scope rules: id, sub, roles, updated_at always; name/picture with profile; email with email (README, \"Flows\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity, { name: "Shirou", roles: ["creator"] })
        const user = session.user
        const base = { id: user.id, sub: user.sub, roles: ["creator"], updated_at: expect.any(Number) }

        const openid = yield* promise(() => tokensFor(identity, client, session, "openid"))
        const only = yield* userinfo(identity, openid.access_token)
        expect(only.status).toBe(200)
        expect(only.headers.get("cache-control")).toBe("no-store")
        expect(only.body).toStrictEqual(base)
        expect(Number.isInteger(only.body.id)).toBe(true)
        expect(only.body.sub).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)

        const profile = yield* promise(() => tokensFor(identity, client, session, "openid profile"))
        expect((yield* userinfo(identity, profile.access_token)).body).toStrictEqual({
          ...base,
          name: "Shirou",
          picture: ""
        })
        const email = yield* promise(() => tokensFor(identity, client, session, "email"))
        expect((yield* userinfo(identity, email.access_token)).body).toStrictEqual({
          ...base,
          email: user.email,
          email_verified: true
        })
        // An empty scope returns everything (README, "Flows").
        const empty = yield* promise(() => tokensFor(identity, client, session, ""))
        expect((yield* userinfo(identity, empty.access_token)).body).toStrictEqual({
          ...base,
          name: "Shirou",
          picture: "",
          email: user.email,
          email_verified: true
        })
        // The provider's own sign-in token has an empty scope too.
        expect((yield* userinfo(identity, session.accessToken)).body.email).toBe(user.email)
        // OIDC Core 5.3.1: POST works as GET.
        const post = yield* userinfo(identity, profile.access_token, { method: "POST" })
        expect(post.body.name).toBe("Shirou")
      }))

    it.effect("OIDC Core 5.1: email_verified goes with email in userinfo and the id_token; false when nobody vouched", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        for (const emailVerified of [true, false]) {
          const session = yield* signIn(identity, { emailVerified })
          const tokens = yield* promise(() => tokensFor(identity, client, session, "openid email"))
          expect((yield* userinfo(identity, tokens.access_token)).body).toMatchObject({
            email: session.user.email,
            email_verified: emailVerified
          })
          expect(Jose.decodeJwt(tokens.id_token!)).toMatchObject({
            email: session.user.email,
            email_verified: emailVerified
          })
          // Without scope email, neither.
          const plain = yield* promise(() => tokensFor(identity, client, session, "openid profile"))
          expect(Jose.decodeJwt(plain.id_token!)).not.toHaveProperty("email_verified")
          expect((yield* userinfo(identity, plain.access_token)).body).not.toHaveProperty("email_verified")
        }
      }))

    it.effect("site_roles are those of the token's site, omitted when none (README, \"Flows\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const users = yield* Users
        const portal = yield* createClient({ site: "portal" })
        const wiki = yield* createClient({ site: "wiki" })
        const plain = yield* createClient()
        const session = yield* signIn(identity)
        yield* users.grantRole(session.user.id, "editor", Option.some("portal"))
        yield* users.grantRole(session.user.id, "curator", Option.some("portal"))
        yield* users.grantRole(session.user.id, "reviewer", Option.some("other"))

        const atPortal = yield* promise(() => tokensFor(identity, portal, session, "openid"))
        expect((yield* userinfo(identity, atPortal.access_token)).body.site_roles).toEqual(["curator", "editor"])
        expect(Jose.decodeJwt(atPortal.access_token).site_roles).toEqual(["curator", "editor"])
        for (const client of [wiki, plain]) {
          const tokens = yield* promise(() => tokensFor(identity, client, session, "openid"))
          expect((yield* userinfo(identity, tokens.access_token)).body).not.toHaveProperty("site_roles")
        }
      }))

    it.effect("RFC 6750 3.1: no token -> 401 with a bare Bearer challenge; a bad one -> 401 invalid_token", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const none = yield* userinfo(identity, undefined)
        expect(none.status).toBe(401)
        expect(none.headers.get("www-authenticate")).toBe(`Bearer realm="shiori"`)
        expect(none.body.error).toEqual(expect.any(String))
        const bad = yield* userinfo(identity, "not.a.token")
        expect(bad.status).toBe(401)
        expect(bad.headers.get("www-authenticate")).toMatch(/^Bearer realm="shiori", error="invalid_token"/)
        expect(bad.body).toEqual({ error: "invalid_token", error_description: expect.any(String) })
        const basic = yield* promise(() =>
          fetch(`${identity}/api/v1/oauth/userinfo`, { headers: { authorization: "Basic dXNlcjpwYXNz" } })
        )
        expect(basic.status).toBe(400)
        expect(basic.headers.get("www-authenticate")).toMatch(/error="invalid_request"/)
      }))

    it.effect("RFC 8725 3.1-3.2, RFC 9068 4: alg none, HS256 with the public key, id_token, foreign issuer, expired: 401", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const tokens = yield* promise(() => tokensFor(identity, client, session, "openid profile"))
        const claims = Jose.decodeJwt(tokens.access_token)
        const kid = Jose.decodeProtectedHeader(tokens.access_token).kid
        const forged = [
          unsignedToken(claims, kid),
          yield* hs256WithPublicKey(claims),
          tokens.id_token!,
          yield* signWithProviderKey(claims, "JWT"),
          yield* signWithProviderKey({ ...claims, iss: "https://evil.example/api/v1" }),
          yield* signWithProviderKey({ ...claims, exp: Math.floor(Date.now() / 1000) - 120 }),
          `${tokens.access_token.slice(0, -4)}AAAA`
        ]
        for (const token of forged) {
          const res = yield* userinfo(identity, token)
          expect(res.status, token.slice(0, 40)).toBe(401)
          expect(res.body.error).toBe("invalid_token")
        }
        expect((yield* userinfo(identity, tokens.access_token)).status).toBe(200)
      }))
  })

  describe("POST /api/v1/oauth/revoke", () => {
    it.effect("revoking a refresh token ends its family; userinfo refuses its access tokens (RFC 7009 section 2.2; docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const tokens = yield* promise(() => tokensFor(identity, client, session, "openid"))
        const res = yield* revoke(identity, {
          token: tokens.refresh_token,
          token_type_hint: "refresh_token",
          client_id: client.clientId,
          client_secret: client.secret!
        })
        expect(res.status).toBe(200)
        expect((yield* promise(() => refreshRequest(identity, client, tokens.refresh_token))).body.error).toBe(
          "invalid_grant"
        )
        expect((yield* userinfo(identity, tokens.access_token)).status).toBe(401)
      }))

    it.effect("no client authentication is needed, and a JSON body works; an access token revokes its family (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const a = yield* promise(() => tokensFor(identity, client, session, "openid"))
        expect((yield* revoke(identity, { token: a.refresh_token }, { json: true })).status).toBe(200)
        expect((yield* userinfo(identity, a.access_token)).status).toBe(401)
        const b = yield* promise(() => tokensFor(identity, client, session, "openid"))
        expect((yield* revoke(identity, { token: b.access_token, token_type_hint: "access_token" })).status).toBe(200)
        expect((yield* promise(() => refreshRequest(identity, client, b.refresh_token))).status).toBe(400)
      }))

    it.effect("unknown or malformed tokens -> 200; another client's token -> 200 and no effect (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const other = yield* createClient()
        const session = yield* signIn(identity)
        const tokens = yield* promise(() => tokensFor(identity, client, session, "openid"))
        for (const token of ["unknown-token", "a.b.c", "%%%", "x".repeat(5000)]) {
          expect((yield* revoke(identity, { token })).status).toBe(200)
        }
        const foreign = yield* revoke(identity, {
          token: tokens.refresh_token,
          client_id: other.clientId,
          client_secret: other.secret!
        })
        expect(foreign.status).toBe(200)
        expect((yield* userinfo(identity, tokens.access_token)).status).toBe(200)
        expect((yield* promise(() => refreshRequest(identity, client, tokens.refresh_token))).status).toBe(200)
      }))

    it.effect("failed client authentication -> 401 invalid_client; missing token -> 400 invalid_request (docs/decisions.md, \"Identity: protocol\"; docs/api-contract.md, \"Errors: identity (OAuth errors and the envelope)\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const wrong = yield* revoke(identity, { token: "t", client_id: client.clientId, client_secret: "w".repeat(30) })
        expect(wrong.status).toBe(401)
        expect(wrong.body.error).toBe("invalid_client")
        const wrongBasic = yield* revoke(identity, { token: "t" }, {
          basic: Buffer.from(`${client.clientId}:nope`).toString("base64")
        })
        expect(wrongBasic.status).toBe(401)
        const missing = yield* revoke(identity, { client_id: client.clientId, client_secret: client.secret! })
        expect(missing.status).toBe(400)
        expect(missing.body).toEqual({ error: "invalid_request", error_description: expect.any(String) })
      }))
  })

  describe("the catalog accepts identity access tokens (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () => {
    it.effect("a user token: GET /v2/credential shows the user, the client's site, the catalog scopes granted", () =>
      Effect.gen(function*() {
        const { catalog, identity } = yield* IdentityServers
        const client = yield* createClient({
          site: "vn_portal",
          contentLimit: "nsfw",
          scopes: ["openid", "catalog:read", "claims:write"]
        })
        const session = yield* signIn(identity, { roles: ["moderator"] })
        const tokens = yield* promise(() => tokensFor(identity, client, session, "openid catalog:read claims:write"))
        // RFC 9068 section 3: the catalog is the audience; the client is named by client_id.
        expect(Jose.decodeJwt(tokens.access_token)).toMatchObject({
          aud: "urn:shiori:catalog",
          client_id: client.clientId
        })
        const atCatalog = yield* catalogClientAt(catalog, tokens.access_token)
        expect(yield* atCatalog.credentials.getCredential()).toEqual({
          object: "credential",
          kind: "access_token",
          id: Jose.decodeJwt(tokens.access_token).jti,
          site: "vn_portal",
          scopes: ["catalog:read", "claims:write"],
          content_limit: "nsfw",
          user_id: session.user.id
        })
        // The provider's own sign-in token is for the provider (aud: the issuer), not the catalog.
        const own = yield* promise(() => bearerGet(`${catalog}/v2/credential`, session.accessToken))
        expect(own.status).toBe(401)
        expect((yield* promise(() => own.json())).code).toBe("INVALID_CREDENTIAL")
      }))

    it.effect("forged and wrong tokens are 401 INVALID_CREDENTIAL: alg none, HS256/public key, id_token, foreign iss, expired, foreign aud", () =>
      Effect.gen(function*() {
        const { catalog, identity } = yield* IdentityServers
        const client = yield* createClient({ site: "vn_portal" })
        const session = yield* signIn(identity)
        const tokens = yield* promise(() => tokensFor(identity, client, session, "openid catalog:read"))
        const claims = Jose.decodeJwt(tokens.access_token)
        const kid = Jose.decodeProtectedHeader(tokens.access_token).kid
        const forged = [
          unsignedToken(claims, kid),
          yield* hs256WithPublicKey(claims),
          tokens.id_token!,
          yield* signWithProviderKey({ ...claims, iss: "https://evil.example/api/v1" }),
          yield* signWithProviderKey({ ...claims, exp: Math.floor(Date.now() / 1000) - 120 }),
          // RFC 9068 section 4: a token whose aud is not the catalog (the client id, another API).
          yield* signWithProviderKey({ ...claims, aud: client.clientId }),
          yield* signWithProviderKey({ ...claims, aud: ["https://other-api.example"] }),
          "eyJhbGciOiJSUzI1NiJ9.e30.AAAA"
        ]
        for (const token of forged) {
          const res = yield* promise(() => bearerGet(`${catalog}/v2/credential`, token))
          expect(res.status).toBe(401)
          expect(res.headers.get("content-type")).toBe("application/problem+json")
          expect((yield* promise(() => res.json())).code).toBe("INVALID_CREDENTIAL")
        }
        expect((yield* promise(() => bearerGet(`${catalog}/v2/credential`, tokens.access_token))).status).toBe(200)
      }))

    it.effect("a revoked family stops working at the catalog well inside the token's 900 s (the time is reported) (docs/decisions.md, \"Identity: tokens and sessions\")", () =>
      Effect.gen(function*() {
        const { catalog, identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const tokens = yield* promise(() => tokensFor(identity, client, session, "catalog:read"))
        expect((yield* promise(() => bearerGet(`${catalog}/v2/credential`, tokens.access_token))).status).toBe(200)
        expect((yield* revoke(identity, { token: tokens.refresh_token })).status).toBe(200)
        const started = Date.now()
        // The test servers cache "alive" for 1 s (IDENTITY_REVOCATION_CACHE_SECONDS; default 5). The
        // bound only stops a wait that would never end: a minute is still well inside the token's 900 s.
        yield* eventually(
          Effect.map(
            promise(() => bearerGet(`${catalog}/v2/credential`, tokens.access_token)),
            (res) => expect(res.status).toBe(401)
          ),
          { intervalMs: 50, timeoutMs: 60_000 }
        )
        console.log(`revoked family refused by the catalog after ${Date.now() - started} ms`)
      }))
  })
})
