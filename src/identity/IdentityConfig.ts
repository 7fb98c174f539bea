/**
 * Settings of the identity provider, read once (every key is in `.env.example` under `# identity`).
 * The issuer is the root of every URL the provider hands out (DECISIONS 1); cookies are `Secure`
 * exactly when it is https (DECISIONS 12).
 */
import { Config, Effect } from "effect"
import type { BucketPolicy } from "./ratelimit/RateLimiter.js"
import { issuerConfig } from "./tokens/Tokens.js"

const perMinute = (name: string, fallback: number) =>
  Config.number(name).pipe(Config.withDefault(fallback), Config.map((n) => n / 60))

export class IdentityConfig extends Effect.Service<IdentityConfig>()("identity/IdentityConfig", {
  effect: Effect.gen(function*() {
    const issuer = yield* issuerConfig
    const url = new URL(issuer)
    const tokenEndpoint: BucketPolicy = {
      capacity: yield* Config.integer("IDENTITY_TOKEN_RATE_BURST").pipe(Config.withDefault(300)),
      refillPerSecond: yield* Config.number("IDENTITY_TOKEN_RATE_PER_SECOND").pipe(Config.withDefault(50))
    }
    // Failed client authentications at the token endpoint per (client_id, address): a guesser is
    // refused after this many wrong secrets, the client's own servers elsewhere are not.
    const tokenAuthFailures: BucketPolicy = {
      capacity: yield* Config.integer("IDENTITY_TOKEN_AUTH_FAILURE_BURST").pipe(Config.withDefault(10)),
      refillPerSecond: yield* perMinute("IDENTITY_TOKEN_AUTH_FAILURE_PER_MINUTE", 10)
    }
    const loginPerAccount: BucketPolicy = {
      capacity: yield* Config.integer("IDENTITY_LOGIN_ACCOUNT_BURST").pipe(Config.withDefault(10)),
      refillPerSecond: yield* perMinute("IDENTITY_LOGIN_ACCOUNT_PER_MINUTE", 4)
    }
    const loginPerIp: BucketPolicy = {
      capacity: yield* Config.integer("IDENTITY_LOGIN_IP_BURST").pipe(Config.withDefault(100)),
      refillPerSecond: yield* perMinute("IDENTITY_LOGIN_IP_PER_MINUTE", 60)
    }
    const sessionTtlSeconds = yield* Config.integer("IDENTITY_SESSION_TTL_SECONDS").pipe(
      Config.withDefault(90 * 24 * 3600)
    )
    return {
      issuer,
      /** `https://host:port`, for same-origin checks of `return_to`. */
      origin: url.origin,
      /** The issuer's path (`/api/v1`): the cookie path and the prefix of every page. */
      basePath: url.pathname.replace(/\/+$/, ""),
      secureCookies: url.protocol === "https:",
      rateLimits: { tokenEndpoint, tokenAuthFailures, loginPerAccount, loginPerIp },
      sessionTtlSeconds
    } as const
  })
}) {}
