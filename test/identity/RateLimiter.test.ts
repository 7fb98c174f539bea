import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import type { Attempt } from "../../src/platform/RateLimiter.js"
import { RateLimiter, RateLimiterLive, RateLimiterMemory } from "../../src/platform/RateLimiter.js"
import { TestSqlLive } from "../support/TestDatabase.js"

const policy = { capacity: 3, refillPerSecond: 0.5 }

/** A sign-in attempt: 2 per (account, address), delays past 3 per account, forgotten slowly. */
const attemptFrom = (address: string, account = "acct"): Attempt => ({
  bucket: `pair:${address}|${account}`,
  bucketPolicy: { capacity: 2, refillPerSecond: 0.001 },
  backoff: `delay:${account}`,
  backoffPolicy: { free: 3, decayPerSecond: 0.001, maxDelaySeconds: 4 }
})

/**
 * Both layers: a bucket refuses its own address only; past `free` counted attempts the delay
 * doubles (1, 2, 4 s) up to its cap, and an attempt arriving early is refused without being counted.
 */
const backoffRules = (wait: (seconds: number) => Effect.Effect<void>) =>
  Effect.gen(function*() {
    const limiter = yield* RateLimiter
    const admit = (address: string) => limiter.admit(attemptFrom(address))
    expect(yield* admit("a")).toEqual({ allowed: true, retryAfterSeconds: 0 })
    expect(yield* admit("a")).toEqual({ allowed: true, retryAfterSeconds: 0 })
    // The pair's bucket is empty: refused, and the account's count does not grow.
    expect((yield* admit("a")).allowed).toBe(false)
    expect(yield* admit("b")).toEqual({ allowed: true, retryAfterSeconds: 0 })
    expect(yield* admit("b")).toEqual({ allowed: true, retryAfterSeconds: 0 })
    // Four counted: the next attempt, from anywhere, waits 1 s; being refused does not count.
    expect(yield* admit("c")).toEqual({ allowed: false, retryAfterSeconds: 1 })
    expect(yield* admit("d")).toEqual({ allowed: false, retryAfterSeconds: 1 })
    yield* wait(1)
    expect((yield* admit("c")).allowed).toBe(true)
    expect(yield* admit("d")).toEqual({ allowed: false, retryAfterSeconds: 2 })
    yield* wait(2)
    expect((yield* admit("d")).allowed).toBe(true)
    expect(yield* admit("e")).toEqual({ allowed: false, retryAfterSeconds: 4 })
    yield* wait(4)
    expect((yield* admit("e")).allowed).toBe(true)
    // Capped at maxDelaySeconds.
    expect(yield* admit("f")).toEqual({ allowed: false, retryAfterSeconds: 4 })
  })

/** `succeeded` refills the pair and takes the attempt's count back, so a success never adds a delay. */
const successRules = Effect.gen(function*() {
  const limiter = yield* RateLimiter
  const attempt = attemptFrom("owner", "busy")
  for (let i = 0; i < 10; i++) {
    expect((yield* limiter.admit(attempt)).allowed).toBe(true)
    yield* limiter.succeeded(attempt)
  }
  expect(yield* limiter.admit(attemptFrom("other", "busy"))).toEqual({ allowed: true, retryAfterSeconds: 0 })
})

/** A bucket of 10 leased 4 at a time: 4, 4, the 2 left, then none and a Retry-After. */
const grantsUpTo = (key: string) =>
  Effect.gen(function*() {
    const limiter = yield* RateLimiter
    const big = { capacity: 10, refillPerSecond: 0.01 }
    expect(yield* limiter.takeUpTo(key, big, 4)).toEqual({ granted: 4, retryAfterSeconds: 0, remaining: 6 })
    expect(yield* limiter.takeUpTo(key, big, 4)).toEqual({ granted: 4, retryAfterSeconds: 0, remaining: 2 })
    expect(yield* limiter.takeUpTo(key, big, 4)).toMatchObject({ granted: 2, remaining: 0 })
    const refused = yield* limiter.takeUpTo(key, big, 4)
    expect(refused.granted).toBe(0)
    expect(refused.retryAfterSeconds).toBeGreaterThan(0)
  })

