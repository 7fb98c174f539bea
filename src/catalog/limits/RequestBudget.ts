/**
 * Every credential's request budget (docs/writing.md, "Limits"): one token of a bucket shared by
 * every process per request, on every catalog route, a replayed stored answer's too (the credential
 * middleware spends it). Processes lease tokens in batches (platform/RateLimiter.ts,
 * `makeLeasedBudget`), so a busy credential costs one database round trip per lease. With the
 * database unreachable the budget is spent from a local allowance of the same policy in each process
 * (`makeLeasedBudget`, "Local allowances"), so cached reads still answer; the shape of the budget is
 * recorded at start, and a process configured otherwise than the last one says so (RateLimiter.ts,
 * "Shapes across processes").
 *
 * Answers carry the IETF RateLimit header fields (draft-ietf-httpapi-ratelimit-headers, written by
 * `rateLimitPolicyField` and `rateLimitField`): the policy `"requests";q=<burst>;w=<seconds to refill
 * it>` and the state `"requests";r=<left>;t=<seconds until full>`.
 */
import { Context, Effect, Layer } from "effect"
import {
  type Admission,
  makeLeasedBudget,
  RateLimiter,
  RateLimiterLive,
  rateLimitFieldOf,
  rateLimitPolicyField
} from "../../platform/RateLimiter.js"
import { CatalogLimits } from "./Limits.js"

export class RequestBudget extends Context.Service<RequestBudget>()("catalog/RequestBudget", {
  make: Effect.gen(function*() {
    const limits = yield* CatalogLimits
    const policy = limits.requests
    const limiter = yield* RateLimiter
    // Beside the start, not before it: a database slow to answer delays only the warning.
    yield* Effect.forkScoped(limiter.recordPolicy("catalog.requests", {
      capacity: "CATALOG_RATE_BURST",
      refillPerSecond: "CATALOG_RATE_PER_SECOND"
    }, policy))
    const budget = yield* makeLeasedBudget(limiter, policy, limits.leaseMax, { localAllowance: { limiter: "catalog" } })
    const stateField = rateLimitFieldOf("requests")
    const policyHeader = rateLimitPolicyField(
      "requests",
      policy.capacity,
      Math.ceil(policy.capacity / policy.refillPerSecond)
    )

    /** `RateLimit-Policy` and `RateLimit` for an admission. */
    const headers = (admission: Admission): Record<string, string> => {
      const left = admission.retryAfterSeconds > 0 ? 0 : Math.min(policy.capacity, admission.remaining)
      const untilFull = admission.retryAfterSeconds > 0
        ? admission.retryAfterSeconds
        : Math.ceil((policy.capacity - left) / policy.refillPerSecond)
      return { "ratelimit-policy": policyHeader, ratelimit: stateField(left, untilFull) }
    }

    return {
      take: (owner: string) => budget.take(`catalog:${owner}`),
      headers
    } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([CatalogLimits.layer, RateLimiterLive]))
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
}
