/**
 * The catalog's limits (docs/writing.md, "Limits"): every credential's request budget, a token
 * bucket shared by every process, every site's daily write quotas per kind, and per client address
 * the lookups of API keys that may not exist (auth/Authorization.ts). All are configuration; the
 * defaults are ones a public deployment can keep.
 */
import { Config, Context, Effect, Layer, Schema } from "effect"
import type { QuotaKind } from "../../../schema/Api/Writes.js"
import { type TrustedProxies, trustedProxiesConfig } from "../../platform/ClientAddress.js"
import type { BucketPolicy } from "../../platform/RateLimiter.js"

export interface CatalogLimitsShape {
  /** Per credential: `CATALOG_RATE_BURST` requests back to back, `CATALOG_RATE_PER_SECOND` sustained. */
  readonly requests: BucketPolicy
  /** The most tokens a process leases from a credential's shared bucket at once. */
  readonly leaseMax: number
  /**
   * Writes per site and UTC day, by kind (`CATALOG_QUOTA_CLAIMS`, `CATALOG_QUOTA_DECISIONS`,
   * `CATALOG_QUOTA_PROPOSALS`, `CATALOG_QUOTA_VOTES`, `CATALOG_QUOTA_NEWS`, `CATALOG_QUOTA_PLAYTIMES`);
   * for `media`, bytes of uploaded image bodies (`CATALOG_QUOTA_MEDIA_BYTES`, schema/Api/Writes.ts
   * `QuotaUnits`).
   */
  readonly quotas: Readonly<Record<QuotaKind, number>>
  /**
   * Per client address and process: API keys this process does not know as live, looked up
   * (`CATALOG_FAILED_AUTH_BURST` back to back, `CATALOG_FAILED_AUTH_PER_MINUTE` sustained).
   */
  readonly failedCredentials: BucketPolicy
  /** Whose `X-Forwarded-For` names the client (`TRUSTED_PROXIES`, src/platform/ClientAddress.ts). */
  readonly trustedProxies: TrustedProxies
}

export class CatalogLimits extends Context.Service<CatalogLimits>()("catalog/CatalogLimits", {
  make: Effect.gen(function*() {
    const positive = (name: string, fallback: number) =>
      Config.schema(
        Schema.Number.check(Schema.isGreaterThan(0, { message: `${name} must be a positive number` })),
        name
      )
        .pipe(Config.withDefault(fallback))
    const requests: BucketPolicy = {
      capacity: yield* positive("CATALOG_RATE_BURST", 600),
      refillPerSecond: yield* positive("CATALOG_RATE_PER_SECOND", 20)
    }
    return {
      requests,
      leaseMax: yield* positive("CATALOG_RATE_LEASE_MAX", 1000),
      quotas: {
        claims: yield* positive("CATALOG_QUOTA_CLAIMS", 1000),
        decisions: yield* positive("CATALOG_QUOTA_DECISIONS", 10_000),
        proposals: yield* positive("CATALOG_QUOTA_PROPOSALS", 5000),
        votes: yield* positive("CATALOG_QUOTA_VOTES", 100_000),
        news: yield* positive("CATALOG_QUOTA_NEWS", 1000),
        playtimes: yield* positive("CATALOG_QUOTA_PLAYTIMES", 100_000),
        media: yield* Config.schema(
          Schema.Int.check(
            Schema.isBetween({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }, {
              message: "CATALOG_QUOTA_MEDIA_BYTES must be a whole number of bytes, at least 1"
            })
          ),
          "CATALOG_QUOTA_MEDIA_BYTES"
        ).pipe(Config.withDefault(1024 ** 3))
      },
      failedCredentials: {
        capacity: yield* Config.schema(
          Schema.Int.check(
            Schema.isGreaterThanOrEqualTo(1, { message: "CATALOG_FAILED_AUTH_BURST must be at least 1" })
          ),
          "CATALOG_FAILED_AUTH_BURST"
        ).pipe(Config.withDefault(30)),
        refillPerSecond: (yield* positive("CATALOG_FAILED_AUTH_PER_MINUTE", 30)) / 60
      },
      trustedProxies: yield* trustedProxiesConfig
    } satisfies CatalogLimitsShape
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
