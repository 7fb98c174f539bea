/**
 * Tracing (docs/life-of-a-request.md,
 * "Middleware: request id, logging, tracing, credentials, limits"): spans go to an OTLP collector
 * when `OTEL_EXPORTER_OTLP_ENDPOINT` is set; otherwise the tracer is off (no spans are made).
 * Request spans come from the platform (method, route, status) and carry `request_id`; services and
 * SQL add child spans.
 */
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { OTLPTraceExporter } from "@opentelemetry/exporter-trace-otlp-http"
import { BatchSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Config, Effect, Layer, Option, References } from "effect"

export const TracingLive = Layer.unwrap(
  Effect.gen(function*() {
    const endpoint = yield* Config.option(Config.String("OTEL_EXPORTER_OTLP_ENDPOINT"))
    // Nothing would export the spans: skip making them (each costs microseconds on every request).
    if (Option.isNone(endpoint)) return Layer.succeed(References.TracerEnabled, false)
    const serviceName = yield* Config.String("OTEL_SERVICE_NAME").pipe(Config.withDefault("shiori"))
    const base = endpoint.value.replace(/\/+$/, "")
    return NodeSdk.layer(() => ({
      resource: { serviceName },
      spanProcessor: new BatchSpanProcessor(new OTLPTraceExporter({ url: `${base}/v1/traces` }))
    }))
  })
)
