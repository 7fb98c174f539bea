/**
 * The identity provider's security settings and their defaults (src/identity/shared/IdentityConfig.ts):
 * sign-in throttling, per-address limits, the refresh idle timeout, trusted proxies, cookie names.
 */
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { IdentityConfig } from "../../src/identity/shared/IdentityConfig.js"

const configWith = (settings: Record<string, string>) =>
  IdentityConfig.pipe(
    Effect.provide(IdentityConfig.layer.pipe(
      Layer.provide(ConfigProvider.layer(ConfigProvider.fromEnv({ env: settings })))
    ))
  )

describe("IdentityConfig", () => {
  it.effect("defaults a deployment can keep: sign-in, per-address limits, refresh idle timeout", () =>
    Effect.gen(function*() {
      const config = yield* configWith({})
      expect(config.rateLimits.loginPerIp).toEqual({ capacity: 100, refillPerSecond: 1 })
      expect(config.rateLimits.loginFailures).toEqual({ capacity: 5, refillPerSecond: 0.2 / 60 })
      // One address alone never passes the account's allowance: it exceeds the pair's burst and
      // failures are forgotten as fast as the pair's bucket refills.
      expect(config.rateLimits.loginAccount).toEqual({
        free: 10,
        decayPerSecond: config.rateLimits.loginFailures.refillPerSecond,
        maxDelaySeconds: 300
      })
      expect(config.rateLimits.authorize).toEqual({ capacity: 300, refillPerSecond: 30 })
      expect(config.rateLimits.userinfo).toEqual({ capacity: 600, refillPerSecond: 100 })
      expect(config.rateLimits.revoke).toEqual({ capacity: 100, refillPerSecond: 10 })
      expect(config.refreshIdleTimeoutSeconds).toBe(30 * 24 * 3600)
      expect(config.trustedProxies.entries).toEqual([])
    }))

  it.effect("over http: plain cookie names under the issuer's path, no HSTS", () =>
    Effect.gen(function*() {
      const config = yield* configWith({ IDENTITY_ISSUER: "http://127.0.0.1:8081/api/v1" })
      expect(config.cookies).toEqual({ session: "shiori_session", csrf: "shiori_csrf", path: "/api/v1" })
      expect(config.secureCookies).toBe(false)
      expect(config.hsts).toBe(false)
    }))

  it.effect("RFC 6265bis section 4.1.3.2: over https the cookies are __Host- with Path=/, and HSTS is on", () =>
    Effect.gen(function*() {
      const config = yield* configWith({ IDENTITY_ISSUER: "https://id.example/api/v1" })
      expect(config.cookies).toEqual({ session: "__Host-shiori_session", csrf: "__Host-shiori_csrf", path: "/" })
      expect(config.secureCookies).toBe(true)
      expect(config.hsts).toBe(true)
    }))

  it.effect("TRUSTED_PROXIES takes addresses and CIDR blocks and refuses anything else", () =>
    Effect.gen(function*() {
      const config = yield* configWith({ TRUSTED_PROXIES: " 10.0.0.1, 10.1.0.0/16 ,fd00::/8,::ffff:192.0.2.1 " })
      expect(config.trustedProxies.entries).toEqual(["10.0.0.1", "10.1.0.0/16", "fd00::/8", "192.0.2.1"])
      for (const bad of ["10.0.0.1/33", "proxy.example", "10.0.0.0/8/1", "fd00::/129", "10.0.0.1/x"]) {
        const exit = yield* Effect.exit(configWith({ TRUSTED_PROXIES: bad }))
        expect(Exit.isFailure(exit), bad).toBe(true)
      }
    }))

  it.effect("refuses an account allowance one address could reach alone", () =>
    Effect.gen(function*() {
      const exit = yield* Effect.exit(configWith({
        IDENTITY_LOGIN_FAILURE_BURST: "10",
        IDENTITY_LOGIN_ACCOUNT_FREE_FAILURES: "10"
      }))
      expect(Exit.isFailure(exit)).toBe(true)
    }))
})
