/**
 * One span per request carrying method, route, status and the request id, with child spans for
 * services and SQL (README, "Operating it").
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { describe, expect, it } from "@effect/vitest"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer } from "effect"
import { sleepReal } from "../support/Problems.js"
import { serverLayerOptions, testConfig, TestServers, TestServersLive } from "../support/TestServers.js"

const exporter = new InMemorySpanExporter()
const TracingTest = NodeSdk.layer(() => ({
  resource: { serviceName: "shiori-test" },
  spanProcessor: new SimpleSpanProcessor(exporter)
}))

describe("tracing", () => {
  it.layer(
    TestServersLive.pipe(Layer.provide(TracingTest), Layer.provide(testConfig())),
    serverLayerOptions("60 seconds")
  )(
    (it) => {
      it.effect("a request's span carries its request id, method, route and status; SQL spans are its children", () =>
        Effect.gen(function*() {
          const { catalog } = yield* TestServers
          exporter.reset()
          const res = yield* Effect.promise(() => fetch(`${catalog}/readyz`))
          expect(res.status).toBe(200)
          const requestId = res.headers.get("x-request-id")!
          yield* sleepReal(50)
          const spans = exporter.getFinishedSpans()
          const server = spans.find((s) => s.attributes["request_id"] === requestId)
          expect(server, JSON.stringify(spans.map((s) => s.name))).toBeDefined()
          expect(server!.attributes["http.request.method"]).toBe("GET")
          expect(server!.attributes["http.route"]).toBe("/readyz")
          expect(server!.attributes["http.response.status_code"]).toBe(200)
          const traceId = server!.spanContext().traceId
          const inTrace = spans.filter((s) => s.spanContext().traceId === traceId)
          expect(inTrace.map((s) => s.name)).toContain("Health.readyz")
          // SQL spans follow the OpenTelemetry database conventions: named after their target.
          expect(inTrace.some((s) => s.attributes["db.system.name"] === "postgresql")).toBe(true)
        }))

      it.effect("errors are traced too: a 404's span has the status and the problem's request id", () =>
        Effect.gen(function*() {
          const { catalog } = yield* TestServers
          exporter.reset()
          const res = yield* Effect.promise(() => fetch(`${catalog}/nowhere`))
          const body = (yield* Effect.promise(() => res.json())) as { request_id: string }
          yield* sleepReal(50)
          const server = exporter.getFinishedSpans().find((s) => s.attributes["request_id"] === body.request_id)
          expect(server?.attributes["http.response.status_code"]).toBe(404)
        }))

      it.effect("no secrets in spans: the Authorization header is redacted", () =>
        Effect.gen(function*() {
          const { catalog } = yield* TestServers
          exporter.reset()
          yield* Effect.promise(() =>
            fetch(`${catalog}/v2/credential`, { headers: { authorization: "Bearer sk_supersecretvalue" } })
          )
          yield* sleepReal(50)
          const dump = JSON.stringify(exporter.getFinishedSpans().map((s) => s.attributes))
          expect(dump).not.toContain("supersecretvalue")
        }))
    }
  )
})
