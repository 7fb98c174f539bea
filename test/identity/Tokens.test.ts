import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import * as Jose from "jose"
import * as Crypto from "node:crypto"
import { SigningKeys, SigningKeysTest } from "../../src/identity/keys/SigningKeys.js"
import { DEFAULT_ISSUER } from "../../src/identity/shared/IdentityConfig.js"
import { atHash, Tokens } from "../../src/identity/tokens/Tokens.js"

const NOW = Date.parse("2026-03-01T12:00:00Z")

const config = (issuer?: string) =>
  ConfigProvider.layer(ConfigProvider.fromEnv({ env: issuer === undefined ? {} : { IDENTITY_ISSUER: issuer } }))

/**
 * Tokens over the given key ring, so two issuers can share one set of keys. Local: not the `Tokens`
 * an enclosing `Effect.provide` already built (with the other issuer).
 */
const tokensOver = (keys: SigningKeys["Service"], issuer?: string) =>
  Effect.provide(
    Tokens,
    Tokens.layerWithoutDependencies.pipe(
      Layer.provide(Layer.succeed(SigningKeys, keys)),
      Layer.provide(config(issuer))
    ),
    { local: true }
  )

// The clock is set before the key ring is built: moving a TestClock forward afterwards would run
// the ring's 60-second reload loop once for every minute since 1970.
const TestLayer = Tokens.layerWithoutDependencies.pipe(
  Layer.provideMerge(SigningKeysTest),
  Layer.provide(config()),
  Layer.provide(Layer.effectDiscard(TestClock.setTime(NOW)))
)

const input = {
  sub: "5b0c7c4e-4a3f-4a51-9a0e-7c1f7f4c2d11",
  uid: 42,
  clientId: "vndb-mirror",
  audience: "shiori-catalog",
  scopes: ["openid", "profile"],
  roles: ["creator"],
  siteRoles: ["editor"],
  site: "mirror.example",
  familyId: "0f4b6a1e-5f7f-4f0c-8c54-0d3e5c1a9b77"
} as const

const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")
const headerOf = (token: string) => Jose.decodeProtectedHeader(token)

const rejection = <A, R>(effect: Effect.Effect<A, { readonly reason: string }, R>) =>
  Effect.flip(effect).pipe(Effect.map((error) => error.reason))