describe("RateLimiter, in-memory layer (docs/api-contract.md, \"Rate limits and body limits\")", () => {
  it.effect("takeUpTo grants what the bucket holds, up to the number asked for", () =>
    grantsUpTo("lease").pipe(Effect.provide(RateLimiterMemory)))

  it.effect("allows a burst of `capacity`, then refuses with Retry-After", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimiter
      for (let i = 0; i < 3; i++) {
        expect(yield* limiter.take("token:client-a", policy)).toEqual({ allowed: true, retryAfterSeconds: 0 })
      }
      expect(yield* limiter.take("token:client-a", policy)).toEqual({ allowed: false, retryAfterSeconds: 2 })
    }).pipe(Effect.provide(RateLimiterMemory)))

  it.effect("refills at `refillPerSecond`; a refused call takes nothing", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimiter
      for (let i = 0; i < 3; i++) yield* limiter.take("k", policy)
      yield* TestClock.adjust("1 seconds")
      // Half a token: still refused, and only one more second is needed.
      expect(yield* limiter.take("k", policy)).toEqual({ allowed: false, retryAfterSeconds: 1 })
      yield* TestClock.adjust("1 seconds")
      expect((yield* limiter.take("k", policy)).allowed).toBe(true)
      expect((yield* limiter.take("k", policy)).allowed).toBe(false)
    }).pipe(Effect.provide(RateLimiterMemory)))

  it.effect("never holds more than `capacity` after a long idle period", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimiter
      yield* limiter.take("k", policy)
      yield* TestClock.adjust("1 hours")
      const results = []
      for (let i = 0; i < 4; i++) results.push((yield* limiter.take("k", policy)).allowed)
      expect(results).toEqual([true, true, true, false])
    }).pipe(Effect.provide(RateLimiterMemory)))

  it.effect("keeps clients apart: one client's flood never slows another (docs/api-contract.md, \"Rate limits and body limits\")", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimiter
      for (let i = 0; i < 50; i++) yield* limiter.take("token:noisy", policy)
      expect((yield* limiter.take("token:noisy", policy)).allowed).toBe(false)
      expect((yield* limiter.take("token:quiet", policy)).allowed).toBe(true)
    }).pipe(Effect.provide(RateLimiterMemory)))

  it.effect("stays exact under concurrent takes", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimiter
      const results = yield* Effect.all(
        Array.from({ length: 20 }, () => limiter.take("k", { capacity: 5, refillPerSecond: 1 })),
        { concurrency: "unbounded" }
      )
      expect(results.filter((result) => result.allowed)).toHaveLength(5)
    }).pipe(Effect.provide(RateLimiterMemory)))

  it.effect("admit: per-address buckets, then delays that double up to the cap (no lockout)", () =>
    backoffRules((seconds) => TestClock.adjust(`${seconds} seconds`)).pipe(Effect.provide(RateLimiterMemory)))

  it.effect("admit: counted attempts are forgotten at decayPerSecond", () =>
    Effect.gen(function*() {
      const limiter = yield* RateLimiter
      const attempt = (address: string): Attempt => ({
        ...attemptFrom(address),
        backoffPolicy: { free: 1, decayPerSecond: 0.5, maxDelaySeconds: 60 }
      })
      expect((yield* limiter.admit(attempt("a"))).allowed).toBe(true)
      expect((yield* limiter.admit(attempt("b"))).allowed).toBe(true)
      expect(yield* limiter.admit(attempt("c"))).toEqual({ allowed: false, retryAfterSeconds: 1 })
      // Two counted, forgotten at one per 2 s: after 4 s none is left and no delay follows.
      yield* TestClock.adjust("4 seconds")
      expect((yield* limiter.admit(attempt("c"))).allowed).toBe(true)
      expect((yield* limiter.admit(attempt("d"))).allowed).toBe(true)
    }).pipe(Effect.provide(RateLimiterMemory)))

  it.effect("succeeded: a success refills its pair and is not counted", () =>
    successRules.pipe(Effect.provide(RateLimiterMemory)))
})

