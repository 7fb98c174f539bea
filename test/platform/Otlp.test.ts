/**
 * Spans leave the process over OTLP/HTTP (src/platform/Tracing.ts: `OTEL_EXPORTER_OTLP_ENDPOINT` set
 * means a `BatchSpanProcessor` over the `@opentelemetry/exporter-trace-otlp-http` exporter, posting to
 * `<endpoint>/v1/traces`), and a request's W3C `traceparent` is honoured: its server span continues
 * the caller's trace, as a child of the caller's span.
 *
 * Black box, like test/e2e/Start.test.ts: the built server (`npm run -s build` first; `npm test`
 * builds) runs as `node dist/src/main.js`, so the export path is the one `npm start` composes
 * (src/App.ts), over a database cloned from the run's migrated template. The collector is a plain
 * `node:http` server on loopback in this process. The exporter sends OTLP/JSON (its node transport
 * sets `Content-Type: application/json` and serializes with `JsonTraceSerializer`: trace and span
 * ids as hex strings, span kind offset by one, so a server span is `kind: 2`), so the receiver
 * parses JSON. `OTEL_BSP_SCHEDULE_DELAY` (read by the SDK's `BatchSpanProcessor`) is lowered so a
 * batch leaves within a fraction of a second instead of five.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { spawn } from "node:child_process"
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import * as Net from "node:net"
import * as Path from "node:path"
import * as Zlib from "node:zlib"
import { ApiKeys } from "../../src/catalog/auth/ApiKeys.js"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { eventually } from "../support/Eventually.js"
import { TestSqlLive } from "../support/TestDatabase.js"
import { serverLayerOptions, testConfig } from "../support/TestServers.js"

const root = Path.resolve(import.meta.dirname, "../..")

/** One OTLP/JSON `AnyValue` / `KeyValue`, as far as the test reads them. */
interface OtlpKeyValue {
  readonly key: string
  readonly value: Record<string, unknown>
}

interface OtlpSpan {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly kind: number
  readonly attributes?: ReadonlyArray<OtlpKeyValue>
}

interface ReceivedSpan {
  readonly resource: ReadonlyArray<OtlpKeyValue>
  readonly span: OtlpSpan
}

interface Received {
  /** Every export request body, as sent (after any content decoding). */
  readonly bodies: ReadonlyArray<string>
  readonly spans: ReadonlyArray<ReceivedSpan>
  /** Requests that were not a well-formed `POST /v1/traces` with a JSON body. */
  readonly refused: ReadonlyArray<string>
}

/** A minimal OTLP/HTTP trace collector on loopback. */
class OtlpReceiver extends Context.Service<OtlpReceiver, {
  readonly endpoint: string
  readonly received: () => Received
}>()("test/OtlpReceiver") {}

const OtlpReceiverLive = Layer.effect(
  OtlpReceiver,
  Effect.gen(function*() {
    const bodies: Array<string> = []
    const spans: Array<ReceivedSpan> = []
    const refused: Array<string> = []
    const server = Http.createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (chunk: Buffer) => chunks.push(chunk))
      req.on("end", () => {
        const raw = Buffer.concat(chunks)
        const contentType = req.headers["content-type"] ?? ""
        if (req.method !== "POST" || req.url !== "/v1/traces" || !contentType.startsWith("application/json")) {
          refused.push(`${req.method} ${req.url} ${contentType}`)
          res.writeHead(404).end()
          return
        }
        // `OTEL_EXPORTER_OTLP_COMPRESSION=gzip` would gzip the body; the default is none.
        const text = (req.headers["content-encoding"] === "gzip" ? Zlib.gunzipSync(raw) : raw).toString("utf8")
        bodies.push(text)
        const request = JSON.parse(text) as {
          resourceSpans?: ReadonlyArray<{
            resource?: { attributes?: ReadonlyArray<OtlpKeyValue> }
            scopeSpans?: ReadonlyArray<{ spans?: ReadonlyArray<OtlpSpan> }>
          }>
        }
        for (const rs of request.resourceSpans ?? []) {
          for (const ss of rs.scopeSpans ?? []) {
            for (const span of ss.spans ?? []) spans.push({ resource: rs.resource?.attributes ?? [], span })
          }
        }
        res.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    const port = yield* Effect.acquireRelease(
      Effect.callback<number>((resume) => {
        server.listen(0, "127.0.0.1", () => resume(Effect.succeed((server.address() as Net.AddressInfo).port)))
      }),
      () =>
        Effect.callback<void>((resume) => {
          server.closeAllConnections()
          server.close(() => resume(Effect.void))
        })
    )
    return {
      endpoint: `http://127.0.0.1:${port}`,
      received: () => ({ bodies: [...bodies], spans: [...spans], refused: [...refused] })
    }
  })
)

const freePort = Effect.callback<number>((resume) => {
  const server = Net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const { port } = server.address() as Net.AddressInfo
    server.close(() => resume(Effect.succeed(port)))
  })
})

