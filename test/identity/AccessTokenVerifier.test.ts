/**
 * The catalog's access-token verifier over a remote JWKS
 * (docs/api-contract.md, "Credentials, scopes and the content limit"): keys cached, refetched on an unknown `kid` (at most once per cooldown), and the
 * RFC 8725 / RFC 9068 refusals: `alg: none`, HS256, id_tokens (`typ`), foreign issuers, dead families.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer, Option } from "effect"
import * as Jose from "jose"
import * as Http from "node:http"
import type * as Net from "node:net"
import { principalFromAccessToken } from "../../src/catalog/auth/Authorization.js"
import { DEFAULT_CATALOG_AUDIENCE } from "../../src/identity/shared/IdentityConfig.js"
import { AccessTokenVerifierJwks } from "../../src/identity/tokens/AccessTokenVerifier.js"
import { TokenLiveness } from "../../src/identity/tokens/Liveness.js"
import { AccessTokenVerifier } from "../../src/platform/IdentityPort.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const keyPair = async () => {
  const { privateKey, publicKey } = await Jose.generateKeyPair("RS256", { extractable: true })
  const jwk = await Jose.exportJWK(publicKey)
  const kid = await Jose.calculateJwkThumbprint(jwk)
  return { privateKey, kid, jwk: { ...jwk, kid, alg: "RS256", use: "sig" } }
}

/** A stand-in provider: serves the JWKS it is told to and counts fetches. */
const fakeProvider = Effect.acquireRelease(
  promise(() =>
    new Promise<{ url: string; published: Array<Jose.JWK>; fetches: () => number; server: Http.Server }>((resolve) => {
      const published: Array<Jose.JWK> = []
      let fetches = 0
      const server = Http.createServer((_req, res) => {
        fetches++
        res.setHeader("content-type", "application/json")
        res.end(JSON.stringify({ keys: published }))
      })
      server.listen(0, "127.0.0.1", () => {
        const { port } = server.address() as Net.AddressInfo
        resolve({ url: `http://127.0.0.1:${port}`, published, fetches: () => fetches, server })
      })
    })
  ),
  ({ server }) => promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
)

const claimsFor = (issuer: string, extra: Jose.JWTPayload = {}): Jose.JWTPayload => ({
  iss: issuer,
  sub: "5b0c7c4e-4a3f-4a51-9a0e-7c1f7f4c2d11",
  aud: DEFAULT_CATALOG_AUDIENCE,
  client_id: "portal",
  scope: "catalog:read",
  jti: crypto.randomUUID(),
  iat: Math.floor(Date.now() / 1000),
  exp: Math.floor(Date.now() / 1000) + 900,
  uid: 7,
  roles: [],
  site_roles: [],
  fid: "0f4b6a1e-5f7f-4f0c-8c54-0d3e5c1a9b77",
  ...extra
})

const sign = (key: { privateKey: Jose.CryptoKey; kid: string }, claims: Jose.JWTPayload, typ = "at+jwt") =>
  promise(() => new Jose.SignJWT(claims).setProtectedHeader({ alg: "RS256", kid: key.kid, typ }).sign(key.privateKey))

const verifierFor = (provider: { url: string }, live: Set<string>, settings: Record<string, string> = {}) =>
  Effect.provide(
    AccessTokenVerifier,
    AccessTokenVerifierJwks.pipe(
      Layer.provide(Layer.succeed(
        TokenLiveness,
        TokenLiveness.of({
          isLive: (claims) => Effect.succeed(claims.fid !== undefined && live.has(claims.fid)),
          liveUser: () => Effect.die("the catalog's verifier never reads the user")
        })
      )),
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({
        env: {
          IDENTITY_ISSUER: `${provider.url}/api/v1`,
          IDENTITY_JWKS_URL: `${provider.url}/api/v1/oauth/jwks`,
          IDENTITY_JWKS_COOLDOWN_SECONDS: String(COOLDOWN_MS / 1000),
          ...settings
        }
      })))
    )
  )

const COOLDOWN_MS = 1_000

const reasonOf = <A, R>(effect: Effect.Effect<A, { readonly reason: string }, R>) =>
  Effect.map(Effect.flip(effect), (e) => e.reason)

/** Waits out the refetch cooldown: the cooldown's length is what these tests check. */
const wait = (ms: number) => promise(() => new Promise((resolve) => setTimeout(resolve, ms)))

