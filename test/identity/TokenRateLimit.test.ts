/**
 * Token endpoint rate limiting (SPEC 4.2, 8; DECISIONS 9): a token bucket per client_id, checked
 * before the secret is hashed; 429 with `Retry-After`; one client's flood never slows another
 * client; never per source IP (every request here comes from 127.0.0.1).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  createClient,
  IdentityServers,
  IdentityTestEnv,
  refreshRequest,
  serverLayerOptions,
  signIn,
  tokenRequest,
  tokensFor
} from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const Env = IdentityTestEnv({ IDENTITY_TOKEN_RATE_BURST: "5", IDENTITY_TOKEN_RATE_PER_SECOND: "0.2" })

describe("token endpoint rate limit", () => {
  it.layer(Env, serverLayerOptions)((it) => {
    it.effect("DECISIONS 9: a flooding client gets 429 + Retry-After; another client is served meanwhile", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const flooder = yield* createClient()
        const quiet = yield* createClient()
        const session = yield* signIn(identity)
        const quietTokens = yield* promise(() => tokensFor(identity, quiet, session, "openid"))

        // 600 requests of the flooder over 16 connections (with a wrong secret: the bucket is checked
        // before the secret, so even failing authentication spends tokens), and the quiet client's
        // refreshes interleaved with them.
        const floodResults: Array<Awaited<ReturnType<typeof tokenRequest>>> = []
        const worker = async () => {
          while (floodResults.length < 600) {
            floodResults.push(
              await tokenRequest(identity, {
                grant_type: "refresh_token",
                refresh_token: "whatever",
                client_id: flooder.clientId,
                client_secret: "wrong-secret-wrong-secret-wrong"
              })
            )
          }
        }
        const floodStarted = Date.now()
        const flood = Promise.all(Array.from({ length: 16 }, worker)).then(() => ({
          results: floodResults,
          doneAt: Date.now()
        }))
        yield* promise(() => new Promise((resolve) => setTimeout(resolve, 50)))
        const quietResults: Array<number> = []
        let refresh = quietTokens.refresh_token
        for (let i = 0; i < 3; i++) {
          const res = yield* promise(() => refreshRequest(identity, quiet, refresh))
          quietResults.push(res.status)
          if (res.status === 200) refresh = res.body.refresh_token
        }
        const quietDoneAt = Date.now()
        const { doneAt, results } = yield* promise(() => flood)
        // The quiet client was served in between the flood's requests, not queued behind them: it
        // finished while the flooder was still being refused.
        expect(quietDoneAt).toBeLessThan(doneAt)
        // The bucket lets through its burst (5) plus its refill (0.2/s) over the flood; the rest is 429.
        const allowed = 5 + Math.ceil(((doneAt - floodStarted) / 1000) * 0.2)
        const limited = results.filter((r) => r.status === 429)
        expect(limited.length).toBeGreaterThanOrEqual(results.length - allowed)
        expect(results.filter((r) => r.status === 401).length).toBeLessThanOrEqual(allowed)
        for (const r of limited) {
          expect(r.body).toEqual({ error: "temporarily_unavailable", error_description: expect.any(String) })
          expect(Number(r.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
          expect(r.headers.get("cache-control")).toBe("no-store")
        }
        // The quiet client (1 exchange + 3 refreshes, within its own burst of 5) is never limited.
        expect(quietResults).toEqual([200, 200, 200])
      }))

    it.effect("DECISIONS 9: an unknown client_id is invalid_client, never 429 (no bucket per made-up id)", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const results = yield* promise(() =>
          Promise.all(
            Array.from({ length: 20 }, () =>
              tokenRequest(identity, { grant_type: "refresh_token", refresh_token: "x", client_id: "ghost" }))
          )
        )
        expect(new Set(results.map((r) => r.status))).toEqual(new Set([401]))
      }))
  })
})
