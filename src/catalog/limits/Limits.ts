/**
 * The catalog's limits (docs/writing.md, "Limits"): every credential's request budget, a token
 * bucket shared by every process, and every site's daily write quotas per kind. All are
 * configuration; the defaults are ones a public deployment can keep.
 */
import { Config, Context, Effect, Layer, Schema } from "effect"
import type { QuotaKind } from "../../../schema/Api/Writes.js"
import type { BucketPolicy } from "../../platform/RateLimiter.js"

export interface CatalogLimitsShape {
  /** Per credential: `CATALOG_RATE_BURST` requests back to back, `CATALOG_RATE_PER_SECOND` sustained. */
  readonly requests: BucketPolicy
  /** The most tokens a process leases from a credential's shared bucket at once. */
  readonly leaseMax: number
  /** Writes per site and UTC day, by kind (`CATALOG_QUOTA_CLAIMS`, `CATALOG_QUOTA_DECISIONS`). */
  readonly quotas: Readonly<Record<QuotaKind, number>>
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
        decisions: yield* positive("CATALOG_QUOTA_DECISIONS", 10_000)
      }
    } satisfies CatalogLimitsShape
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
