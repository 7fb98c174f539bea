/**
 * Bounded request bodies on the identity server (RFC 9110 section 15.5.14, 413 Content Too Large;
 * src/platform/BodyLimit.ts). A body over `IDENTITY_MAX_BODY_BYTES` (64 KiB by default) is refused
 * before it is buffered: a declared `Content-Length` over the limit without reading it, a chunked
 * body once it passes the limit. The 413 is in the route's own error style. Oversized fields are a
 * 400, never a 500. The catalog's 413 is covered by test/platform/Problems.test.ts.
 */
import { describe, expect, it } from "@effect/vitest"
import type { Config } from "effect"
import { ConfigProvider, Effect, Result } from "effect"
import * as Crypto from "node:crypto"
import { catalogMaxBodyBytes, identityMaxBodyBytes } from "../../src/platform/Config.js"
import {
  createClient,
  createUser,
  IdentityServers,
  IdentityTestEnv,
  login,
  serverLayerOptions
} from "../support/IdentityServers.js"
import { sendBody } from "../support/RawHttp.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const MiB = 1024 * 1024
const LIMIT = 64 * 1024

/** The sign-in page's CSRF cookie and token, as a browser gets them. */
const loginForm = (identity: string) =>
  promise(async () => {
    const page = await fetch(`${identity}/api/v1/ui/login`)
    const html = await page.text()
    return {
      cookie: page.headers.getSetCookie().map((c) => c.split(";")[0]).join("; "),
      csrf: /name="csrf" value="([^"]+)"/.exec(html)![1]!
    }
  })

const read = <A>(config: Config.Config<A>, settings: Record<string, string>) =>
  Effect.result(Effect.provideService(config, ConfigProvider.ConfigProvider, ConfigProvider.fromEnv({ env: settings })))

const discovery = (identity: string) =>
  promise(() => fetch(`${identity}/api/v1/.well-known/openid-configuration`).then((res) => res.status))

