/**
 * A small API served through the catalog's real problem middleware and request-id middleware,
 * with every kind of input (path, query, header, body) and failure (declared, defect, database
 * away), so each problem variant of SPEC 7.1 can be produced by a real HTTP request.
 */
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { HttpServer } from "effect/http"
import { NodeHttpServer } from "@effect/platform-node"
import { SqlClient } from "effect/sql"
import { Context, Effect, Layer, Schema } from "effect"
import { createServer } from "node:http"
import { problemCodeOnFailure } from "../../schema/Annotations.js"
import { HealthApi } from "../../schema/Api/HealthApi.js"
import {
  EntityMerged,
  InternalError,
  InvalidParameter,
  NotFound,
  PayloadTooLarge,
  problem,
  ServiceUnavailable,
  ValidationFailed
} from "../../schema/Problem.js"
import { ServerConfig } from "../../src/platform/Config.js"
import { healthHandlers } from "../../src/platform/Health.js"
import { completeOnHangUp, runToCompletion } from "../../src/platform/HttpListener.js"
import { problemMiddleware } from "../../src/platform/ProblemMiddleware.js"
import { withRequestId } from "../../src/platform/RequestId.js"
import { RouteTable } from "../../src/platform/RouteTable.js"

const Limit = Schema.NumberFromString.pipe(
  Schema.int(),
  Schema.greaterThanOrEqualTo(1),
  Schema.lessThanOrEqualTo(100, { ...problemCodeOnFailure("LIMIT_TOO_LARGE") })
)

const Body = Schema.Struct({
  name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(8)),
  tags: Schema.Array(Schema.String).pipe(Schema.maxItems(2)),
  kind: Schema.Literals(["a", "b"]),
  nested: Schema.Struct({ count: Schema.Int.pipe(Schema.between(0, 10)) })
}).annotate({ parseOptions: { errors: "all" } })

class ProbeGroup extends HttpApiGroup.make("probe")
  .add(
    HttpApiEndpoint.get("list", "/probe/items")
      .setUrlParams(
        Schema.Struct({
          limit: Schema.optional(Limit),
          kind: Schema.optional(Schema.Literals(["a", "b"]))
        }).annotate({ parseOptions: { errors: "all" } })
      )
      .setHeaders(Schema.Struct({ "x-probe": Schema.optional(Schema.Literal("yes")) }))
      .addSuccess(Schema.Struct({ ok: Schema.Boolean }))
  )
  .add(
    HttpApiEndpoint.get("get", "/probe/items/:id")
      .setPath(Schema.Struct({ id: Schema.String.pipe(Schema.pattern(/^[0-9]{1,20}$/)) }))
      .addSuccess(Schema.Struct({ id: Schema.String }))
      .addError(problem(NotFound))
      .addError(problem(EntityMerged))
  )
  .add(
    HttpApiEndpoint.post("create", "/probe/items")
      .setPayload(Body)
      .addSuccess(Schema.Struct({ ok: Schema.Boolean }))
  )
  .add(HttpApiEndpoint.get("defect", "/probe/defect").addSuccess(Schema.Struct({ ok: Schema.Boolean })))
  .add(HttpApiEndpoint.get("database", "/probe/database").addSuccess(Schema.Struct({ ok: Schema.Boolean })))
  .add(
    HttpApiEndpoint.get("slow", "/probe/slow")
      .setUrlParams(Schema.Struct({ token: Schema.String }))
      .addSuccess(Schema.Struct({ ok: Schema.Boolean }))
  )
  .add(
    HttpApiEndpoint.get("slowInterruptible", "/probe/slow-interruptible")
      .setUrlParams(Schema.Struct({ token: Schema.String }))
      .addSuccess(Schema.Struct({ ok: Schema.Boolean }))
  )
{}

/** Tokens of the slow probe requests whose statement ran to the end. */
export const completedSlowRequests = new Set<string>()

export class ProbeApi extends HttpApi.make("probe")
  .add(ProbeGroup)
  .add(HealthApi)
  .addError(problem(InvalidParameter))
  .addError(problem(ValidationFailed))
  .addError(problem(PayloadTooLarge))
  .addError(problem(InternalError))
  .addError(problem(ServiceUnavailable))
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
      .handle("get", ({ path }) =>
        path.id === "1"
          ? Effect.succeed({ id: "1" })
          : path.id === "2"
          ? Effect.fail(new EntityMerged({ detail: "Merged into 1.", object: "work", current_id: "1" }))
          : Effect.fail(new NotFound({ detail: "No such item." })))
      .handle("create", () => Effect.succeed({ ok: true }))
      .handle("defect", () => Effect.die(new Error("secret internal state: password=hunter2")))
      .handle("database", () => sql`SELECT 1`.pipe(Effect.orDie, Effect.as({ ok: true })))
      // A statement of 0.4 s, then a mark: like every route of the servers, and like none.
      .handle("slow", ({ urlParams }) => slow(urlParams.token), runToCompletion)
      .handle("slowInterruptible", ({ urlParams }) => slow(urlParams.token))
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
    const http = HttpApiBuilder.serve((app) => completeOnHangUp(withRequestId(app))).pipe(
      Layer.provide(problemMiddleware(routes)),
      Layer.provide(HttpApiBuilder.api(ProbeApi).pipe(Layer.provide([ProbeLive, ProbeHealthLive]))),
      Layer.provideMerge(NodeHttpServer.layer(createServer, { port: 0, host: "127.0.0.1" }))
    )
    const context = yield* Layer.build(http)
    const address = Context.get(context, HttpServer.HttpServer).address
    return address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : ""
  })
).pipe(Layer.provide(ServerConfig.layer))
