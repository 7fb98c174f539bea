/**
 * A small API served through the catalog's real problem middleware and request-id middleware,
 * with every kind of input (path, query, header, body) and failure (declared, defect, database
 * away), so each problem variant of docs/api-contract.md, "Errors: catalog problem documents", can be
 * produced by a real HTTP request.
 */
import { NodeHttpServer } from "@effect/platform-node"
import { Context, Effect, Layer, Schema } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { createServer } from "node:http"
import { problemCodeOnFailure } from "../../schema/Annotations.js"
import { HealthApi } from "../../schema/Api/HealthApi.js"
import { EntityMerged, NotFound, problem, ProblemResponses } from "../../schema/Problem.js"
import { ServerConfig } from "../../src/platform/Config.js"
import { healthHandlers } from "../../src/platform/Health.js"
import { completeOnHangUp, runToCompletion } from "../../src/platform/HttpListener.js"
import { problemMiddleware, problemResponsesLayer } from "../../src/platform/ProblemMiddleware.js"
import { withRequestId } from "../../src/platform/RequestId.js"
import { RouteTable } from "../../src/platform/RouteTable.js"

const Limit = Schema.NumberFromString.check(
  Schema.isInt(),
  Schema.isGreaterThanOrEqualTo(1),
  Schema.isLessThanOrEqualTo(100, { ...problemCodeOnFailure("LIMIT_TOO_LARGE") })
)

const Body = Schema.Struct({
  name: Schema.String.check(Schema.isMinLength(1), Schema.isMaxLength(8)),
  tags: Schema.Array(Schema.String).check(Schema.isMaxLength(2)),
  kind: Schema.Literals(["a", "b"]),
  nested: Schema.Struct({ count: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 10 })) })
})

const Ok = Schema.Struct({ ok: Schema.Boolean })

class ProbeGroup extends HttpApiGroup.make("probe")
  .add(
    HttpApiEndpoint.get("list", "/probe/items", {
      query: {
        limit: Schema.optional(Limit),
        kind: Schema.optional(Schema.Literals(["a", "b"]))
      },
      headers: { "x-probe": Schema.optional(Schema.Literal("yes")) },
      success: Ok
    }),
    HttpApiEndpoint.get("get", "/probe/items/:id", {
      params: { id: Schema.String.check(Schema.isPattern(/^[0-9]{1,20}$/)) },
      success: Schema.Struct({ id: Schema.String }),
      error: [problem(NotFound), problem(EntityMerged)]
    }),
    HttpApiEndpoint.post("create", "/probe/items", { payload: Body, success: Ok }),
    HttpApiEndpoint.get("defect", "/probe/defect", { success: Ok }),
    HttpApiEndpoint.get("database", "/probe/database", { success: Ok }),
    HttpApiEndpoint.get("slow", "/probe/slow", { query: { token: Schema.String }, success: Ok }),
    HttpApiEndpoint.get("slowInterruptible", "/probe/slow-interruptible", {
      query: { token: Schema.String },
      success: Ok
    })
  )
{}

/** Tokens of the slow probe requests whose statement ran to the end. */
export const completedSlowRequests = new Set<string>()

export class ProbeApi extends HttpApi.make("probe")
  .add(ProbeGroup)
  .add(HealthApi)
  .middleware(ProblemResponses)
{}

const ProbeLive = HttpApiBuilder.group(ProbeApi, "probe", (handlers) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const slow = (token: string) =>
      sql`SELECT pg_sleep(0.4)`.pipe(
        Effect.orDie,
        Effect.tap(() => Effect.sync(() => completedSlowRequests.add(token))),
        Effect.as({ ok: true })
      )
    return handlers
      .handle("list", () => Effect.succeed({ ok: true }))
      .handle("get", ({ params }) =>
        params.id === "1"
          ? Effect.succeed({ id: "1" })
          : params.id === "2"
          ? Effect.fail(new EntityMerged({ detail: "Merged into 1.", object: "work", current_id: "1" }))
          : Effect.fail(new NotFound({ detail: "No such item." })))
      .handle("create", () => Effect.succeed({ ok: true }))
      .handle("defect", () => Effect.die(new Error("secret internal state: password=hunter2")))
      .handle("database", () => sql`SELECT 1`.pipe(Effect.orDie, Effect.as({ ok: true })))
      // A statement of 0.4 s, then a mark: like every route of the servers, and like none.
      .handle("slow", ({ query }) => slow(query.token), runToCompletion)
      .handle("slowInterruptible", ({ query }) => slow(query.token))
  }))

const ProbeHealthLive = HttpApiBuilder.group(
  ProbeApi,
  "health",
  (handlers) => Effect.map(healthHandlers, (h) => handlers.handle("healthz", h.healthz).handle("readyz", h.readyz))
)

export class ProbeServer extends Context.Service<ProbeServer, string>()("test/ProbeServer") {}

export const ProbeServerLive = Layer.effect(
  ProbeServer,
  Effect.gen(function*() {
    const routes = RouteTable.fromApi(ProbeApi)
    // Composed like the servers (CatalogServer.ts): requests outlive a client that hangs up.
    const api = HttpApiBuilder.layer(ProbeApi).pipe(
      Layer.provide([ProbeLive, ProbeHealthLive]),
      Layer.provide(problemResponsesLayer)
    )
    const http = HttpRouter.serve(
      api.pipe(
        Layer.provide(problemMiddleware(routes)),
        Layer.provide(HttpRouter.middleware((app) => completeOnHangUp(withRequestId(app)), { global: true }))
      ),
      { disableLogger: true, disableListenLog: true }
    ).pipe(Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" })))
    const context = yield* Layer.build(http)
    const address = Context.get(context, HttpServer.HttpServer).address
    return address._tag === "InetAddressV4" ? `http://127.0.0.1:${address.port}` : ""
  })
).pipe(Layer.provide(ServerConfig.layer))
