/**
 * The client address (src/platform/ClientAddress.ts): `X-Forwarded-For` only from the proxies
 * of `TRUSTED_PROXIES`, walked from the right past trusted proxies (RFC 7239 section 7.4), else the
 * socket's peer. Over HTTP the requests come from distinct loopback addresses
 * (test/support/LocalAddress.ts); what the server took as the address is read from the session it
 * records, and from which per-address limits refuse.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Result } from "effect"
import { SqlClient } from "effect/sql"
import {
  addressBucket,
  NO_TRUSTED_PROXIES,
  parseTrustedProxies,
  resolveClientAddress
} from "../../src/platform/ClientAddress.js"
import {
  codeParams,
  createClient,
  createUser,
  IdentityServers,
  IdentityTestEnv,
  serverLayerOptions
} from "../support/IdentityServers.js"
import { loginFrom, requestFrom } from "../support/LocalAddress.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const proxies = Result.getOrThrow(parseTrustedProxies("10.0.0.1, 10.1.0.0/16, fd00::/8"))

describe("clientAddress (unit)", () => {
  it("without trusted proxies the peer is the client, whatever X-Forwarded-For says", () => {
    expect(resolveClientAddress("203.0.113.9", "198.51.100.1", NO_TRUSTED_PROXIES)).toBe("203.0.113.9")
    expect(resolveClientAddress("::ffff:203.0.113.9", undefined, NO_TRUSTED_PROXIES)).toBe("203.0.113.9")
    expect(resolveClientAddress(undefined, "198.51.100.1", NO_TRUSTED_PROXIES)).toBe("unknown")
  })

  it("an untrusted peer's X-Forwarded-For is ignored", () => {
    expect(resolveClientAddress("203.0.113.9", "198.51.100.1", proxies)).toBe("203.0.113.9")
  })

  it("RFC 7239 section 7.4: from a trusted proxy, the rightmost entry that is not a trusted proxy", () => {
    expect(resolveClientAddress("10.0.0.1", "198.51.100.1", proxies)).toBe("198.51.100.1")
    // The client's own (forged) entries sit left of what the proxies appended and are never reached.
    expect(resolveClientAddress("10.0.0.1", "1.1.1.1, 198.51.100.1", proxies)).toBe("198.51.100.1")
    expect(resolveClientAddress("10.0.0.1", "1.1.1.1, 198.51.100.1, 10.1.2.3", proxies)).toBe("198.51.100.1")
    expect(resolveClientAddress("::ffff:10.0.0.1", "198.51.100.1", proxies)).toBe("198.51.100.1")
    expect(resolveClientAddress("fd00::5", "2001:db8::7", proxies)).toBe("2001:db8::7")
    // Ports and brackets as some proxies write them.
    expect(resolveClientAddress("10.0.0.1", "198.51.100.1:4711", proxies)).toBe("198.51.100.1")
    expect(resolveClientAddress("10.0.0.1", "[2001:db8::7]:4711", proxies)).toBe("2001:db8::7")
  })

  it("a malformed entry or a chain of only trusted proxies ends at the last trusted hop", () => {
    expect(resolveClientAddress("10.0.0.1", "not-an-address", proxies)).toBe("10.0.0.1")
    expect(resolveClientAddress("10.0.0.1", "198.51.100.1, junk, 10.1.0.9", proxies)).toBe("10.1.0.9")
    expect(resolveClientAddress("10.0.0.1", "10.1.0.9", proxies)).toBe("10.1.0.9")
    expect(resolveClientAddress("10.0.0.1", "", proxies)).toBe("10.0.0.1")
  })

  it("per-address limits count an IPv6 address by its /64", () => {
    expect(addressBucket("203.0.113.9")).toBe("203.0.113.9")
    expect(addressBucket("2001:db8:1:2:aaaa::1")).toBe("2001:db8:1:2::/64")
    expect(addressBucket("2001:db8:1:2:ffff:ffff:ffff:ffff")).toBe("2001:db8:1:2::/64")
    expect(addressBucket("2001:db8::1")).toBe("2001:db8:0:0::/64")
    expect(addressBucket("::1")).toBe("0:0:0:0::/64")
    expect(addressBucket("64:ff9b::192.0.2.1")).toBe("64:ff9b:0:0::/64")
  })
})

/** The address the server recorded for the newest session of `userId`. */
const sessionAddress = (userId: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.map(
      sql<{ ip: string }>`SELECT ip FROM sessions WHERE user_id = ${userId} ORDER BY created_at DESC LIMIT 1`,
      (rows) => rows[0]?.ip
    ))

