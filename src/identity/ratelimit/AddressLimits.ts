/**
 * Token buckets per client address for the authorization, userinfo and revocation endpoints, so one
 * host cannot flood them. The address is `clientAddress` of the request (an IPv6 address counts by
 * its /64, src/platform/ClientAddress.ts). The buckets are shared by every process through the
 * RateLimiter, leased a few tokens at a time (`makeLeasedBuckets`) because userinfo is on a relying
 * party's hot path. The defaults are generous: a relying party's server calls authorize (with a
 * sign-in token) and userinfo for all of its users from one address.
 */
import { Context, Effect, Layer } from "effect"
import { addressBucket } from "../../platform/ClientAddress.js"
import { makeLeasedBuckets, RateLimiter } from "../../platform/RateLimiter.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"

export type AddressLimitedEndpoint = "authorize" | "userinfo" | "revoke"

export class AddressLimits extends Context.Service<AddressLimits>()("identity/AddressLimits", {
  make: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const limiter = yield* RateLimiter
    const buckets = {
      authorize: yield* makeLeasedBuckets(limiter, config.rateLimits.authorize),
      userinfo: yield* makeLeasedBuckets(limiter, config.rateLimits.userinfo),
      revoke: yield* makeLeasedBuckets(limiter, config.rateLimits.revoke)
    }

    /** 0 when a request of `endpoint` from `address` may proceed, else the `Retry-After` seconds. */
    const check = Effect.fn("AddressLimits.check")(function*(endpoint: AddressLimitedEndpoint, address: string) {
      return yield* buckets[endpoint](`${endpoint}:ip:${addressBucket(address)}`)
    })

    return { check } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
