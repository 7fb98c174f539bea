/**
 * Every 4xx/5xx is an application/problem+json document (RFC 9457) with all required members,
 * whatever produced it: a declared failure, the decoder, the router, the body reader, a defect
 * (docs/api-contract.md, "Errors: catalog problem documents").
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import * as Net from "node:net"
import { listen } from "../../src/platform/HttpListener.js"
import { startingProblem } from "../../src/platform/ProblemMiddleware.js"
import { ProbeServer, ProbeServerLive } from "../support/ProbeApi.js"
import { expectProblem, sleepReal } from "../support/Problems.js"
import { TestSqlLive } from "../support/TestDatabase.js"
import { serverLayerOptions, testConfig, TestServers, TestServersLive } from "../support/TestServers.js"

const fetchText = (url: string, init?: RequestInit) => Effect.promise(() => fetch(url, init))

const Env = Layer.mergeAll(TestServersLive, ProbeServerLive.pipe(Layer.provide(TestSqlLive))).pipe(
  Layer.provide(testConfig())
)

describe("problem documents (docs/api-contract.md, \"Errors: catalog problem documents\")", () => {
  it.layer(Env, serverLayerOptions("60 seconds"))((it) => {
    it.effect("declared failure: 404 NOT_FOUND from a handler", () =>
      Effect.gen(function*() {
        const { catalog } = yield* TestServers
        const res = yield* fetchText(`${catalog}/v2/docs/problems/request/no-such-thing`)
        yield* Effect.promise(() => expectProblem(res, "NOT_FOUND", "/v2/docs/problems/request/no-such-thing"))
      }))

    it.effect("declared failure: ENTITY_MERGED carries object, current_id and Link rel=canonical", () =>
      Effect.gen(function*() {
        const probe = yield* ProbeServer
        const res = yield* fetchText(`${probe}/probe/items/2`)
        const link = res.headers.get("link")
        const body = yield* Effect.promise(() => expectProblem(res, "ENTITY_MERGED", "/probe/items/2"))
        expect(body.object).toBe("work")
        expect(body.current_id).toBe("1")
        expect(link).toBe(`<http://127.0.0.1:8080/v2/catalog/works/1>; rel="canonical"`)
      }))

    it.effect("path decode failure: 400 INVALID_PARAMETER naming the path parameter", () =>
      Effect.gen(function*() {
        const probe = yield* ProbeServer
        const res = yield* fetchText(`${probe}/probe/items/abc`)
        const body = yield* Effect.promise(() => expectProblem(res, "INVALID_PARAMETER", "/probe/items/abc"))
        expect(body.errors).toEqual([
          { reason: "INVALID_FORMAT", detail: "`id` has an invalid format.", parameter: "id" }
        ])
      }))

    it.effect("query decode failure: one errors[] entry per bad parameter, with params", () =>
      Effect.gen(function*() {
        const probe = yield* ProbeServer
        const res = yield* fetchText(`${probe}/probe/items?limit=0&kind=z`)
        const body = yield* Effect.promise(() => expectProblem(res, "INVALID_PARAMETER", "/probe/items?limit=0&kind=z"))
        expect(body.errors).toHaveLength(2)
        expect(body.errors).toContainEqual(
          expect.objectContaining({ parameter: "limit", reason: "OUT_OF_RANGE", params: { minimum: 1 } })
        )
        expect(body.errors).toContainEqual(
          expect.objectContaining({ parameter: "kind", reason: "UNKNOWN_VALUE", params: { allowed: ["a", "b"] } })
        )
      }))

    it.effect("a schema may name a more specific code: limit above 100 is LIMIT_TOO_LARGE (docs/api-contract.md, \"Cursors and pages\")", () =>
      Effect.gen(function*() {
        const probe = yield* ProbeServer
        const res = yield* fetchText(`${probe}/probe/items?limit=101`)
        const body = yield* Effect.promise(() => expectProblem(res, "LIMIT_TOO_LARGE", "/probe/items?limit=101"))
        expect(body.errors).toEqual([
          expect.objectContaining({ parameter: "limit", reason: "OUT_OF_RANGE", params: { maximum: 100 } })
        ])
      }))

    it.effect("header decode failure: 400 INVALID_PARAMETER with `header` set", () =>
      Effect.gen(function*() {
        const probe = yield* ProbeServer
        const res = yield* fetchText(`${probe}/probe/items`, { headers: { "x-probe": "no" } })
        const body = yield* Effect.promise(() => expectProblem(res, "INVALID_PARAMETER", "/probe/items"))
        expect(body.errors).toEqual([
          expect.objectContaining({ header: "x-probe", reason: "UNKNOWN_VALUE", params: { allowed: ["yes"] } })
        ])
      }))

    it.effect("body decode failure: 422 VALIDATION_FAILED with a JSON Pointer per field", () =>
      Effect.gen(function*() {
        const probe = yield* ProbeServer
        const res = yield* fetchText(`${probe}/probe/items`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ name: "much too long", tags: ["a", "b", "c"], kind: "c", nested: { count: 11 } })
        })
        const body = yield* Effect.promise(() => expectProblem(res, "VALIDATION_FAILED", "/probe/items"))
        const byPointer = Object.fromEntries(body.errors.map((e) => [e.pointer, e]))
        expect(byPointer["/name"]).toMatchObject({ reason: "TOO_LONG", params: { max_length: 8 } })
        expect(byPointer["/tags"]).toMatchObject({ reason: "TOO_MANY_ITEMS", params: { max_items: 2 } })
        expect(byPointer["/kind"]).toMatchObject({ reason: "UNKNOWN_VALUE", params: { allowed: ["a", "b"] } })
        expect(byPointer["/nested/count"]).toMatchObject({
          reason: "OUT_OF_RANGE",
          params: { minimum: 0, maximum: 10 }
        })
        expect(body.errors).toHaveLength(4)
      }))

    it.effect("body with a missing field: REQUIRED at its pointer", () =>
      Effect.gen(function*() {
        const probe = yield* ProbeServer
        const res = yield* fetchText(`${probe}/probe/items`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ name: "ok", tags: [], kind: "a", nested: {} })
        })
        const body = yield* Effect.promise(() => expectProblem(res, "VALIDATION_FAILED", "/probe/items"))
        expect(body.errors).toEqual([
          { reason: "REQUIRED", detail: "`/nested/count` is required.", pointer: "/nested/count" }
        ])
      }))

    it.effect("malformed JSON: 400 INVALID_PARAMETER, never a 500", () =>
      Effect.gen(function*() {
        const probe = yield* ProbeServer
        const res = yield* fetchText(`${probe}/probe/items`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{\"name\": "
        })
        const body = yield* Effect.promise(() => expectProblem(res, "INVALID_PARAMETER", "/probe/items"))
        expect(body.detail).toMatch(/not valid JSON/)
      }))

    it.effect("body over the limit: 413 PAYLOAD_TOO_LARGE, declared or streamed (docs/api-contract.md, \"Rate limits and body limits\")", () =>
      Effect.gen(function*() {
        const probe = yield* ProbeServer
        const big = JSON.stringify({ name: "x".repeat(1024 * 1024 + 10) })
        const declared = yield* fetchText(`${probe}/probe/items`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: big
        })
        const body = yield* Effect.promise(() => expectProblem(declared, "PAYLOAD_TOO_LARGE", "/probe/items"))
        expect(body.max_bytes).toBe(1024 * 1024)
        // Chunked: no Content-Length, so the limit is enforced while reading.
        const chunks = new ReadableStream({
          start(controller) {
            controller.enqueue(new TextEncoder().encode(big))
            controller.close()
          }
        })
        const streamed = yield* fetchText(`${probe}/probe/items`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: chunks,
          duplex: "half"
        } as RequestInit)
        yield* Effect.promise(() => expectProblem(streamed, "PAYLOAD_TOO_LARGE", "/probe/items"))
      }))

    it.effect("JSON nested thousands deep and multipart bodies: 400 INVALID_PARAMETER, never a 500", () =>
      Effect.gen(function*() {
        const probe = yield* ProbeServer
        for (
          const body of ["[".repeat(20_000) + "]".repeat(20_000), "{\"a\":".repeat(5_000) + "1" + "}".repeat(5_000)]
        ) {
          const nested = yield* fetchText(`${probe}/probe/items`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body
          })
          yield* Effect.promise(() => expectProblem(nested, "INVALID_PARAMETER", "/probe/items"))
        }
        const multipart = yield* fetchText(`${probe}/probe/items`, {
          method: "POST",
          headers: { "content-type": "multipart/form-data; boundary=x" },
          body: "--x\r\nContent-Disposition: form-data; name=\"name\"\r\n\r\nok\r\n--"
        })
        yield* Effect.promise(() => expectProblem(multipart, "INVALID_PARAMETER", "/probe/items"))
      }))

    it.effect("unknown route: 404 NOT_FOUND on both an unknown path and a near miss", () =>
      Effect.gen(function*() {
        const { catalog } = yield* TestServers
        for (const path of ["/nope", "/v2/catalog/nothing-here", "/v2/problems/reasons/extra"]) {
          const res = yield* fetchText(`${catalog}${path}`)
          yield* Effect.promise(() => expectProblem(res, "NOT_FOUND", path))
        }
      }))

    it.effect("wrong method on an existing path: 405 METHOD_NOT_ALLOWED with Allow", () =>
      Effect.gen(function*() {
        const { catalog } = yield* TestServers
        const res = yield* fetchText(`${catalog}/v2/problems/reasons`, { method: "DELETE" })
        expect(res.headers.get("allow")).toBe("GET, HEAD")
        const body = yield* Effect.promise(() => expectProblem(res, "METHOD_NOT_ALLOWED", "/v2/problems/reasons"))
        expect(body.allow).toEqual(["GET", "HEAD"])
      }))

    it.effect("any method on any path under /v1/ answers 410 GONE (docs/api-contract.md, \"Errors: catalog problem documents\")", () =>
      Effect.gen(function*() {
        const { catalog } = yield* TestServers
        for (const [method, path] of [["GET", "/v1/works"], ["POST", "/v1/claims"], ["DELETE", "/v1/x/y/z?q=1"]]) {
          const res = yield* fetchText(`${catalog}${path}`, { method: method! })
          yield* Effect.promise(() => expectProblem(res, "GONE", path!))
        }
      }))

    it.effect("defect: 500 INTERNAL_ERROR without internals in detail", () =>
      Effect.gen(function*() {
        const probe = yield* ProbeServer
        const res = yield* fetchText(`${probe}/probe/defect`)
        const text = yield* Effect.promise(() => res.clone().text())
        expect(text).not.toMatch(/hunter2|secret|Error/)
        const body = yield* Effect.promise(() => expectProblem(res, "INTERNAL_ERROR", "/probe/defect"))
        expect(body.detail).toBe("")
      }))

    it.effect("problem type URIs are dereferenceable (docs/api-contract.md, \"Errors: catalog problem documents\")", () =>
      Effect.gen(function*() {
        const { catalog } = yield* TestServers
        const res = yield* fetchText(`${catalog}/v1/anything`)
        const body = (yield* Effect.promise(() => res.json())) as { type: string }
        const typeUrl = new URL(body.type)
        const page = yield* fetchText(`${catalog}${typeUrl.pathname}`)
        expect(page.status).toBe(200)
        expect(page.headers.get("content-type")).toMatch(/^text\/html/)
        const html = yield* Effect.promise(() => page.text())
        expect(html).toContain("<code>GONE</code>")
      }))

    it.effect("GET /v2/problems/reasons serves the closed reason registry with param_names", () =>
      Effect.gen(function*() {
        const { catalog } = yield* TestServers
        const res = yield* fetchText(`${catalog}/v2/problems/reasons`)
        expect(res.status).toBe(200)
        const body = (yield* Effect.promise(() => res.json())) as { items: Array<any> }
        expect(body.items.map((i) => i.reason)).toEqual([
          "REQUIRED",
          "INVALID_FORMAT",
          "OUT_OF_RANGE",
          "TOO_LONG",
          "TOO_SHORT",
          "TOO_MANY_ITEMS",
          "TOO_FEW_ITEMS",
          "DUPLICATE_ITEM",
          "UNKNOWN_VALUE",
          "NOT_ALLOWED_VALUE",
          "UNKNOWN_REFERENCE",
          "IMMUTABLE",
          "INCONSISTENT_WITH",
          "NOT_PERMITTED"
        ])
        expect(body.items.find((i) => i.reason === "OUT_OF_RANGE").param_names).toEqual(["minimum", "maximum"])
        expect(body.items.find((i) => i.reason === "UNKNOWN_VALUE").param_names).toEqual(["allowed"])
      }))

    it.effect("X-Request-ID on successes too, on both servers", () =>
      Effect.gen(function*() {
        const { catalog, identity } = yield* TestServers
        const ids = new Set<string>()
        for (const url of [`${catalog}/healthz`, `${identity}/healthz`, `${catalog}/readyz`, `${identity}/nope`]) {
          const res = yield* fetchText(url)
          const id = res.headers.get("x-request-id") ?? ""
          expect(id).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/)
          ids.add(id)
        }
        expect(ids.size).toBe(4)
      }))
  })
})

describe("start-up window (docs/decisions.md, \"Operations\")", () => {
  it.effect("a request after listen but before the app is attached gets 503 + Retry-After, not a hang", () =>
    Effect.gen(function*() {
      const port = yield* Effect.promise(() =>
        new Promise<number>((resolve) => {
          const probe = Net.createServer()
          probe.listen(0, "127.0.0.1", () => {
            const { port } = probe.address() as Net.AddressInfo
            probe.close(() => resolve(port))
          })
        })
      )
      // An application whose construction never finishes: the socket listens, no handler is attached.
      const neverReady = Layer.effectDiscard(Effect.never)
      yield* Layer.launch(listen(neverReady, {
        port,
        host: "127.0.0.1",
        starting: startingProblem({ docsUrl: "http://docs.test", publicUrl: "http://x.test" })
      })).pipe(Effect.forkScoped)
      let res: Response | undefined
      for (let i = 0; i < 100 && res === undefined; i++) {
        res = yield* Effect.promise(() => fetch(`http://127.0.0.1:${port}/healthz`).catch(() => undefined))
        if (res === undefined) yield* sleepReal(20)
      }
      expect(res!.headers.get("retry-after")).toBe("1")
      const body = yield* Effect.promise(() => expectProblem(res!, "SERVICE_UNAVAILABLE", "/healthz"))
      expect(body.retry_after).toBe(1)
    }).pipe(Effect.scoped))
})
