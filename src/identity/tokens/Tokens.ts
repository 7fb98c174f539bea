/**
 * Signed tokens: RFC 9068 access tokens and OpenID Connect id_tokens (OIDC Core 1.0 section 2),
 * both RS256 with the active key's `kid`.
 *
 * Access token claims: `iss sub aud client_id scope jti iat exp` (RFC 9068 section 2.2) plus `uid`
 * (integer user id), `roles`, `site_roles`, `site` (the client's site, when it has one),
 * `auth_time`, `content_limit` (the client's catalog content gate), and either `fid` (the refresh
 * family of a client's token) or `sid` (the provider session of a sign-in token). A revoked family
 * or an ended session makes its access tokens dead at userinfo and the catalog; that
 * lookup needs the database and is the caller's second step after verification (`Liveness.ts`).
 * `aud` of a client's token is the catalog, the resource server it is for (RFC 9068 section 3;
 * `catalogAudienceConfig` in src/identity/shared/IdentityConfig.ts), the client being named by
 * `client_id`; a sign-in token's is the issuer.
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import * as Jose from "jose"
import * as Crypto from "node:crypto"
import type { GrantedRole } from "../../../schema/Identity/User.js"
import { AccessTokenClaims, AccessTokenRejected, type AccessTokenRejection } from "../../platform/IdentityPort.js"
import { SIGNING_ALG, SigningKeys } from "../keys/SigningKeys.js"
import { issuerConfig } from "../shared/IdentityConfig.js"
import { ACCESS_TOKEN_TTL_SECONDS, ID_TOKEN_TTL_SECONDS } from "../shared/Lifetimes.js"

/** RFC 9068 section 2.1: `typ` is `at+jwt` (the `application/` prefix is optional, RFC 7515 section 4.1.9). */
export const ACCESS_TOKEN_TYP = "at+jwt"

/** Seconds of clock difference tolerated on `exp`/`iat` between this service's instances. */
const VERIFY_CLOCK_TOLERANCE_SECONDS = 5

/**
 * OIDC Core 1.0 section 3.1.3.6: base64url of the left-most half of the SHA-256 (the hash of RS256)
 * of the ASCII octets of the access token.
 */
export const atHash = (accessToken: string): string =>
  Crypto.createHash("sha256").update(accessToken, "ascii").digest().subarray(0, 16).toString("base64url")

// ---------------------------------------------------------------------------------------------
// Claims and failures
// ---------------------------------------------------------------------------------------------

// The access token's claims and refusals (`AccessTokenClaims`, `AccessTokenRejected`) are what the
// catalog reads too: they stand in its contract with the provider, src/platform/IdentityPort.ts.

/** The verified payload of an id_token given back as `id_token_hint` (OIDC RP-Initiated Logout). */
export class IdTokenHint extends Schema.Class<IdTokenHint>("IdTokenHint")({
  iss: Schema.String,
  sub: Schema.String,
  aud: Schema.Union([Schema.String, Schema.Array(Schema.String)]),
  exp: Schema.Int,
  sid: Schema.optionalKey(Schema.String)
}) {}

export class IdTokenHintRejected extends Schema.TaggedError<IdTokenHintRejected>()("IdTokenHintRejected", {
  message: Schema.String
}) {}

const reject = (reason: AccessTokenRejection, message: string) => new AccessTokenRejected({ reason, message })

/** jose's failure classes to rejection reasons; anything unexpected counts as malformed. */
const fromJoseError = (error: unknown): AccessTokenRejected => {
  if (error instanceof Jose.errors.JWTExpired) return reject("expired", "token is expired")
  if (error instanceof Jose.errors.JWTClaimValidationFailed) {
    switch (error.claim) {
      case "iss":
        return reject("wrong_issuer", "token was issued by another issuer")
      case "aud":
        return reject("wrong_audience", "token is not meant for this audience")
      case "iat":
      case "nbf":
        return reject("not_yet_valid", "token is not valid yet")
      case "typ":
        return reject("wrong_type", "token is not an access token")
      default:
        return reject("invalid_claims", `claim ${error.claim} is invalid`)
    }
  }
  if (error instanceof Jose.errors.JOSEAlgNotAllowed) return reject("unsupported_algorithm", "algorithm not allowed")
  if (error instanceof Jose.errors.JWSSignatureVerificationFailed) {
    return reject("bad_signature", "signature verification failed")
  }
  return reject("malformed", "token is not a well-formed JWS")
}

