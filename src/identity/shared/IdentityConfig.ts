/**
 * Settings of the identity provider, read once (every key is in `.env.example` under `# identity`).
 * The issuer is the root of every URL the provider hands out; cookies are `Secure`, with the
 * `__Host-` prefix, and answers carry HSTS exactly when it is https.
 */
import { Config, Context, Effect, Layer, Schema, SchemaIssue } from "effect"
import { trustedProxiesConfig } from "../../platform/ClientAddress.js"
import type { BackoffPolicy, BucketPolicy } from "../../platform/RateLimiter.js"

export const DEFAULT_ISSUER = "http://127.0.0.1:8081/api/v1"

/**
 * `IDENTITY_ISSUER`, or the provider on this machine at `IDENTITY_PORT` (8081) when unset, so moving
 * the port alone keeps the issuer, discovery and the catalog's JWKS URL pointing at the provider.
 */
export const issuerConfig: Config.Config<string> = Config.String("IDENTITY_ISSUER").pipe(
  Config.orElse(() =>
    Config.Port("IDENTITY_PORT").pipe(
      Config.withDefault(8081),
      Config.map((port) => `http://127.0.0.1:${port}/api/v1`)
    )
  )
)

/** The catalog's resource identifier when `CATALOG_AUDIENCE` is unset. */
export const DEFAULT_CATALOG_AUDIENCE = "urn:shiori:catalog"

/**
 * `CATALOG_AUDIENCE`: the `aud` of the access tokens the provider issues to clients and the value the
 * catalog requires in a token's `aud` (RFC 9068 sections 3 and 4). Both sides read it; the default is a
 * fixed identifier rather than a URL derived from `HOST` and `CATALOG_PORT`, so a provider and a
 * catalog deployed apart agree without configuration.
 */
export const catalogAudienceConfig: Config.Config<string> = Config.schema(
  Schema.String.check(
    Schema.makeFilter((value) => value.trim() !== "", { message: "CATALOG_AUDIENCE must not be empty" })
  ),
  "CATALOG_AUDIENCE"
).pipe(Config.withDefault(DEFAULT_CATALOG_AUDIENCE))

/** The configuration error for the value of `name`: `message` says what is wrong with it. */
const invalid = (name: string, message: string) =>
  new Config.ConfigError(
    new Schema.SchemaError(new SchemaIssue.Pointer([name], new SchemaIssue.InvalidValue({ message })))
  )

const perMinute = (name: string, fallback: number) =>
  Config.Number(name).pipe(Config.withDefault(fallback), Config.map((n) => n / 60))

const positive = (name: string, fallback: number) =>
  Config.schema(Schema.Number.check(Schema.isGreaterThan(0, { message: `${name} must be greater than 0` })), name)
    .pipe(Config.withDefault(fallback))

/** A token bucket per client address: `<PREFIX>_RATE_BURST` and `<PREFIX>_RATE_PER_SECOND`. */
const perAddress = (prefix: string, burst: number, perSecond: number) =>
  Config.all({
    capacity: Config.schema(
      Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { message: `${prefix}_RATE_BURST must be at least 1` })),
      `${prefix}_RATE_BURST`
    ).pipe(Config.withDefault(burst)),
    refillPerSecond: positive(`${prefix}_RATE_PER_SECOND`, perSecond)
  })

