/**
 * Discovery and keys (docs/decisions.md, "Identity: protocol", "Identity: tokens and sessions";
 * OIDC Discovery 1.0 section 4; RFC 8414 section 3; RFC 7517),
 * the identity server's OpenAPI document (every endpoint with a summary and a description), and the
 * server-wide behaviours: framing protection (docs/decisions.md, "Identity: pages") and error shapes
 * (docs/api-contract.md, "Errors: identity (OAuth errors and the envelope)").
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import { DEFAULT_ISSUER, issuerConfig } from "../../src/identity/shared/IdentityConfig.js"
import { IdentityServers, IdentityTestEnv, serverLayerOptions } from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)
const getJson = (url: string) =>
  promise(async () => {
    const res = await fetch(url)
    return { status: res.status, headers: res.headers, body: await res.json() as any }
  })

describe("identity discovery, JWKS and OpenAPI", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect("the metadata at both locations; issuer byte-identical; iss response parameter advertised (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const oidc = yield* getJson(`${identity}/api/v1/.well-known/openid-configuration`)
        const rfc8414 = yield* getJson(`${identity}/.well-known/oauth-authorization-server/api/v1`)
        expect(oidc.status).toBe(200)
        expect(rfc8414.body).toEqual(oidc.body)
        expect(oidc.body).toMatchObject({
          issuer,
          authorization_endpoint: `${issuer}/oauth/authorize`,
          token_endpoint: `${issuer}/oauth/token`,
          userinfo_endpoint: `${issuer}/oauth/userinfo`,
          jwks_uri: `${issuer}/oauth/jwks`,
          revocation_endpoint: `${issuer}/oauth/revoke`,
          end_session_endpoint: `${issuer}/oauth/logout`,
          response_types_supported: ["code"],
          grant_types_supported: ["authorization_code", "refresh_token"],
          code_challenge_methods_supported: ["S256", "plain"],
          id_token_signing_alg_values_supported: ["RS256"],
          token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
          authorization_response_iss_parameter_supported: true
        })
        expect(oidc.body.scopes_supported).toEqual(
          expect.arrayContaining(["openid", "profile", "email", "catalog:read"])
        )
      }))

    it.effect("JWKS at {issuer}/oauth/jwks: public RSA keys only, with kid, use sig, alg RS256 (docs/decisions.md, \"Identity: tokens and sessions\")", () =>
      Effect.gen(function*() {
        const { issuer } = yield* IdentityServers
        const jwks = yield* getJson(`${issuer}/oauth/jwks`)
        expect(jwks.status).toBe(200)
        expect(jwks.body.keys.length).toBeGreaterThanOrEqual(1)
        for (const key of jwks.body.keys) {
          expect(Object.keys(key).sort()).toEqual(["alg", "e", "kid", "kty", "n", "use"])
          expect(key).toMatchObject({ kty: "RSA", use: "sig", alg: "RS256" })
        }
      }))

    it.effect("every identity endpoint is in /api/v1/openapi.json with a summary and a description (README, \"Identity provider\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const doc = yield* getJson(`${identity}/api/v1/openapi.json`)
        const operations: Array<[string, any]> = []
        for (const [path, item] of Object.entries(doc.body.paths as Record<string, Record<string, any>>)) {
          for (const [method, op] of Object.entries(item)) operations.push([`${method.toUpperCase()} ${path}`, op])
        }
        const names = operations.map(([name]) => name)
        for (
          const expected of [
            "GET /api/v1/oauth/authorize",
            "POST /api/v1/oauth/token",
            "GET /api/v1/oauth/userinfo",
            "POST /api/v1/oauth/revoke",
            "GET /api/v1/oauth/logout",
            "GET /api/v1/oauth/post-logout-redirect",
            "GET /api/v1/oauth/jwks",
            "GET /api/v1/.well-known/openid-configuration",
            "POST /api/v1/auth/login",
            "GET /api/v1/ui/login",
            "GET /api/v1/ui/consent",
            "GET /api/v1/ui/logout"
          ]
        ) expect(names).toContain(expected)
        for (const [name, op] of operations) {
          expect(op.summary, name).toEqual(expect.any(String))
          expect(op.description, name).toEqual(expect.any(String))
        }
      }))

    it.effect("every identity response forbids framing (docs/decisions.md, \"Identity: pages\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        for (const path of ["/api/v1/oauth/jwks", "/api/v1/ui/login", "/api/v1/nope", "/healthz"]) {
          const res = yield* promise(() => fetch(`${identity}${path}`))
          expect(res.headers.get("x-frame-options"), path).toBe("DENY")
          expect(res.headers.get("content-security-policy"), path).toContain("frame-ancestors 'none'")
        }
      }))

    it.effect("unknown paths: bare OAuth JSON under /oauth, the envelope elsewhere; no problem documents (docs/api-contract.md, \"Errors: identity (OAuth errors and the envelope)\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const oauth = yield* getJson(`${identity}/api/v1/oauth/nope`)
        expect(oauth.status).toBe(404)
        expect(oauth.body).toEqual({ error: "invalid_request", error_description: expect.any(String) })
        const other = yield* getJson(`${identity}/api/v1/nope`)
        expect(other.status).toBe(404)
        expect(other.body).toEqual({ code: 40401, message: "Not found", data: null })
        expect(other.headers.get("content-type")).toMatch(/^application\/json/)
      }))
  })
})

describe("issuer default (docs/decisions.md, \"Identity: protocol\")", () => {
  const issuerFrom = (settings: Record<string, string>) =>
    Effect.runSync(
      Effect.provideService(issuerConfig, ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: settings }))
    )

  it("IDENTITY_ISSUER wins; unset, the issuer follows IDENTITY_PORT; neither gives the default", () => {
    expect(issuerFrom({ IDENTITY_ISSUER: "https://id.example/api/v1", IDENTITY_PORT: "9000" }))
      .toBe("https://id.example/api/v1")
    expect(issuerFrom({ IDENTITY_PORT: "9000" })).toBe("http://127.0.0.1:9000/api/v1")
    expect(issuerFrom({})).toBe(DEFAULT_ISSUER)
  })
})
