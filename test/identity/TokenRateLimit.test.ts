/**
 * Token endpoint rate limiting (src/identity/oauth/TokenService.ts): a token bucket per client_id
 * that only requests with successful client authentication (RFC 6749 section 2.3) spend, so a
 * client's public id cannot be used to lock its users out; failed authentications (RFC 6749 section
 * 5.2 `invalid_client`) counted per (client_id, address) instead; both answer 429 with `Retry-After`.
 * One client's flood never slows another client.
 *
 * Requests come from 127.0.0.1 unless sent with `tokenRequestFrom`, which binds another loopback
 * address (all of 127.0.0.0/8 is loopback on Linux), so the server sees two callers.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Http from "node:http"
import { eventually } from "../support/Eventually.js"
import type { TestClient, TokenCall } from "../support/IdentityServers.js"
import {
  createClient,
  exchangeCode,
  getCode,
  IdentityServers,
  IdentityTestEnv,
  refreshRequest,
  serverLayerOptions,
  signIn,
  tokenRequest,
  tokensFor
} from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const Env = IdentityTestEnv({
  IDENTITY_TOKEN_RATE_BURST: "5",
  IDENTITY_TOKEN_RATE_PER_SECOND: "0.2",
  // Fewer failures than the per-client burst, refilled slowly enough to stay empty during a test.
  IDENTITY_TOKEN_AUTH_FAILURE_BURST: "3",
  IDENTITY_TOKEN_AUTH_FAILURE_PER_MINUTE: "1"
})

/** The attacker's address: another loopback address than the client's own requests. */
const ATTACKER = "127.0.0.2"

/** POST /oauth/token (client_secret_post, form-encoded) from `localAddress`. */
const tokenRequestFrom = (identity: string, params: Record<string, string>, localAddress: string) =>
  new Promise<TokenCall>((resolve, reject) => {
    const body = new URLSearchParams(params).toString()
    const url = new URL(`${identity}/api/v1/oauth/token`)
    const req = Http.request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: "POST",
      localAddress,
      agent: false,
      headers: { "content-type": "application/x-www-form-urlencoded", "content-length": Buffer.byteLength(body) }
    }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk) => text += chunk)
      res.on("end", () => {
        const headers = new Headers()
        for (const [name, value] of Object.entries(res.headers)) {
          if (typeof value === "string") headers.set(name, value)
        }
        resolve({ status: res.statusCode!, body: text === "" ? null : JSON.parse(text), headers })
      })
    })
    req.on("error", reject)
    req.end(body)
  })

const wrongSecret = (client: TestClient, localAddress = ATTACKER) => (identity: string) =>
  tokenRequestFrom(identity, {
    grant_type: "refresh_token",
    refresh_token: "whatever",
    client_id: client.clientId,
    client_secret: "wrong-secret-wrong-secret-wrong"
  }, localAddress)

