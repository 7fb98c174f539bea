/**
 * Sign-in throttling without lockout (src/identity/auth/Login.ts; OWASP Authentication Cheat Sheet):
 * failures are limited per (account, address) and attempts per address, and the account only slows
 * down, with growing delays, when failures come from several addresses. Requests come from distinct
 * loopback addresses (test/support/LocalAddress.ts), so the server sees distinct callers.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import {
  createUser,
  hiddenValue,
  IdentityServers,
  IdentityTestEnv,
  serverLayerOptions
} from "../support/IdentityServers.js"
import { loginFrom, requestFrom } from "../support/LocalAddress.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)
const sleep = (seconds: number) => promise(() => new Promise((resolve) => setTimeout(resolve, seconds * 1000)))

const OWNER = "127.0.0.3"
const ATTACKER = "127.0.0.2"

/** The production defaults (test/identity/IdentityConfig.test.ts checks they are the defaults). */
const Defaults = IdentityTestEnv({
  IDENTITY_LOGIN_FAILURE_BURST: "5",
  IDENTITY_LOGIN_FAILURE_PER_MINUTE: "0.2",
  IDENTITY_LOGIN_ACCOUNT_FREE_FAILURES: "10",
  IDENTITY_LOGIN_ACCOUNT_MAX_DELAY_SECONDS: "300"
})

describe("sign-in throttling (OWASP: no lockout an attacker can trigger)", () => {
  it.layer(Defaults, serverLayerOptions)((it) => {
    it.effect("wrong passwords from one address refuse that address only: the owner elsewhere signs in", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const statuses: Array<number> = []
        let last: Awaited<ReturnType<typeof loginFrom>> | undefined
        for (let i = 0; i < 12; i++) {
          last = yield* promise(() => loginFrom(ATTACKER, identity, { email: user.email, password: `guess-${i}` }))
          statuses.push(last.status)
        }
        // The owner, elsewhere, is not slowed at all.
        const owner = yield* promise(() => loginFrom(OWNER, identity, user))
        expect(owner.status, owner.text).toBe(200)
        expect(owner.body.data.token_type).toBe("Bearer")
        // The guesser got five tries, then 429 for this account from its address only.
        expect(statuses).toEqual([401, 401, 401, 401, 401, 429, 429, 429, 429, 429, 429, 429])
        expect(last!.body).toEqual({ code: 10012, message: "Too many attempts", data: null })
        expect(Number(last!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
        // It stays refused for this account, even with the right password.
        const guessed = yield* promise(() => loginFrom(ATTACKER, identity, user))
        expect(guessed.status).toBe(429)
        const again = yield* promise(() => loginFrom("127.0.0.1", identity, user))
        expect(again.status).toBe(200)
      }))

    it.effect("concurrent guesses from one address: exactly the bucket's failures are checked", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const replies = yield* promise(() =>
          Promise.all(
            Array.from(
              { length: 12 },
              (_, i) => loginFrom("127.0.0.4", identity, { email: user.email, password: `guess-${i}` })
            )
          )
        )
        const statuses = replies.map((reply) => reply.status).sort()
        expect(statuses.filter((status) => status === 401)).toHaveLength(5)
        expect(statuses.filter((status) => status === 429)).toHaveLength(7)
      }))

    it.effect("a correct password takes its attempt back: repeated sign-ins never slow the account", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        for (let i = 0; i < 12; i++) {
          expect((yield* promise(() => loginFrom(OWNER, identity, user))).status).toBe(200)
        }
        const wrong = yield* promise(() => loginFrom(OWNER, identity, { email: user.email, password: "typo" }))
        expect(wrong.status).toBe(401)
      }))
  })

  it.layer(
    IdentityTestEnv({
      IDENTITY_LOGIN_FAILURE_BURST: "2",
      IDENTITY_LOGIN_FAILURE_PER_MINUTE: "0.2",
      IDENTITY_LOGIN_ACCOUNT_FREE_FAILURES: "3",
      IDENTITY_LOGIN_ACCOUNT_MAX_DELAY_SECONDS: "4"
    }),
    serverLayerOptions
  )((it) => {
    it.effect("failures from several addresses: growing delays answered 429 + Retry-After, never a lock", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const wrong = (address: string) =>
          promise(() => loginFrom(address, identity, { email: user.email, password: "guess" }))
        for (const address of ["127.0.0.5", "127.0.0.5", "127.0.0.6", "127.0.0.6"]) {
          expect((yield* wrong(address)).status).toBe(401)
        }
        // Four failures for the account, past its allowance of three: the next attempt from any
        // address waits a second, and is answered at once.
        const early = yield* wrong("127.0.0.7")
        expect(early.status).toBe(429)
        expect(early.body.code).toBe(10012)
        expect(early.headers.get("retry-after")).toBe("1")
        const ownerEarly = yield* promise(() => loginFrom(OWNER, identity, user))
        expect(ownerEarly.status).toBe(429)
        yield* sleep(1)
        expect((yield* wrong("127.0.0.7")).status).toBe(401)
        // One more failure: the delay doubled. The account's backoff counts five failures (delay
        // 2^(5 - 3 - 1) = 2 s), and the next attempt, right away, is refused with what is left of it
        // (2 s, or 1 s once the previous request itself took a second on a loaded machine).
        const sql = yield* SqlClient.SqlClient
        const counted = yield* sql`SELECT tokens FROM rate_limit_buckets WHERE key = ${`login:delay:${user.email}`}`
        expect(Math.round(Number(counted[0]!.tokens))).toBe(5)
        const doubled = yield* wrong("127.0.0.8")
        expect(doubled.status).toBe(429)
        expect(["1", "2"]).toContain(doubled.headers.get("retry-after"))
        yield* sleep(2)
        // The owner, after the delay, signs in: the account slowed down but never locked.
        const owner = yield* promise(() => loginFrom(OWNER, identity, user))
        expect(owner.status, owner.text).toBe(200)
      }))

    it.effect("the sign-in page shares the limits: 429 with Retry-After on the page, the owner signs in", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const submit = (address: string, password: string) =>
          promise(async () => {
            const form = await requestFrom(address, `${identity}/api/v1/ui/login`)
            const cookie = form.setCookies.map((c) => c.split(";")[0]).join("; ")
            return requestFrom(address, `${identity}/api/v1/ui/login`, {
              headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
              body: new URLSearchParams({ csrf: hiddenValue(form.text, "csrf"), email: user.email, password })
                .toString()
            })
          })
        expect((yield* submit(ATTACKER, "guess-1")).status).toBe(401)
        expect((yield* submit(ATTACKER, "guess-2")).status).toBe(401)
        const refused = yield* submit(ATTACKER, "guess-3")
        expect(refused.status).toBe(429)
        expect(refused.headers.get("content-type")).toMatch(/^text\/html/)
        expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
        expect(refused.text).toContain("Too many attempts")
        const owner = yield* submit(OWNER, user.password)
        expect(owner.status).toBe(200)
        expect(owner.setCookies.some((c) => c.startsWith("shiori_session="))).toBe(true)
      }))
  })
})