describe("RateLimiter, PostgreSQL layer (shared by every process: docs/api-contract.md, \"Rate limits and body limits\")", () => {
  it.layer(RateLimiterLive.pipe(Layer.provideMerge(TestSqlLive)), { timeout: "60 seconds" })((it) => {
    it.effect("allows a burst of `capacity`, then refuses with Retry-After; a refused call takes nothing", () =>
      Effect.gen(function*() {
        const limiter = yield* RateLimiter
        for (let i = 0; i < 3; i++) expect((yield* limiter.take("pg:a", policy)).allowed).toBe(true)
        expect(yield* limiter.take("pg:a", policy)).toEqual({ allowed: false, retryAfterSeconds: 2 })
        expect(yield* limiter.take("pg:a", policy)).toEqual({ allowed: false, retryAfterSeconds: 2 })
      }))

    it.effect("takeUpTo grants what the bucket holds, up to the number asked for", () => grantsUpTo("pg:lease"))

    it.effect("stays exact under concurrent takes and leases from many connections", () =>
      Effect.gen(function*() {
        const limiter = yield* RateLimiter
        const shared = { capacity: 25, refillPerSecond: 0.001 }
        const results = yield* Effect.all(
          Array.from({ length: 30 }, (_, i) => limiter.takeUpTo("pg:race", shared, 1 + (i % 3))),
          { concurrency: "unbounded" }
        )
        expect(results.reduce((sum, result) => sum + result.granted, 0)).toBe(25)
      }))

    it.effect("admit: per-address buckets, then delays that double up to the cap (no lockout)", () =>
      backoffRules((seconds) => Effect.promise(() => new Promise((resolve) => setTimeout(resolve, seconds * 1000)))))

    it.effect("succeeded: a success refills its pair and is not counted", () => successRules)

    it.effect("admit stays exact under concurrent attempts from many connections", () =>
      Effect.gen(function*() {
        const limiter = yield* RateLimiter
        const results = yield* Effect.all(
          Array.from({ length: 12 }, (_, i) => limiter.admit(attemptFrom(`r${i % 3}`, "race"))),
          { concurrency: "unbounded" }
        )
        // Three addresses with two tokens each; the fourth counted attempt starts a delay, so at
        // most four of the six tokens can be spent at once.
        expect(results.filter((result) => result.allowed)).toHaveLength(4)
      }))

    it.effect(
      "admit and succeeded racing on one account never deadlock (migrations/0020)",
      () =>
        Effect.gen(function*() {
          const limiter = yield* RateLimiter
          // A success removes the pair's bucket, so concurrent attempts re-create it; before the
          // advisory lock two of them could wait on each other and one failed with a deadlock.
          for (let round = 0; round < 25; round++) {
            const account = `deadlock-${round}`
            yield* Effect.all(
              Array.from({ length: 40 }, (_, i) => {
                const attempt = {
                  bucket: `pair:a${i % 2}|${account}`,
                  bucketPolicy: { capacity: 1000, refillPerSecond: 1 },
                  backoff: `delay:${account}`,
                  backoffPolicy: { free: 10000, decayPerSecond: 1, maxDelaySeconds: 4 }
                }
                return i % 5 === 4 ? limiter.succeeded(attempt) : Effect.asVoid(limiter.admit(attempt))
              }),
              { concurrency: "unbounded" }
            )
          }
          // A deadlock would have failed the race above (a defect); the account still admits.
          const allowed = yield* limiter.admit({
            bucket: "pair:a0|deadlock-0",
            bucketPolicy: { capacity: 1000, refillPerSecond: 1 },
            backoff: "delay:deadlock-0",
            backoffPolicy: { free: 10000, decayPerSecond: 1, maxDelaySeconds: 4 }
          })
          expect(allowed.allowed).toBe(true)
        }),
      { timeout: 120_000 }
    )
  })
})