const expectTooMany = (res: TokenCall) => {
  expect(res.status, JSON.stringify(res.body)).toBe(429)
  expect(res.body).toEqual({ error: "temporarily_unavailable", error_description: expect.any(String) })
  expect(Number(res.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
  expect(res.headers.get("cache-control")).toBe("no-store")
}

describe("token endpoint rate limit", () => {
  it.layer(Env, serverLayerOptions)((it) => {
    it.effect("per-client bucket: an authenticated flood gets 429 + Retry-After; another client is served meanwhile", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const flooder = yield* createClient()
        const quiet = yield* createClient()
        const session = yield* signIn(identity)
        const quietTokens = yield* promise(() => tokensFor(identity, quiet, session, "openid"))

        // 600 requests of the flooder over 16 connections (with its right secret: only authenticated
        // requests spend the per-client bucket; the refresh token is made up, so each admitted one is
        // invalid_grant), and the quiet client's refreshes interleaved with them.
        const floodResults: Array<Awaited<ReturnType<typeof tokenRequest>>> = []
        // The flood goes on until the quiet client is done (and for 600 requests at least), so every
        // quiet request meets it, however fast or slow this machine is.
        let quietDone = false
        const worker = async () => {
          while (floodResults.length < 600 || !quietDone) {
            floodResults.push(
              await tokenRequest(identity, {
                grant_type: "refresh_token",
                refresh_token: "whatever",
                client_id: flooder.clientId,
                client_secret: flooder.secret!
              })
            )
          }
        }
        const floodStarted = Date.now()
        const flood = Promise.all(Array.from({ length: 16 }, worker)).then(() => ({
          results: floodResults,
          doneAt: Date.now()
        }))
        // The quiet client asks once the flooder is being refused.
        yield* eventually(Effect.sync(() => expect(floodResults.some((r) => r.status === 429)).toBe(true)))
        const quietResults: Array<number> = []
        let refresh = quietTokens.refresh_token
        for (let i = 0; i < 3; i++) {
          const res = yield* promise(() => refreshRequest(identity, quiet, refresh))
          quietResults.push(res.status)
          if (res.status === 200) refresh = res.body.refresh_token
        }
        quietDone = true
        const { doneAt, results } = yield* promise(() => flood)
        // The quiet client was served in between the flood's requests, not queued behind them: the
        // flood ran until the quiet client was done.
        expect(results.length).toBeGreaterThanOrEqual(600)
        // The bucket lets through its burst (5) plus its refill (0.2/s) over the flood; the rest is 429.
        const allowed = 5 + Math.ceil(((doneAt - floodStarted) / 1000) * 0.2)
        const limited = results.filter((r) => r.status === 429)
        expect(limited.length).toBeGreaterThanOrEqual(results.length - allowed)
        expect(results.filter((r) => r.status === 400).length).toBeLessThanOrEqual(allowed)
        for (const r of limited) expectTooMany(r)
        // The quiet client (1 exchange + 3 refreshes, within its own burst of 5) is never limited.
        expect(quietResults).toEqual([200, 200, 200])
      }))

    it.effect("RFC 6749 2.3.1: a wrong-secret flood for a client from one address does not stop that client's right-secret requests", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)

        // 300 wrong secrets for the client over 16 connections from the attacker's address: far more
        // than the client's own bucket (5) holds.
        const flood: Array<TokenCall> = []
        const worker = async () => {
          while (flood.length < 300) flood.push(await wrongSecret(client)(identity))
        }
        yield* promise(() => Promise.all(Array.from({ length: 16 }, worker)))
        // The failure bucket (3, refilling 1 a minute) lets through at most a few 401s; the rest is 429.
        expect(flood.filter((r) => r.status === 401).length).toBeGreaterThanOrEqual(3)
        expect(flood.filter((r) => r.status === 401).length).toBeLessThanOrEqual(4)
        expect(flood.filter((r) => r.status !== 401 && r.status !== 429)).toEqual([])
        for (const r of flood.filter((r) => r.status === 429)) expectTooMany(r)

        // The client, from its own address and with its secret, still gets tokens, up to its bucket.
        const tokens = yield* promise(() => tokensFor(identity, client, session, "openid"))
        expect(tokens.access_token).toEqual(expect.any(String))
        let refresh = tokens.refresh_token
        for (let i = 0; i < 3; i++) {
          const res = yield* promise(() => refreshRequest(identity, client, refresh))
          expect(res.status, JSON.stringify(res.body)).toBe(200)
          refresh = res.body.refresh_token
        }
      }))

    it.effect("RFC 6749 5.2: once an address's failed-authentication bucket is empty it gets 429 + Retry-After, that address only", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const statuses: Array<number> = []
        for (let i = 0; i < 3; i++) {
          const res = yield* promise(() => wrongSecret(client)(identity))
          expect(res.body.error).toBe("invalid_client")
          statuses.push(res.status)
        }
        expect(statuses).toEqual([401, 401, 401])
        const refused = yield* promise(() => wrongSecret(client)(identity))
        expectTooMany(refused)
        // Refused before the secret is looked at: no secret, and even the right one, from that address.
        expectTooMany(
          yield* promise(() =>
            tokenRequestFrom(
              identity,
              { grant_type: "refresh_token", refresh_token: "x", client_id: client.clientId },
              ATTACKER
            )
          )
        )
        const { code } = yield* promise(() => getCode(identity, client, session.accessToken))
        expectTooMany(
          yield* promise(() =>
            tokenRequestFrom(identity, {
              grant_type: "authorization_code",
              code,
              redirect_uri: client.redirectUri,
              client_id: client.clientId,
              client_secret: client.secret!
            }, ATTACKER)
          )
        )
        // Another address has its own failure bucket, and the client's own requests are served.
        expect((yield* promise(() => wrongSecret(client, "127.0.0.3")(identity))).status).toBe(401)
        const fresh = yield* promise(() => getCode(identity, client, session.accessToken))
        expect((yield* promise(() => exchangeCode(identity, client, fresh.code))).status).toBe(200)
      }))

    it.effect("per-client bucket: failed authentications are not debited, successful ones are, and it answers 429 when exceeded", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        for (let i = 0; i < 3; i++) expect((yield* promise(() => wrongSecret(client)(identity))).status).toBe(401)
        // The whole burst of 5 is left for the client: one exchange and four refreshes.
        const tokens = yield* promise(() => tokensFor(identity, client, session, "openid"))
        let refresh = tokens.refresh_token
        for (let i = 0; i < 4; i++) {
          const res = yield* promise(() => refreshRequest(identity, client, refresh))
          expect(res.status, JSON.stringify(res.body)).toBe(200)
          refresh = res.body.refresh_token
        }
        // Each of them was debited: the sixth is refused.
        expectTooMany(yield* promise(() => refreshRequest(identity, client, refresh)))
      }))

    it.effect("an unknown client_id is invalid_client, never 429 (no bucket per made-up id) (docs/decisions.md, \"Identity: protocol\")", () =>
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