/** The built catalog server, exporting to the receiver; stopped (SIGTERM, then awaited) with the scope. */
class Shiori extends Context.Service<Shiori, {
  readonly catalog: string
  readonly output: () => string
}>()("test/Shiori") {}

const serviceName = "shiori-otlp-test"

const ShioriLive = Layer.effect(
  Shiori,
  Effect.gen(function*() {
    const { endpoint } = yield* OtlpReceiver
    const databaseUrl = yield* DatabaseUrl
    const catalogPort = yield* freePort
    const identityPort = yield* freePort
    const env: Record<string, string | undefined> = {
      ...process.env,
      DATABASE_URL: Redacted.value(databaseUrl),
      SHIORI_SERVE: "catalog",
      CATALOG_PORT: String(catalogPort),
      IDENTITY_PORT: String(identityPort),
      HOST: undefined,
      SHIORI_SECRET: undefined,
      SHIORI_DEMO: undefined,
      SHIORI_DEMO_WORKS: "0",
      LOG_LEVEL: "Warning",
      // A trailing slash is allowed: Tracing.ts trims it before appending /v1/traces.
      OTEL_EXPORTER_OTLP_ENDPOINT: `${endpoint}/`,
      OTEL_SERVICE_NAME: serviceName,
      OTEL_BSP_SCHEDULE_DELAY: "100",
      OTEL_EXPORTER_OTLP_COMPRESSION: undefined,
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: undefined,
      OTEL_EXPORTER_OTLP_PROTOCOL: undefined,
      OTEL_TRACES_SAMPLER: undefined
    }
    for (const [name, value] of Object.entries(env)) if (value === undefined) delete env[name]
    let output = ""
    const child = yield* Effect.acquireRelease(
      Effect.sync(() => {
        const child = spawn(process.execPath, [Path.join(root, "dist/src/main.js")], {
          cwd: root,
          env,
          stdio: ["ignore", "pipe", "pipe"]
        })
        child.stdout!.on("data", (d) => output += d)
        child.stderr!.on("data", (d) => output += d)
        return child
      }),
      (child) =>
        Effect.callback<void>((resume) => {
          if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
          const force = setTimeout(() => child.kill("SIGKILL"), 15_000)
          child.once("exit", () => {
            clearTimeout(force)
            resume(Effect.void)
          })
          child.kill("SIGTERM")
        })
    )
    const catalog = `http://127.0.0.1:${catalogPort}`
    yield* Effect.promise(async () => {
      const deadline = Date.now() + 60_000
      for (;;) {
        const ok = await fetch(`${catalog}/readyz`, { signal: AbortSignal.timeout(2000) }).then(
          (r) => r.status === 200,
          () => false
        )
        if (ok) return
        if (child.exitCode !== null) throw new Error(`dist/src/main.js exited with ${child.exitCode}:\n${output}`)
        if (Date.now() > deadline) throw new Error(`dist/src/main.js not ready in 60 s:\n${output}`)
        await new Promise((r) => setTimeout(r, 100))
      }
    })
    return { catalog, output: () => output }
  })
).pipe(Layer.provideMerge(OtlpReceiverLive))