export class IdentityConfig extends Context.Service<IdentityConfig>()("identity/IdentityConfig", {
  make: Effect.gen(function*() {
    const issuer = yield* issuerConfig
    const url = new URL(issuer)
    const tokenEndpoint: BucketPolicy = {
      capacity: yield* Config.Int("IDENTITY_TOKEN_RATE_BURST").pipe(Config.withDefault(300)),
      refillPerSecond: yield* Config.Number("IDENTITY_TOKEN_RATE_PER_SECOND").pipe(Config.withDefault(50))
    }
    // Failed client authentications at the token endpoint per (client_id, address): a guesser is
    // refused after this many wrong secrets, the client's own servers elsewhere are not.
    const tokenAuthFailures: BucketPolicy = {
      capacity: yield* Config.Int("IDENTITY_TOKEN_AUTH_FAILURE_BURST").pipe(Config.withDefault(10)),
      refillPerSecond: yield* perMinute("IDENTITY_TOKEN_AUTH_FAILURE_PER_MINUTE", 10)
    }
    // Sign-in (src/identity/auth/Login.ts). Attempts per address, whatever the account.
    const loginPerIp: BucketPolicy = {
      capacity: yield* Config.Int("IDENTITY_LOGIN_IP_BURST").pipe(Config.withDefault(100)),
      refillPerSecond: yield* perMinute("IDENTITY_LOGIN_IP_PER_MINUTE", 60)
    }
    // Failed sign-ins per (account, address): a guesser's address is refused for that account, the
    // account's owner elsewhere is not.
    const loginFailures: BucketPolicy = {
      capacity: yield* Config.Int("IDENTITY_LOGIN_FAILURE_BURST").pipe(Config.withDefault(5)),
      refillPerSecond: (yield* positive("IDENTITY_LOGIN_FAILURE_PER_MINUTE", 0.2)) / 60
    }
    // Failures per account from every address: past `free` of them each attempt waits a delay that
    // doubles up to the maximum (no lock). Failures are forgotten as fast as the per-(account,
    // address) bucket refills and `free` exceeds that bucket's burst, so one address alone never
    // delays the account; only guessing spread over several addresses does.
    const loginAccount: BackoffPolicy = {
      free: yield* Config.Int("IDENTITY_LOGIN_ACCOUNT_FREE_FAILURES").pipe(Config.withDefault(10)),
      decayPerSecond: loginFailures.refillPerSecond,
      maxDelaySeconds: yield* positive("IDENTITY_LOGIN_ACCOUNT_MAX_DELAY_SECONDS", 300)
    }
    if (loginAccount.free <= loginFailures.capacity) {
      return yield* Effect.fail(invalid(
        "IDENTITY_LOGIN_ACCOUNT_FREE_FAILURES",
        "IDENTITY_LOGIN_ACCOUNT_FREE_FAILURES must exceed IDENTITY_LOGIN_FAILURE_BURST"
      ))
    }
    // Per client address (src/identity/ratelimit/AddressLimits.ts). A relying party's server calls
    // authorize (with a sign-in token) and userinfo for all of its users from one address.
    const authorize = yield* perAddress("IDENTITY_AUTHORIZE", 300, 30)
    const userinfo = yield* perAddress("IDENTITY_USERINFO", 600, 100)
    const revoke = yield* perAddress("IDENTITY_REVOKE", 100, 10)
    // A refresh token unused this long is dead even within its family's lifetime (RFC 9700 section
    // 4.14.2: refresh tokens should expire once the client has been inactive for some time); 0: off.
    const refreshIdleTimeoutSeconds = yield* Config.schema(
      Schema.Int.check(Schema.isGreaterThanOrEqualTo(0, {
        message: "IDENTITY_REFRESH_IDLE_TIMEOUT_SECONDS must not be negative"
      })),
      "IDENTITY_REFRESH_IDLE_TIMEOUT_SECONDS"
    ).pipe(Config.withDefault(30 * 24 * 3600))
    const trustedProxies = yield* trustedProxiesConfig
    const https = url.protocol === "https:"
    const basePath = url.pathname.replace(/\/+$/, "")
    const sessionTtlSeconds = yield* Config.Int("IDENTITY_SESSION_TTL_SECONDS").pipe(
      Config.withDefault(90 * 24 * 3600)
    )
    return {
      issuer,
      /** `https://host:port`, for same-origin checks of `return_to`. */
      origin: url.origin,
      /** The issuer's path (`/api/v1`): the prefix of every page. */
      basePath,
      secureCookies: https,
      /**
       * Over https the cookies carry the `__Host-` prefix (RFC 6265bis section 4.1.3.2): no sibling
       * or parent domain can set or shadow them, so nobody there can plant a CSRF cookie of its own or
       * fix a session. The prefix requires `Secure`, no `Domain` and `Path=/`, so they then reach
       * every path of the issuer's host, which a path could not have kept from other pages of that
       * origin anyway (RFC 6265 section 8.5): the provider wants a host of its own. Over http
       * (development) the prefix is impossible and the cookies stay under the issuer's path.
       */
      cookies: {
        session: https ? "__Host-shiori_session" : "shiori_session",
        csrf: https ? "__Host-shiori_csrf" : "shiori_csrf",
        path: https || basePath === "" ? "/" : basePath
      },
      /** `Strict-Transport-Security` on every answer (RFC 6797), when the issuer is https. */
      hsts: https,
      trustedProxies,
      rateLimits: {
        tokenEndpoint,
        tokenAuthFailures,
        loginPerIp,
        loginFailures,
        loginAccount,
        authorize,
        userinfo,
        revoke
      },
      refreshIdleTimeoutSeconds,
      sessionTtlSeconds
    } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
