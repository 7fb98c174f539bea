/**
 * Access-token verification for resource servers other than the provider itself (the catalog,
 * through `AccessTokenVerifier` of src/platform/IdentityPort.ts): the
 * token's signature is checked against the provider's JWKS at `{IDENTITY_ISSUER}/oauth/jwks`
 * (override: `IDENTITY_JWKS_URL`), fetched over HTTP, cached, and refetched when a token names an
 * unknown `kid` (at most once per cooldown, so random `kid`s cannot make the catalog hammer the
 * provider). The same code path runs whether the catalog shares a process with the provider or runs
 * alone (`SHIORI_SERVE=catalog`).
 *
 * After the signature: `typ` must be `at+jwt` (no id_tokens), the issuer must be ours, RS256 only
 * (no `alg: none`, no HS256 keyed with the public key), `aud` must name the catalog
 * (`CATALOG_AUDIENCE`, RFC 9068 section 4: a token meant for another resource server, or the
 * provider's own sign-in token, is refused), and the token's family or session must be alive
 * (`Liveness.ts`, cached briefly), so a revoked family stops working within seconds.
 */
import { Clock, Config, Duration, Effect, Layer, Option } from "effect"
import * as Jose from "jose"
import { AccessTokenRejected, AccessTokenVerifier } from "../../platform/IdentityPort.js"
import { SIGNING_ALG } from "../keys/SigningKeys.js"
import { catalogAudienceConfig, issuerConfig } from "../shared/IdentityConfig.js"
import { cachedLiveness, revocationCacheMillis, TokenLiveness } from "./Liveness.js"
import { verifyAccessTokenWith } from "./Tokens.js"

/** Refetch at least this often anyway, so retired keys leave the cache. */
const JWKS_MAX_AGE = Duration.minutes(5)

/** The verifier over a remote JWKS; the liveness check comes from `TokenLiveness`. */
export const AccessTokenVerifierJwks: Layer.Layer<AccessTokenVerifier, never, TokenLiveness> = Layer.effect(
  AccessTokenVerifier,
  Effect.gen(function*() {
    const issuer = yield* issuerConfig.pipe(Effect.orDie)
    const audience = yield* catalogAudienceConfig.pipe(Effect.orDie)
    const jwksUrl = yield* Config.String("IDENTITY_JWKS_URL").pipe(
      Config.withDefault(`${issuer}/oauth/jwks`),
      Effect.orDie
    )
    // Refetch at most this often when a token names an unknown `kid`.
    const cooldownSeconds = yield* Config.Number("IDENTITY_JWKS_COOLDOWN_SECONDS").pipe(
      Config.withDefault(10),
      Effect.orDie
    )
    const cacheMillis = yield* Effect.orDie(revocationCacheMillis)
    const liveness = cachedLiveness(yield* TokenLiveness, cacheMillis)
    const jwks = Jose.createRemoteJWKSet(new URL(jwksUrl), {
      cooldownDuration: cooldownSeconds * 1000,
      cacheMaxAge: Duration.toMillis(JWKS_MAX_AGE),
      timeoutDuration: 5_000
    })

    // An unknown kid is "no key" (401); the provider being unreachable is a server-side failure.
    const keyFor = (kid: string) =>
      Effect.tryPromise({
        try: () => jwks({ alg: SIGNING_ALG, kid }, { payload: "", signature: "" }),
        catch: (error) => error
      }).pipe(
        Effect.map(Option.some),
        Effect.catch((error) =>
          error instanceof Jose.errors.JWKSNoMatchingKey || error instanceof Jose.errors.JWKSMultipleMatchingKeys
            ? Effect.succeed(Option.none())
            : Effect.die(error)
        ),
        Effect.withSpan("AccessTokenVerifier.jwks")
      )

    const verify = Effect.fn("AccessTokenVerifier.verify")(function*(token: string) {
      const now = new Date(yield* Clock.currentTimeMillis)
      const claims = yield* verifyAccessTokenWith(token, { issuer, keyFor, now, audience })
      if (!(yield* liveness.isLive(claims))) {
        return yield* new AccessTokenRejected({ reason: "revoked", message: "the token was revoked" })
      }
      return claims
    })

    return { issuer, audience, verify }
  })
)
