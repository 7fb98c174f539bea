/**
 * Token buckets for avatar uploads (`POST /auth/me/avatar` and the account page's form), per user
 * and per client address: decoding an image costs a pool thread and a core for up to a second
 * (src/identity/account/Avatars.ts), a sign-in's password hash needs the same pool, and an account
 * changes its picture a few times, not sixteen at once. The address is `clientAddress` of the
 * request (an IPv6 address counts by its /64, src/platform/ClientAddress.ts), with a larger
 * burst: the people behind one NAT share it. The buckets are the RateLimiter's, shared by every
 * process, with an in-process bucket of the same policy in front (`makeLeasedBuckets`), so a client
 * that keeps sending once refused costs no database round trip. A refused upload takes nothing and
 * is 429 `RATE_LIMITED` with `Retry-After`.
 */
import { Config, Context, Effect, Layer, Schema } from "effect"
import { addressBucket } from "../../platform/ClientAddress.js"
import { makeLeasedBuckets, RateLimiter } from "../../platform/RateLimiter.js"
import { refused, retryAfter } from "../shared/Refused.js"

/** `<prefix>_BURST` (at least 1) and `<prefix>_PER_MINUTE` (above 0). */
const bucket = (prefix: string, burst: number, perMinute: number) =>
  Config.all({
    capacity: Config.schema(
      Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { message: `${prefix}_BURST must be at least 1` })),
      `${prefix}_BURST`
    ).pipe(Config.withDefault(burst)),
    refillPerSecond: Config.schema(
      Schema.Number.check(Schema.isGreaterThan(0, { message: `${prefix}_PER_MINUTE must be greater than 0` })),
      `${prefix}_PER_MINUTE`
    ).pipe(Config.withDefault(perMinute), Config.map((n) => n / 60))
  })

export class UploadLimits extends Context.Service<UploadLimits>()("identity/UploadLimits", {
  make: Effect.gen(function*() {
    const limiter = yield* RateLimiter
    const perUser = yield* makeLeasedBuckets(limiter, yield* bucket("IDENTITY_AVATAR_USER", 5, 2))
    const perAddress = yield* makeLeasedBuckets(limiter, yield* bucket("IDENTITY_AVATAR_IP", 20, 10))

    /** Admits one upload of `userId` from `address`, or refuses it (429 42901 with `Retry-After`). */
    const admit = Effect.fn("UploadLimits.admit")(function*(userId: number, address: string) {
      // The address first: a host cycling through accounts is stopped before it spends theirs.
      for (
        const [take, key] of [
          [perAddress, `avatar:ip:${addressBucket(address)}`],
          [perUser, `avatar:user:${userId}`]
        ] as const
      ) {
        const wait = yield* take(key)
        if (wait > 0) return yield* refused("RATE_LIMITED", retryAfter(wait))
      }
    })

    return { admit } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