const attribute = (attributes: ReadonlyArray<OtlpKeyValue> | undefined, key: string) =>
  attributes?.find((a) => a.key === key)?.value

describe("OTLP export (src/platform/Tracing.ts)", () => {
  it.layer(
    Layer.mergeAll(ShioriLive, ApiKeys.layer).pipe(Layer.provideMerge(TestSqlLive), Layer.provide(testConfig())),
    serverLayerOptions("120 seconds")
  )((it) => {
    it.effect("a request's server span reaches the collector, continuing the caller's W3C trace, without secrets", () =>
      Effect.gen(function*() {
        const { catalog, output } = yield* Shiori
        const receiver = yield* OtlpReceiver
        const keys = yield* ApiKeys
        const created = yield* keys.create({
          site: "otlp_test",
          scopes: ["catalog:read"],
          contentLimit: "sfw",
          userId: null
        }).pipe(Effect.orDie)
        const key = Redacted.value(created.key)

        const traceId = Crypto.randomBytes(16).toString("hex")
        const parentSpanId = Crypto.randomBytes(8).toString("hex")
        const res = yield* Effect.promise(() =>
          fetch(`${catalog}/v2/catalog/works?limit=1`, {
            headers: { authorization: `Bearer ${key}`, traceparent: `00-${traceId}-${parentSpanId}-01` }
          })
        )
        expect(res.status, yield* Effect.promise(() => res.text())).toBe(200)
        const requestId = res.headers.get("x-request-id")
        expect(requestId).toMatch(/^req_[0-9A-HJKMNP-TV-Z]{26}$/)

        // Batches leave every 100 ms; the server span ends after the response is written.
        const server = yield* eventually(
          Effect.sync(() => {
            const found = receiver.received().spans.find((s) =>
              s.span.traceId === traceId && s.span.kind === 2 && s.span.parentSpanId === parentSpanId
            )
            if (found === undefined) {
              throw new Error(
                `no server span of trace ${traceId} yet; received ${
                  JSON.stringify(receiver.received().spans.map((s) => [s.span.name, s.span.traceId]))
                }\n${output()}`
              )
            }
            return found
          }),
          { timeoutMs: 10_000, intervalMs: 50 }
        )
        const { refused, spans, bodies } = receiver.received()
        expect(refused).toEqual([])

        // The caller's trace, the caller's span as parent, and the request's id.
        expect(server.span.traceId).toBe(traceId)
        expect(server.span.parentSpanId).toBe(parentSpanId)
        expect(server.span.spanId).toMatch(/^[0-9a-f]{16}$/)
        expect(server.span.spanId).not.toBe(parentSpanId)
        expect(attribute(server.span.attributes, "request_id")).toEqual({ stringValue: requestId })
        expect(attribute(server.span.attributes, "http.request.method")).toEqual({ stringValue: "GET" })
        expect(attribute(server.resource, "service.name")).toEqual({ stringValue: serviceName })
        // Exactly one server span answers for the caller's span.
        expect(spans.filter((s) => s.span.traceId === traceId && s.span.kind === 2)).toHaveLength(1)

        // The work under it (services, SQL) is exported in the same trace, below the server span.
        const below = spans.filter((s) => s.span.traceId === traceId && s.span !== server.span)
        expect(below.some((s) => s.span.parentSpanId === server.span.spanId), JSON.stringify(below)).toBe(true)

        // The bearer secret appears nowhere: not in any span's attributes, nor anywhere in what was sent.
        const secret = key.slice("sk_".length)
        for (const { span } of spans) {
          expect(JSON.stringify(span.attributes ?? []), span.name).not.toContain(secret)
        }
        expect(bodies.length).toBeGreaterThan(0)
        for (const body of bodies) expect(body).not.toContain(secret)
      }))
  })
})