const PROXY = "127.0.0.2"

describe("TRUSTED_PROXIES over HTTP", () => {
  it.layer(
    IdentityTestEnv({
      TRUSTED_PROXIES: `${PROXY}, 127.0.10.0/24`,
      IDENTITY_AUTHORIZE_RATE_BURST: "2",
      IDENTITY_AUTHORIZE_RATE_PER_SECOND: "0.01",
      IDENTITY_TOKEN_AUTH_FAILURE_BURST: "2",
      IDENTITY_TOKEN_AUTH_FAILURE_PER_MINUTE: "1"
    }),
    serverLayerOptions
  )((it) => {
    it.effect("the address comes from X-Forwarded-For only when the peer is a trusted proxy", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const signIn = (from: string, forwarded: string) =>
          Effect.gen(function*() {
            const reply = yield* promise(() => loginFrom(from, identity, user, { "x-forwarded-for": forwarded }))
            expect(reply.status, reply.text).toBe(200)
            return yield* sessionAddress(user.id)
          })
        expect(yield* signIn("127.0.0.3", "198.51.100.7")).toBe("127.0.0.3")
        expect(yield* signIn(PROXY, "198.51.100.7")).toBe("198.51.100.7")
        expect(yield* signIn(PROXY, "203.0.113.1, 198.51.100.8, 127.0.10.5")).toBe("198.51.100.8")
      }))

    it.effect("per-address limits follow the resolved address; forged headers buy no fresh bucket", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const authorizeFrom = (from: string, forwarded?: string) =>
          promise(() =>
            requestFrom(
              from,
              `${identity}/api/v1/oauth/authorize?${new URLSearchParams(codeParams(client)).toString()}`,
              { headers: forwarded === undefined ? {} : { "x-forwarded-for": forwarded } }
            )
          ).pipe(Effect.map((reply) => reply.status))
        // Through the proxy: each client address has its own bucket of two.
        expect(yield* authorizeFrom(PROXY, "198.51.100.20")).not.toBe(429)
        expect(yield* authorizeFrom(PROXY, "198.51.100.20")).not.toBe(429)
        expect(yield* authorizeFrom(PROXY, "198.51.100.20")).toBe(429)
        expect(yield* authorizeFrom(PROXY, "198.51.100.21")).not.toBe(429)
        // An untrusted peer counts as itself whatever it forwards.
        expect(yield* authorizeFrom("127.0.0.4", "198.51.100.30")).not.toBe(429)
        expect(yield* authorizeFrom("127.0.0.4", "198.51.100.31")).not.toBe(429)
        expect(yield* authorizeFrom("127.0.0.4", "198.51.100.32")).toBe(429)
      }))

    it.effect("the token endpoint's failed-authentication bucket is per resolved address too", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const wrongSecret = (forwarded: string) =>
          promise(() =>
            requestFrom(PROXY, `${identity}/api/v1/oauth/token`, {
              headers: { "content-type": "application/x-www-form-urlencoded", "x-forwarded-for": forwarded },
              body: new URLSearchParams({
                grant_type: "refresh_token",
                refresh_token: "whatever",
                client_id: client.clientId,
                client_secret: "wrong-secret-wrong-secret-wrong"
              }).toString()
            })
          ).pipe(Effect.map((reply) => reply.status))
        expect(yield* wrongSecret("198.51.100.40")).toBe(401)
        expect(yield* wrongSecret("198.51.100.40")).toBe(401)
        expect(yield* wrongSecret("198.51.100.40")).toBe(429)
        expect(yield* wrongSecret("198.51.100.41")).toBe(401)
      }))
  })

  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect("without TRUSTED_PROXIES the socket's peer is the address, X-Forwarded-For is ignored", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const reply = yield* promise(() => loginFrom(PROXY, identity, user, { "x-forwarded-for": "198.51.100.7" }))
        expect(reply.status).toBe(200)
        expect(yield* sessionAddress(user.id)).toBe(PROXY)
      }))
  })
})
