/**
 * A database that is reachable but does not answer (docs/deploying.md, "When the database
 * misbehaves"): reads, writes and `/readyz` answer 503 SERVICE_UNAVAILABLE with `Retry-After`
 * before the freeze ends, `/healthz` stays 200, the same requests succeed after it without a
 * restart, and SIGTERM during a freeze ends the process before the database thaws, with no
 * "unhandled defect" in its log.
 *
 * The built servers (`node dist/src/main.js`, catalog and identity) run over a proxy that freezes (test/support/DatabaseProxy.ts)
 * with a deadline of 1 s; each freeze lasts 20 s, so an answer that comes before the thaw could only
 * come from the deadline. The tests assert the order of events, not durations.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Redacted } from "effect"
import { type BuiltServer, exited, freePort, startBuiltCatalog } from "../support/BuiltServer.js"
import { ClaimsFixture, ClaimsFixtureLive } from "../support/Claims.js"
import { DatabaseProxy, DatabaseProxyLive } from "../support/DatabaseProxy.js"
import { expectProblem, sleepReal } from "../support/Problems.js"
import { serverLayerOptions } from "../support/TestServers.js"

const FREEZE_MS = 20_000

const Env = DatabaseProxyLive.pipe(Layer.provideMerge(ClaimsFixtureLive()))

/** Freezes the proxy for `FREEZE_MS`; `thawed()` tells whether it has thawed yet, `thaw` waits for it. */
const freeze = Effect.gen(function*() {
  const proxy = yield* DatabaseProxy
  let thawed = false
  proxy.freeze()
  const thaw = new Promise<void>((resolve) =>
    setTimeout(() => {
      thawed = true
      proxy.thaw()
      resolve()
    }, FREEZE_MS)
  )
  return { thawed: () => thawed, thaw: Effect.promise(() => thaw) }
})

/**
 * Both servers of one process over the proxy, their deadlines lowered so that they, not the thaw,
 * answer; `identity` is the identity server's base.
 */
const startOverProxy = Effect.gen(function*() {
  const proxy = yield* DatabaseProxy
  const identityPort = yield* Effect.promise(freePort)
  const server = yield* startBuiltCatalog(Redacted.value(proxy.url), {
    SHIORI_SERVE: "all",
    IDENTITY_PORT: String(identityPort),
    DATABASE_QUERY_TIMEOUT_SECONDS: "1",
    DATABASE_ACQUIRE_TIMEOUT_SECONDS: "2"
  })
  return { ...server, identity: `http://127.0.0.1:${identityPort}` }
})

/** A token request of an unknown client: 401 `invalid_client` once the database has said so. */
const tokenRequest = (identity: string, thawed: () => boolean) =>
  Effect.promise(async () => {
    const response = await fetch(`${identity}/api/v1/oauth/token`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=client_credentials&client_id=frozen-database-client&client_secret=not-a-secret"
    })
    return { response, beforeThaw: !thawed() }
  })

/** A request on the built server, answered with whether the database had thawed by then. */
const request = (
  server: BuiltServer,
  thawed: () => boolean,
  method: string,
  path: string,
  options: { readonly key?: string; readonly body?: unknown } = {}
) =>
  Effect.promise(async () => {
    const headers: Record<string, string> = {}
    if (options.key !== undefined) headers.authorization = `Bearer ${options.key}`
    if (options.body !== undefined) headers["content-type"] = "application/json"
    const response = await fetch(`${server.base}${path}`, {
      method,
      headers,
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) })
    })
    return { response, beforeThaw: !thawed() }
  })