describe("AccessTokenVerifierJwks", () => {
  it.live("JWKS fetched once and cached; an unknown kid refetches (after the cooldown), a known one does not", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const issuer = `${provider.url}/api/v1`
      const [a, b] = yield* promise(() => Promise.all([keyPair(), keyPair()]))
      provider.published.push(a.jwk)
      const verifier = yield* verifierFor(provider, new Set(["0f4b6a1e-5f7f-4f0c-8c54-0d3e5c1a9b77"]))

      const tokenA = yield* sign(a, claimsFor(issuer))
      expect((yield* verifier.verify(tokenA)).uid).toBe(7)
      yield* verifier.verify(tokenA)
      expect(provider.fetches()).toBe(1)

      // Key rotation at the provider: a token by the new key makes the verifier refetch.
      provider.published.unshift(b.jwk)
      yield* wait(COOLDOWN_MS + 100)
      const tokenB = yield* sign(b, claimsFor(issuer))
      expect((yield* verifier.verify(tokenB)).client_id).toBe("portal")
      expect(provider.fetches()).toBe(2)

      // Made-up kids: refused, and they cannot make the verifier hammer the provider (one fetch per
      // cooldown at most, however many arrive).
      yield* wait(COOLDOWN_MS + 100)
      const started = Date.now()
      for (let i = 0; i < 20; i++) {
        const forged = yield* sign({ ...a, kid: `unknown-${i}` }, claimsFor(issuer))
        expect(yield* reasonOf(verifier.verify(forged))).toBe("unknown_key")
      }
      expect(provider.fetches()).toBeLessThanOrEqual(2 + 1 + Math.floor((Date.now() - started) / COOLDOWN_MS))
    }).pipe(Effect.scoped))

  it.live("RFC 8725 / RFC 9068: alg none, HS256, id_token typ, foreign issuer, expired and revoked families are refused", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const issuer = `${provider.url}/api/v1`
      const a = yield* promise(keyPair)
      provider.published.push(a.jwk)
      const liveFamily = "0f4b6a1e-5f7f-4f0c-8c54-0d3e5c1a9b77"
      const verifier = yield* verifierFor(provider, new Set([liveFamily]))
      const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString("base64url")

      const none = `${b64({ alg: "none", typ: "at+jwt", kid: a.kid })}.${b64(claimsFor(issuer))}.`
      expect(yield* reasonOf(verifier.verify(none))).toBe("unsupported_algorithm")
      const hs = yield* promise(() =>
        new Jose.SignJWT(claimsFor(issuer)).setProtectedHeader({ alg: "HS256", kid: a.kid, typ: "at+jwt" }).sign(
          new TextEncoder().encode(JSON.stringify(a.jwk))
        )
      )
      expect(yield* reasonOf(verifier.verify(hs))).toBe("unsupported_algorithm")
      expect(yield* reasonOf(verifier.verify(yield* sign(a, claimsFor(issuer), "JWT")))).toBe("wrong_type")
      expect(yield* reasonOf(verifier.verify(yield* sign(a, claimsFor("https://evil.example/api/v1"))))).toBe(
        "wrong_issuer"
      )
      expect(yield* reasonOf(verifier.verify(yield* sign(a, claimsFor(issuer, { exp: 1_000_000 }))))).toBe("expired")
      const dead = yield* sign(a, claimsFor(issuer, { fid: "9e3c2f4a-1111-4222-8333-944455556666" }))
      expect(yield* reasonOf(verifier.verify(dead))).toBe("revoked")
      expect((yield* verifier.verify(yield* sign(a, claimsFor(issuer)))).fid).toBe(liveFamily)
    }).pipe(Effect.scoped))

  it.live("RFC 9068 section 4: the token's aud must name the catalog (CATALOG_AUDIENCE); a client id or the issuer is refused", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const issuer = `${provider.url}/api/v1`
      const a = yield* promise(keyPair)
      provider.published.push(a.jwk)
      const live = new Set(["0f4b6a1e-5f7f-4f0c-8c54-0d3e5c1a9b77"])
      const verifier = yield* verifierFor(provider, live)
      expect(verifier.audience).toBe("urn:shiori:catalog")
      for (const aud of ["portal", issuer, ["portal", "https://other-api.example"]]) {
        expect(yield* reasonOf(verifier.verify(yield* sign(a, claimsFor(issuer, { aud }))))).toBe("wrong_audience")
      }
      const among = yield* verifier.verify(
        yield* sign(a, claimsFor(issuer, { aud: ["portal", DEFAULT_CATALOG_AUDIENCE] }))
      )
      expect(among.client_id).toBe("portal")

      // Configured: the catalog requires its own identifier instead of the default.
      const own = yield* verifierFor(provider, live, { CATALOG_AUDIENCE: "https://catalog.example/v2" })
      expect(yield* reasonOf(own.verify(yield* sign(a, claimsFor(issuer))))).toBe("wrong_audience")
      expect((yield* own.verify(yield* sign(a, claimsFor(issuer, { aud: "https://catalog.example/v2" })))).uid).toBe(7)
    }).pipe(Effect.scoped))

  it.live("the catalog principal of a user token: user id, sub, roles, site roles, the client's site, catalog scopes (docs/api-contract.md, \"Credentials, scopes and the content limit\")", () =>
    Effect.gen(function*() {
      const provider = yield* fakeProvider
      const issuer = `${provider.url}/api/v1`
      const a = yield* promise(keyPair)
      provider.published.push(a.jwk)
      const verifier = yield* verifierFor(provider, new Set(["0f4b6a1e-5f7f-4f0c-8c54-0d3e5c1a9b77"]))
      const token = yield* sign(
        a,
        claimsFor(issuer, {
          scope: "openid profile catalog:read moderation",
          roles: ["moderator"],
          site_roles: ["editor"],
          site: "vn_portal",
          content_limit: "nsfw"
        })
      )
      const principal = principalFromAccessToken(yield* verifier.verify(token))
      expect(principal).toMatchObject({ credential: "access_token", site: "vn_portal", contentLimit: "nsfw" })
      expect([...principal.scopes]).toEqual(["catalog:read", "moderation"])
      expect(Option.getOrThrow(principal.user)).toEqual({
        id: 7,
        sub: "5b0c7c4e-4a3f-4a51-9a0e-7c1f7f4c2d11",
        roles: ["moderator"],
        siteRoles: ["editor"]
      })
      // A client without a site and a token without a content limit: no tenant, sfw.
      const bare = principalFromAccessToken(yield* verifier.verify(yield* sign(a, claimsFor(issuer))))
      expect(bare).toMatchObject({ site: "", contentLimit: "sfw" })
    }).pipe(Effect.scoped))
})