describe("Tokens", () => {
  it.effect("issues an RS256 at+jwt access token with the claims of README, \"Flows\" and verifies it (RFC 9068 section 2)", () =>
    Effect.gen(function*() {
      const tokens = yield* Tokens
      const keys = yield* SigningKeys
      const issued = yield* tokens.issueAccessToken(input)
      expect(issued.expiresIn).toBe(900)
      const header = headerOf(issued.token)
      expect(header).toEqual({ alg: "RS256", typ: "at+jwt", kid: (yield* keys.signingKey).kid })
      const claims = yield* tokens.verifyAccessToken(issued.token, { audience: "shiori-catalog" })
      expect(claims).toMatchObject({
        iss: DEFAULT_ISSUER,
        sub: input.sub,
        aud: "shiori-catalog",
        client_id: "vndb-mirror",
        scope: "openid profile",
        jti: issued.jti,
        iat: NOW / 1000,
        exp: NOW / 1000 + 900,
        uid: 42,
        roles: ["creator"],
        site_roles: ["editor"],
        site: "mirror.example",
        fid: input.familyId
      })
      expect(claims.scopes).toEqual(["openid", "profile"])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("gives an ordinary user an empty roles array (README, \"Flows\")", () =>
    Effect.gen(function*() {
      const tokens = yield* Tokens
      const { token } = yield* tokens.issueAccessToken({ ...input, roles: [], siteRoles: [] })
      const claims = yield* tokens.verifyAccessToken(token)
      expect(claims.roles).toEqual([])
      expect(claims.site_roles).toEqual([])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("rejects alg none (RFC 8725 section 3.1, RFC 9068 section 4)", () =>
    Effect.gen(function*() {
      const tokens = yield* Tokens
      const { token } = yield* tokens.issueAccessToken(input)
      const [, payload] = token.split(".")
      const unsigned = `${encode({ alg: "none", typ: "at+jwt", kid: headerOf(token).kid })}.${payload}.`
      expect(yield* rejection(tokens.verifyAccessToken(unsigned))).toBe("unsupported_algorithm")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("rejects HS256 keyed with the public key's bytes (key confusion, RFC 8725 section 2.1)", () =>
    Effect.gen(function*() {
      const tokens = yield* Tokens
      const keys = yield* SigningKeys
      const { token } = yield* tokens.issueAccessToken(input)
      const jwk = (yield* keys.jwks).keys[0]
      const pem = Crypto.createPublicKey({ key: { kty: jwk.kty, n: jwk.n, e: jwk.e }, format: "jwk" })
        .export({ type: "spki", format: "pem" })
      const payload = Jose.decodeJwt(token)
      for (const secret of [Buffer.from(pem), Buffer.from(JSON.stringify(jwk))]) {
        const forged = yield* Effect.promise(() =>
          new Jose.SignJWT({ ...payload, roles: ["admin"] })
            .setProtectedHeader({ alg: "HS256", typ: "at+jwt", kid: jwk.kid })
            .sign(secret)
        )
        expect(yield* rejection(tokens.verifyAccessToken(forged))).toBe("unsupported_algorithm")
      }
    }).pipe(Effect.provide(TestLayer)))

  it.effect("rejects an id_token presented as an access token (docs/decisions.md, \"Identity: tokens and sessions\"; RFC 9068 section 4)", () =>
    Effect.gen(function*() {
      const tokens = yield* Tokens
      const idToken = yield* tokens.issueIdToken({ sub: input.sub, clientId: input.clientId, authTime: NOW / 1000 })
      expect(yield* rejection(tokens.verifyAccessToken(idToken))).toBe("wrong_type")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("rejects a correctly signed token whose typ is not at+jwt, even with access token claims (RFC 9068 section 4)", () =>
    Effect.gen(function*() {
      const tokens = yield* Tokens
      const keys = yield* SigningKeys
      const key = yield* keys.signingKey
      const { token } = yield* tokens.issueAccessToken(input)
      const retyped = yield* Effect.promise(() =>
        new Jose.SignJWT(Jose.decodeJwt(token)).setProtectedHeader({ alg: "RS256", typ: "JWT", kid: key.kid })
          .sign(key.privateKey)
      )
      expect(yield* rejection(tokens.verifyAccessToken(retyped))).toBe("wrong_type")
      const untyped = yield* Effect.promise(() =>
        new Jose.SignJWT(Jose.decodeJwt(token)).setProtectedHeader({ alg: "RS256", kid: key.kid }).sign(key.privateKey)
      )
      expect(yield* rejection(tokens.verifyAccessToken(untyped))).toBe("wrong_type")
      // RFC 7515 section 4.1.9: the "application/" prefix may be present.
      const prefixed = yield* Effect.promise(() =>
        new Jose.SignJWT(Jose.decodeJwt(token)).setProtectedHeader({
          alg: "RS256",
          typ: "application/at+jwt",
          kid: key.kid
        }).sign(key.privateKey)
      )
      expect((yield* tokens.verifyAccessToken(prefixed)).uid).toBe(42)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("rejects a token from a foreign issuer even when signed with our key (docs/decisions.md, \"Identity: protocol\"; RFC 9068 section 4)", () =>
    Effect.gen(function*() {
      const tokens = yield* Tokens
      const foreign = yield* tokensOver(yield* SigningKeys, "https://evil.example/api/v1")
      const { token } = yield* foreign.issueAccessToken(input)
      expect(yield* rejection(tokens.verifyAccessToken(token))).toBe("wrong_issuer")
      // The issuer is byte-identical: a trailing slash is another issuer.
      const slash = yield* tokensOver(yield* SigningKeys, `${DEFAULT_ISSUER}/`)
      const { token: slashed } = yield* slash.issueAccessToken(input)
      expect(yield* rejection(tokens.verifyAccessToken(slashed))).toBe("wrong_issuer")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("rejects a token past exp, 900 s after issue (README, \"Flows\"), with envelope code 10003 (docs/api-contract.md, \"Errors: identity (OAuth errors and the envelope)\")", () =>
    Effect.gen(function*() {
      const tokens = yield* Tokens
      const { token } = yield* tokens.issueAccessToken(input)
      yield* TestClock.adjust("899 seconds")
      expect((yield* tokens.verifyAccessToken(token)).uid).toBe(42)
      yield* TestClock.adjust("10 seconds")
      const error = yield* Effect.flip(tokens.verifyAccessToken(token))
      expect(error.reason).toBe("expired")
      expect(error.envelopeCode).toBe(10003)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("rejects a tampered payload and a key we never published (RFC 7515 section 5.2)", () =>
    Effect.gen(function*() {
      const tokens = yield* Tokens
      const { token } = yield* tokens.issueAccessToken(input)
      const [header, payload, signature] = token.split(".")
      const claims = JSON.parse(Buffer.from(payload, "base64url").toString())
      const tampered = `${header}.${encode({ ...claims, roles: ["admin"] })}.${signature}`
      const error = yield* Effect.flip(tokens.verifyAccessToken(tampered))
      expect(error.reason).toBe("bad_signature")
      expect(error.envelopeCode).toBe(10002)
      // Another key ring: local, or the enclosing provide's ring would be reused.
      const stranger = yield* Effect.flatMap(Tokens, (t) => t.issueAccessToken(input)).pipe(
        Effect.provide(TestLayer, { local: true })
      )
      expect(yield* rejection(tokens.verifyAccessToken(stranger.token))).toBe("unknown_key")
      expect(yield* rejection(tokens.verifyAccessToken("not.a.jwt"))).toBe("malformed")
      expect(yield* rejection(tokens.verifyAccessToken(""))).toBe("malformed")
    }).pipe(Effect.provide(TestLayer)))

  it.effect("checks the audience when the verifier names one (RFC 9068 section 4)", () =>
    Effect.gen(function*() {
      const tokens = yield* Tokens
      const { token } = yield* tokens.issueAccessToken(input)
      expect(yield* rejection(tokens.verifyAccessToken(token, { audience: "another-api" }))).toBe("wrong_audience")
    }).pipe(Effect.provide(TestLayer)))

  it("computes at_hash as in OIDC Core 1.0 section 3.1.3.6 (example of Appendix A.3)", () => {
    expect(atHash("jHkWEdUXMU1BwAsC4vtUsZwnNvTIxEl0z9K3vx5KF0Y")).toBe("77QmUPtjPfzWtF2AnpK9RQ")
  })

  it.effect("issues an id_token with iss sub aud azp exp iat auth_time nonce at_hash, typ JWT (OIDC Core 1.0 section 2)", () =>
    Effect.gen(function*() {
      const tokens = yield* Tokens
      const keys = yield* SigningKeys
      const access = yield* tokens.issueAccessToken(input)
      const idToken = yield* tokens.issueIdToken({
        sub: input.sub,
        clientId: input.clientId,
        authTime: NOW / 1000 - 30,
        nonce: "n-0S6_WzA2Mj",
        accessToken: access.token,
        claims: { email: "reader@example.com", iss: "must-not-override" }
      })
      const key = (yield* keys.jwks).keys[0]
      const { payload, protectedHeader } = yield* Effect.promise(async () =>
        Jose.jwtVerify(idToken, await Jose.importJWK({ ...key }, "RS256"), {
          algorithms: ["RS256"],
          issuer: DEFAULT_ISSUER,
          audience: input.clientId,
          currentDate: new Date(NOW)
        })
      )
      expect(protectedHeader).toEqual({ alg: "RS256", typ: "JWT", kid: key.kid })
      expect(payload).toEqual({
        iss: DEFAULT_ISSUER,
        sub: input.sub,
        aud: input.clientId,
        azp: input.clientId,
        iat: NOW / 1000,
        exp: NOW / 1000 + 3600,
        auth_time: NOW / 1000 - 30,
        nonce: "n-0S6_WzA2Mj",
        at_hash: atHash(access.token),
        email: "reader@example.com"
      })
    }).pipe(Effect.provide(TestLayer)))

  it.effect("accepts an expired id_token as id_token_hint but not an access token (OIDC RP-Initiated Logout section 2)", () =>
    Effect.gen(function*() {
      const tokens = yield* Tokens
      const idToken = yield* tokens.issueIdToken({ sub: input.sub, clientId: input.clientId, authTime: NOW / 1000 })
      yield* TestClock.adjust("2 hours")
      const hint = yield* tokens.verifyIdTokenHint(idToken)
      expect(hint.sub).toBe(input.sub)
      expect(hint.aud).toBe(input.clientId)
      const access = yield* tokens.issueAccessToken(input)
      const error = yield* Effect.flip(tokens.verifyIdTokenHint(access.token))
      expect(error._tag).toBe("IdTokenHintRejected")
    }).pipe(Effect.provide(TestLayer)))
})

describe("SigningKeys rotation (docs/decisions.md, \"Identity: tokens and sessions\")", () => {
  it.effect("publishes a rotated-in key first, signs with it after the grace period, keeps old tokens valid", () =>
    Effect.gen(function*() {
      const tokens = yield* Tokens
      const keys = yield* SigningKeys
      const before = yield* tokens.issueAccessToken(input)
      const oldKid = headerOf(before.token).kid
      const { kid: newKid } = yield* keys.rotate()
      expect((yield* keys.jwks).keys.map((key) => key.kid)).toEqual([newKid, oldKid])
      expect(headerOf((yield* tokens.issueAccessToken(input)).token).kid).toBe(oldKid)
      yield* TestClock.adjust("119 seconds")
      const lastOld = yield* tokens.issueAccessToken(input)
      expect(headerOf(lastOld.token).kid).toBe(oldKid)
      yield* TestClock.adjust("1 seconds")
      const after = yield* tokens.issueAccessToken(input)
      expect(headerOf(after.token).kid).toBe(newKid)
      expect((yield* tokens.verifyAccessToken(after.token)).uid).toBe(42)
      // Signed just before the switch: still valid until its own exp.
      yield* TestClock.adjust("890 seconds")
      expect((yield* tokens.verifyAccessToken(lastOld.token)).uid).toBe(42)
    }).pipe(Effect.provide(TestLayer)))

  it.effect("drops a retired key from the JWKS once every token it signed has expired", () =>
    Effect.gen(function*() {
      const keys = yield* SigningKeys
      const oldKid = (yield* keys.signingKey).kid
      const { kid: newKid } = yield* keys.rotate({ graceSeconds: 0 })
      expect((yield* keys.signingKey).kid).toBe(newKid)
      yield* TestClock.adjust("3719 seconds")
      yield* keys.reload
      expect((yield* keys.jwks).keys.map((key) => key.kid)).toEqual([newKid, oldKid])
      yield* TestClock.adjust("2 seconds")
      yield* keys.reload
      expect((yield* keys.jwks).keys.map((key) => key.kid)).toEqual([newKid])
    }).pipe(Effect.provide(TestLayer)))

  it.effect("a second rotation within the grace period supersedes the pending key", () =>
    Effect.gen(function*() {
      const keys = yield* SigningKeys
      const first = yield* keys.rotate()
      yield* TestClock.adjust("30 seconds")
      const second = yield* keys.rotate({ graceSeconds: 0 })
      expect((yield* keys.signingKey).kid).toBe(second.kid)
      yield* TestClock.adjust("200 seconds")
      expect((yield* keys.signingKey).kid).toBe(second.kid)
      expect((yield* keys.jwks).keys.map((key) => key.kid)).toContain(first.kid)
    }).pipe(Effect.provide(TestLayer)))
})