describe("identity request bodies (RFC 9110 section 15.5.14)", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect("a declared 64 MiB body to /oauth/token: 413 invalid_request before the body is sent, never buffered", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const url = `${identity}/api/v1/oauth/token`
        // Warm the route and the allocator so the measurement sees the request alone.
        yield* promise(() => sendBody(url, { total: 128 }))
        const before = process.memoryUsage().rss
        const res = yield* promise(() => sendBody(url, { total: 64 * MiB }))
        const after = process.memoryUsage().rss
        console.log(
          `64 MiB declared: ${res.status} after ${res.ms} ms, ${res.sent} bytes written; ` +
            `RSS ${(before / MiB).toFixed(1)} -> ${(after / MiB).toFixed(1)} MiB`
        )
        expect(res.status).toBe(413)
        // Answered before the body was all written (the time is reported above, not asserted).
        expect(res.sent).toBeLessThan(64 * MiB)
        expect(after - before).toBeLessThan(16 * MiB)
        expect(JSON.parse(res.body)).toEqual({ error: "invalid_request", error_description: expect.any(String) })
        expect(res.headers["cache-control"]).toBe("no-store")
        expect(res.headers["connection"]).toBe("close")
      }))

    it.effect("a chunked body without Content-Length is cut off with 413 once it passes the limit", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const before = process.memoryUsage().rss
        const res = yield* promise(() => sendBody(`${identity}/api/v1/oauth/token`, { total: 64 * MiB, chunked: true }))
        const after = process.memoryUsage().rss
        console.log(
          `64 MiB chunked: ${res.status} after ${res.ms} ms, ${res.sent} bytes written; ` +
            `RSS ${(before / MiB).toFixed(1)} -> ${(after / MiB).toFixed(1)} MiB`
        )
        expect(res.status).toBe(413)
        // Answered before the body was all written (the time is reported above, not asserted).
        expect(res.sent).toBeLessThan(64 * MiB)
        expect(after - before).toBeLessThan(16 * MiB)
        expect(JSON.parse(res.body)).toMatchObject({ error: "invalid_request" })
      }))

    it.effect("a chunked body under the limit is read and answered as usual", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const form = new URLSearchParams({
          grant_type: "authorization_code",
          code: "0".repeat(64),
          redirect_uri: client.redirectUri,
          client_id: client.clientId,
          client_secret: client.secret!
        }).toString()
        const res = yield* promise(() =>
          fetch(`${identity}/api/v1/oauth/token`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: new ReadableStream({
              start(controller) {
                controller.enqueue(new TextEncoder().encode(form))
                controller.close()
              }
            }),
            duplex: "half"
          } as RequestInit).then(async (r) => ({ status: r.status, body: await r.json() as any }))
        )
        // The body was decoded: the unknown code is the grant's failure, not the request's.
        expect(res).toEqual({ status: 400, body: { error: "invalid_grant", error_description: expect.any(String) } })
      }))

    it.effect("a body just under the limit is accepted; one byte over is 413", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const post = (size: number) =>
          promise(() =>
            fetch(`${identity}/api/v1/oauth/revoke`, {
              method: "POST",
              headers: { "content-type": "application/x-www-form-urlencoded" },
              body: `token=x&pad=${"p".repeat(size - "token=x&pad=".length)}`
            }).then((r) => r.status)
          )
        expect(yield* post(LIMIT)).toBe(200)
        expect(yield* post(LIMIT + 1)).toBe(413)
      }))

    it.effect("the 413 is in the route's style: the envelope 41301 on /auth, an HTML page on /ui", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const envelope = yield* promise(() =>
          sendBody(`${identity}/api/v1/auth/login`, { total: MiB, headers: { "content-type": "application/json" } })
        )
        expect(envelope.status).toBe(413)
        expect(JSON.parse(envelope.body)).toEqual({ code: 41301, message: "Payload too large", data: null })
        const page = yield* promise(() => sendBody(`${identity}/api/v1/ui/login`, { total: MiB }))
        expect(page.status).toBe(413)
        expect(page.headers["content-type"]).toMatch(/^text\/html/)
        expect(page.body).toContain("<!doctype html>")
        expect(page.headers["x-frame-options"]).toBe("DENY")
        // An API caller of a page route gets the envelope.
        const api = yield* promise(() =>
          sendBody(`${identity}/api/v1/ui/consent`, { total: MiB, headers: { accept: "application/json" } })
        )
        expect(api.status).toBe(413)
        expect(JSON.parse(api.body)).toMatchObject({ code: 41301 })
      }))

    it.effect("fifty concurrent 10 MiB bodies: all refused, and the server keeps serving during and after", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const started = Date.now()
        const flood = Promise.all(
          Array.from(
            { length: 50 },
            (_, i) =>
              sendBody(`${identity}/api/v1/${i % 2 === 0 ? "oauth/token" : "auth/login"}`, {
                total: 10 * MiB,
                chunked: i % 5 === 0,
                headers: { "content-type": i % 2 === 0 ? "application/x-www-form-urlencoded" : "application/json" }
              })
          )
        )
        const during = yield* discovery(identity)
        const results = yield* promise(() => flood)
        console.log(`50 x 10 MiB: all answered in ${Date.now() - started} ms`)
        expect(during).toBe(200)
        expect(results.map((r) => r.status)).toEqual(Array(50).fill(413))
        expect(yield* discovery(identity)).toBe(200)
        const session = yield* promise(() => login(identity, user))
        expect(session.accessToken).toEqual(expect.any(String))
      }))

    it.effect("a 10,000-character email on the sign-in form is a 400 page; on POST /auth/login a 40001 envelope", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        // Random, so PostgreSQL cannot compress it under its index row limit as it would "aaa...".
        const local = Crypto.randomBytes(10_000).toString("base64url").slice(0, 10_000 - "@example.com".length)
        const email = `${local}@example.com`
        const { cookie, csrf } = yield* loginForm(identity)
        const form = yield* promise(() =>
          fetch(`${identity}/api/v1/ui/login`, {
            method: "POST",
            redirect: "manual",
            headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({ csrf, email, password: "whatever" }).toString()
          }).then(async (r) => ({ status: r.status, type: r.headers.get("content-type"), text: await r.text() }))
        )
        expect(form.status).toBe(400)
        expect(form.type).toMatch(/^text\/html/)
        expect(form.text).toContain("<!doctype html>")
        const json = yield* promise(() =>
          fetch(`${identity}/api/v1/auth/login`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ email, password: "whatever" })
          }).then(async (r) => ({ status: r.status, body: await r.json() }))
        )
        expect(json).toEqual({ status: 400, body: { code: 40001, message: "Invalid request", data: null } })
      }))
  })
  it.effect("IDENTITY_MAX_BODY_BYTES defaults to 64 KiB, MAX_JSON_BODY_BYTES to 1 MiB; zero or negative is refused", () =>
    Effect.gen(function*() {
      expect(yield* read(identityMaxBodyBytes, {})).toEqual(Result.succeed(65536))
      expect(yield* read(catalogMaxBodyBytes, {})).toEqual(Result.succeed(1024 * 1024))
      expect(yield* read(identityMaxBodyBytes, { IDENTITY_MAX_BODY_BYTES: "1024" })).toEqual(Result.succeed(1024))
      for (const bad of ["0", "-1", "lots"]) {
        expect(Result.isFailure(yield* read(identityMaxBodyBytes, { IDENTITY_MAX_BODY_BYTES: bad })), bad).toBe(true)
        expect(Result.isFailure(yield* read(catalogMaxBodyBytes, { MAX_JSON_BODY_BYTES: bad })), bad).toBe(true)
      }
    }))

  it.layer(IdentityTestEnv({ IDENTITY_MAX_BODY_BYTES: "1024" }), serverLayerOptions)((it) => {
    it.effect("the configured limit is the one enforced: 1024 bytes accepted, 1025 refused with 413", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const post = (size: number) =>
          Effect.promise(() =>
            fetch(`${identity}/api/v1/oauth/revoke`, {
              method: "POST",
              headers: { "content-type": "application/x-www-form-urlencoded" },
              body: `token=x&pad=${"p".repeat(size - "token=x&pad=".length)}`
            }).then(async (r) => ({ status: r.status, body: await r.json().catch(() => null) }))
          )
        expect((yield* post(1024)).status).toBe(200)
        const refused = yield* post(1025)
        expect(refused.status).toBe(413)
        expect(refused.body).toEqual({ error: "invalid_request", error_description: expect.stringContaining("1024") })
      }))
  })
})