/** `at+jwt` and `application/at+jwt` are the same media type (RFC 7515 section 4.1.9). */
const normalizeTyp = (typ: string | undefined) => typ?.toLowerCase().replace(/^application\//, "")

/**
 * Verifies a presented access token: RS256 only (so `alg: none` and HS256 keyed with the public key
 * are refused before any key is touched), `typ` must be `at+jwt` (an id_token is not an access
 * token, RFC 9068 section 4), signature by a key `keyFor` knows, the issuer, not expired. Shared by
 * the provider (its own key ring) and the catalog (the provider's JWKS).
 */
export const verifyAccessTokenWith = (token: string, options: {
  readonly issuer: string
  readonly keyFor: (kid: string) => Effect.Effect<Option.Option<Jose.CryptoKey | Jose.KeyObject>>
  readonly now: Date
  readonly audience?: string
}): Effect.Effect<AccessTokenClaims, AccessTokenRejected> =>
  Effect.gen(function*() {
    const header = yield* Effect.try({
      try: () => Jose.decodeProtectedHeader(token),
      catch: () => reject("malformed", "token is not a well-formed JWS")
    })
    if (header.alg !== SIGNING_ALG) return yield* reject("unsupported_algorithm", "only RS256 is accepted")
    if (normalizeTyp(header.typ) !== ACCESS_TOKEN_TYP) {
      return yield* reject("wrong_type", "token is not an access token")
    }
    if (typeof header.kid !== "string") return yield* reject("unknown_key", "token names no key")
    const key = yield* options.keyFor(header.kid)
    if (Option.isNone(key)) return yield* reject("unknown_key", "token was signed by an unknown key")
    const { payload } = yield* Effect.tryPromise({
      try: () =>
        Jose.jwtVerify(token, key.value, {
          algorithms: [SIGNING_ALG],
          typ: ACCESS_TOKEN_TYP,
          issuer: options.issuer,
          currentDate: options.now,
          clockTolerance: VERIFY_CLOCK_TOLERANCE_SECONDS,
          requiredClaims: ["iss", "sub", "aud", "exp", "iat", "jti", "client_id"],
          ...(options.audience !== undefined ? { audience: options.audience } : {})
        }),
      catch: fromJoseError
    })
    return yield* Schema.decodeUnknownEffect(AccessTokenClaims)(payload).pipe(
      Effect.mapError(() => reject("invalid_claims", "token claims do not have the expected shape"))
    )
  })

// ---------------------------------------------------------------------------------------------
// Service
// ---------------------------------------------------------------------------------------------

export interface AccessTokenInput {
  readonly sub: string
  readonly uid: number
  readonly clientId: string
  /** The resource server(s) the token is for (RFC 9068 section 3). */
  readonly audience: string | ReadonlyArray<string>
  readonly scopes: ReadonlyArray<string>
  readonly roles: ReadonlyArray<GrantedRole>
  readonly siteRoles: ReadonlyArray<string>
  readonly site?: string | undefined
  readonly familyId?: string | undefined
  /** The provider session a sign-in token belongs to (`sid`); ending the session kills the token. */
  readonly sessionId?: string | undefined
  /** Unix seconds of the end-user authentication (RFC 9068 section 2.2.1). */
  readonly authTime?: number | undefined
  /** The catalog content gate of the client (docs/api-contract.md, "Credentials, scopes and the content limit"). */
  readonly contentLimit?: "sfw" | "nsfw" | undefined
}

export interface IssuedAccessToken {
  readonly token: string
  readonly jti: string
  readonly expiresIn: number
  /** Unix seconds. */
  readonly expiresAt: number
}

export interface IdTokenInput {
  readonly sub: string
  readonly clientId: string
  /** Unix seconds of the end-user authentication (OIDC Core section 2). */
  readonly authTime: number
  /** How the user authenticated (OIDC Core section 2, RFC 8176 values). */
  readonly amr?: ReadonlyArray<string> | undefined
  readonly nonce?: string | undefined
  /** The access token issued alongside; adds `at_hash`. */
  readonly accessToken?: string | undefined
  readonly sid?: string | undefined
  /** Extra claims (for example `email`, `name`); they never override the protocol claims. */
  readonly claims?: Readonly<Record<string, unknown>> | undefined
}

export class Tokens extends Context.Service<Tokens>()("identity/Tokens", {
  make: Effect.gen(function*() {
    const issuer = yield* issuerConfig
    const keys = yield* SigningKeys
    const nowSeconds = Effect.map(Clock.currentTimeMillis, (ms) => Math.floor(ms / 1000))
    const currentDate = Effect.map(Clock.currentTimeMillis, (ms) => new Date(ms))

    const sign = (payload: Jose.JWTPayload, typ: string) =>
      Effect.gen(function*() {
        const key = yield* keys.signingKey
        return yield* Effect.promise(() =>
          new Jose.SignJWT(payload).setProtectedHeader({ alg: key.alg, kid: key.kid, typ }).sign(key.privateKey)
        )
      })

    const issueAccessToken = Effect.fn("Tokens.issueAccessToken")(function*(input: AccessTokenInput) {
      const iat = yield* nowSeconds
      const jti = Crypto.randomUUID()
      const exp = iat + ACCESS_TOKEN_TTL_SECONDS
      const token = yield* sign({
        iss: issuer,
        sub: input.sub,
        aud: typeof input.audience === "string" ? input.audience : [...input.audience],
        client_id: input.clientId,
        scope: input.scopes.join(" "),
        jti,
        iat,
        exp,
        uid: input.uid,
        roles: [...input.roles],
        site_roles: [...input.siteRoles],
        ...(input.site !== undefined ? { site: input.site } : {}),
        ...(input.familyId !== undefined ? { fid: input.familyId } : {}),
        ...(input.sessionId !== undefined ? { sid: input.sessionId } : {}),
        ...(input.authTime !== undefined ? { auth_time: input.authTime } : {}),
        ...(input.contentLimit !== undefined ? { content_limit: input.contentLimit } : {})
      }, ACCESS_TOKEN_TYP)
      return { token, jti, expiresIn: ACCESS_TOKEN_TTL_SECONDS, expiresAt: exp } satisfies IssuedAccessToken
    })

    /** OIDC Core 1.0 sections 2 and 3.1.3.6: `aud` and `azp` are the client id. */
    const issueIdToken = Effect.fn("Tokens.issueIdToken")(function*(input: IdTokenInput) {
      const iat = yield* nowSeconds
      return yield* sign({
        ...input.claims,
        iss: issuer,
        sub: input.sub,
        aud: input.clientId,
        azp: input.clientId,
        iat,
        exp: iat + ID_TOKEN_TTL_SECONDS,
        auth_time: input.authTime,
        ...(input.amr !== undefined ? { amr: [...input.amr] } : {}),
        ...(input.nonce !== undefined ? { nonce: input.nonce } : {}),
        ...(input.accessToken !== undefined ? { at_hash: atHash(input.accessToken) } : {}),
        ...(input.sid !== undefined ? { sid: input.sid } : {})
      }, "JWT")
    })

    /**
     * Verifies a presented access token against this provider's own key ring (see
     * `verifyAccessTokenWith`). `audience`, when given, must be among the token's `aud`.
     */
    const verifyAccessToken = Effect.fn("Tokens.verifyAccessToken")(
      function*(token: string, options?: { readonly audience?: string }) {
        return yield* verifyAccessTokenWith(token, {
          issuer,
          keyFor: keys.verificationKey,
          now: yield* currentDate,
          ...(options?.audience !== undefined ? { audience: options.audience } : {})
        })
      }
    )

    /**
     * Verifies an `id_token_hint` (OIDC RP-Initiated Logout 1.0 section 2): our signature and issuer,
     * an id_token `typ`; expiry is deliberately not checked, since the hint is usually old.
     */
    const verifyIdTokenHint = Effect.fn("Tokens.verifyIdTokenHint")(function*(token: string) {
      const fail = (message: string) => new IdTokenHintRejected({ message })
      const header = yield* Effect.try({
        try: () => Jose.decodeProtectedHeader(token),
        catch: () => fail("id_token_hint is not a well-formed JWS")
      })
      if (header.alg !== SIGNING_ALG || typeof header.kid !== "string") return yield* fail("unsupported id_token_hint")
      if (header.typ !== undefined && normalizeTyp(header.typ) !== "jwt") return yield* fail("not an id_token")
      const key = yield* keys.verificationKey(header.kid)
      if (Option.isNone(key)) return yield* fail("id_token_hint was signed by an unknown key")
      const { payload } = yield* Effect.tryPromise({
        try: () => Jose.compactVerify(token, key.value, { algorithms: [SIGNING_ALG] }),
        catch: () => fail("id_token_hint signature verification failed")
      })
      const claims = yield* Effect.try({
        try: () => JSON.parse(new TextDecoder().decode(payload)) as unknown,
        catch: () => fail("id_token_hint payload is not JSON")
      }).pipe(
        Effect.flatMap((json) =>
          Schema.decodeUnknownEffect(IdTokenHint)(json).pipe(Effect.mapError(() => fail("bad claims")))
        )
      )
      if (claims.iss !== issuer) return yield* fail("id_token_hint was issued by another issuer")
      return claims
    })

    return { issuer, issueAccessToken, issueIdToken, verifyAccessToken, verifyIdTokenHint } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([SigningKeys.layer]))
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
}