describe("a frozen database (docs/deploying.md, \"When the database misbehaves\")", () => {
  it.layer(Env, serverLayerOptions("180 seconds"))((it) => {
    it.effect("reads, writes and /readyz answer 503 before the freeze ends; all succeed after it", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const server = yield* startOverProxy
        const key = f.creator.key
        const claim = { site_work_id: "9101", display_name: "Frozen database" }
        const warm = yield* request(server, () => false, "GET", `/v2/catalog/works/${f.works[0]}`, { key })
        expect(warm.response.status).toBe(200)

        const { thaw, thawed } = yield* freeze
        const [read, write, ready, health, token] = yield* Effect.all([
          request(server, thawed, "GET", `/v2/catalog/works/${f.works[1]}`, { key }),
          request(server, thawed, "POST", "/v2/claims", { key, body: claim }),
          request(server, thawed, "GET", "/readyz"),
          request(server, thawed, "GET", "/healthz"),
          tokenRequest(server.identity, thawed)
        ], { concurrency: "unbounded" })
        for (
          const [answer, path] of [[read, `/v2/catalog/works/${f.works[1]}`], [write, "/v2/claims"], [
            ready,
            "/readyz"
          ]] as const
        ) {
          expect(answer.beforeThaw, path).toBe(true)
          expect(answer.response.headers.get("retry-after"), path).toBe("5")
          yield* Effect.promise(() => expectProblem(answer.response, "SERVICE_UNAVAILABLE", path))
        }
        expect(health.beforeThaw).toBe(true)
        expect(health.response.status).toBe(200)
        // The identity server answers in its own shape (RFC 6749 on a protocol path).
        expect(token.beforeThaw).toBe(true)
        expect(token.response.status).toBe(503)
        expect(token.response.headers.get("retry-after")).toBe("5")
        expect((yield* Effect.promise(() => token.response.json())).error).toBe("temporarily_unavailable")
        // Once it has answered 503, a later request during the freeze does too (nothing is stuck behind it).
        const again = yield* request(server, thawed, "GET", `/v2/catalog/works/${f.works[2]}`, { key })
        expect(again.beforeThaw).toBe(true)
        expect(again.response.status).toBe(503)

        yield* thaw
        // The same process, the same requests: answered again.
        const readAfter = yield* request(server, thawed, "GET", `/v2/catalog/works/${f.works[1]}`, { key })
        expect(readAfter.response.status).toBe(200)
        const writeAfter = yield* request(server, thawed, "POST", "/v2/claims", { key, body: claim })
        expect(writeAfter.response.status, yield* Effect.promise(() => writeAfter.response.text())).toBe(201)
        expect((yield* request(server, thawed, "GET", "/readyz")).response.status).toBe(200)
        const tokenAfter = yield* tokenRequest(server.identity, thawed)
        expect(tokenAfter.response.status).toBe(401)
        expect((yield* Effect.promise(() => tokenAfter.response.json())).error).toBe("invalid_client")

        const log = server.output()
        expect(log).not.toContain("unhandled defect")
        expect(log).toMatch(/level=WARN .*database unavailable/)
        expect(log).not.toMatch(/level=ERROR .*database unavailable/)
      }))

    it.effect("SIGTERM during a freeze: the process exits before the database thaws, without an error logged", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const server = yield* startOverProxy
        const key = f.creator.key
        const { thaw, thawed } = yield* freeze
        // Requests in flight when the stop comes.
        const inFlight = Effect.all([
          request(server, thawed, "GET", `/v2/catalog/works/${f.works[3]}`, { key }),
          request(server, thawed, "POST", "/v2/claims", { key, body: { site_work_id: "9102", display_name: "Cut" } })
        ], { concurrency: "unbounded" }).pipe(Effect.forkChild)
        const requests = yield* inFlight
        yield* sleepReal(300)
        server.child.kill("SIGTERM")
        yield* Effect.promise(() => exited(server.child))
        const exitedBeforeThaw = !thawed()
        expect(exitedBeforeThaw, server.output()).toBe(true)
        expect(server.child.exitCode).toBe(0)
        yield* Fiber.await(requests)
        const log = server.output()
        expect(log).not.toContain("unhandled defect")
        expect(log).not.toContain("level=ERROR")
        yield* thaw
      }))
  })
})
