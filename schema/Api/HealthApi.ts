import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { problem, ServiceUnavailable } from "../Problem.js"

export const Health = Schema.Struct({
  status: Schema.Literal("ok")
}).annotate({ identifier: "Health" })

export const Readiness = Schema.Struct({
  status: Schema.Literal("ready"),
  database: Schema.Literal("ok")
}).annotate({ identifier: "Readiness" })

/** Probes for process managers and load balancers; served on both ports, no credential. */
export class HealthApi extends HttpApiGroup.make("health")
  .add(
    HttpApiEndpoint.get("healthz", "/healthz", {
      success: Health
    })
      .annotate(OpenApi.Summary, "Liveness")
      .annotate(OpenApi.Description, "200 while the process serves HTTP. Does not touch the database.")
  )
  .add(
    HttpApiEndpoint.get("readyz", "/readyz", {
      success: Readiness,
      error: problem(ServiceUnavailable)
    })
      .annotate(OpenApi.Summary, "Readiness")
      .annotate(
        OpenApi.Description,
        "200 when the database answers within 2 seconds; 503 SERVICE_UNAVAILABLE with `Retry-After` otherwise."
      )
  )
  .annotate(OpenApi.Title, "Health")
  .annotate(OpenApi.Description, "Liveness and readiness probes.")
{}
