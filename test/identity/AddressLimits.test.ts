/**
 * Per-address limits of the authorization, userinfo and revocation endpoints
 * (src/identity/ratelimit/AddressLimits.ts): a token bucket per client address, answered 429 with
 * `Retry-After` in each endpoint's style (the error page or envelope at authorize, RFC 6749 JSON at
 * the others); another address is not affected.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  codeParams,
  createClient,
  IdentityServers,
  IdentityTestEnv,
  serverLayerOptions,
  signIn
} from "../support/IdentityServers.js"
import { requestFrom } from "../support/LocalAddress.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const Env = IdentityTestEnv({
  IDENTITY_AUTHORIZE_RATE_BURST: "3",
  IDENTITY_AUTHORIZE_RATE_PER_SECOND: "0.01",
  IDENTITY_USERINFO_RATE_BURST: "3",
  IDENTITY_USERINFO_RATE_PER_SECOND: "0.01",
  IDENTITY_REVOKE_RATE_BURST: "3",
  IDENTITY_REVOKE_RATE_PER_SECOND: "0.01"
})

describe("per-address rate limits of authorize, userinfo and revoke", () => {
  it.layer(Env, serverLayerOptions)((it) => {
    it.effect("authorize: 429 error page (or envelope 42901 for JSON) with Retry-After; other addresses go on", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const url = `${identity}/api/v1/oauth/authorize?${new URLSearchParams(codeParams(client)).toString()}`
        for (let i = 0; i < 3; i++) {
          expect((yield* promise(() => requestFrom("127.0.0.2", url))).status).toBe(302)
        }
        const page = yield* promise(() => requestFrom("127.0.0.2", url))
        expect(page.status).toBe(429)
        expect(page.headers.get("content-type")).toMatch(/^text\/html/)
        expect(Number(page.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
        expect(page.headers.get("location")).toBeNull()
        const json = yield* promise(() => requestFrom("127.0.0.2", url, { headers: { accept: "application/json" } }))
        expect(json.status).toBe(429)
        expect(JSON.parse(json.text)).toEqual({ code: 42901, message: "Rate limited", data: null })
        expect(Number(json.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
        expect((yield* promise(() => requestFrom("127.0.0.3", url))).status).toBe(302)
      }))

    it.effect("userinfo (GET and POST share one bucket): 429 temporarily_unavailable with Retry-After", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const session = yield* signIn(identity)
        const userinfo = (from: string, method: "GET" | "POST") =>
          promise(() =>
            requestFrom(from, `${identity}/api/v1/oauth/userinfo`, {
              method,
              headers: { authorization: `Bearer ${session.accessToken}` }
            })
          )
        // A sign-in token is no client's access token: 401, but counted all the same.
        expect((yield* userinfo("127.0.0.4", "GET")).status).not.toBe(429)
        expect((yield* userinfo("127.0.0.4", "POST")).status).not.toBe(429)
        expect((yield* userinfo("127.0.0.4", "GET")).status).not.toBe(429)
        const refused = yield* userinfo("127.0.0.4", "POST")
        expect(refused.status).toBe(429)
        expect(JSON.parse(refused.text)).toEqual({
          error: "temporarily_unavailable",
          error_description: expect.any(String)
        })
        expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
        expect(refused.headers.get("cache-control")).toBe("no-store")
        expect((yield* userinfo("127.0.0.5", "GET")).status).not.toBe(429)
      }))

    it.effect("RFC 7009 revocation: 429 temporarily_unavailable with Retry-After; other addresses go on", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const revoke = (from: string) =>
          promise(() =>
            requestFrom(from, `${identity}/api/v1/oauth/revoke`, {
              headers: { "content-type": "application/x-www-form-urlencoded" },
              body: new URLSearchParams({ token: "not-a-token" }).toString()
            })
          )
        for (let i = 0; i < 3; i++) expect((yield* revoke("127.0.0.6")).status).toBe(200)
        const refused = yield* revoke("127.0.0.6")
        expect(refused.status).toBe(429)
        expect(JSON.parse(refused.text).error).toBe("temporarily_unavailable")
        expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
        expect((yield* revoke("127.0.0.7")).status).toBe(200)
      }))
  })
})
