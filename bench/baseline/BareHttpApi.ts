/**
 * Baseline for the catalog benchmark's cached works list: a bare `effect/http-api` endpoint on the
 * same Effect version as the server, with no middleware at all (no request id, compression,
 * problem middleware, credential check or request budget), answering `GET /v2/catalog/works` with
 * the same stored bytes (`BODY_FILE`, a works page as the server sends it) from memory. The ratio of
 * the server's cached row to this one is what our stack costs on a replayed answer.
 */
import { NodeHttpServer, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import * as Fs from "node:fs"
import * as Http from "node:http"

const port = Number(process.env.PORT)
const body = Fs.readFileSync(process.env.BODY_FILE!)

class Bare extends HttpApi.make("bare").add(
  HttpApiGroup.make("works")
    .add(HttpApiEndpoint.get("listWorks", "/v2/catalog/works"))
    .add(HttpApiEndpoint.get("healthz", "/healthz"))
) {}

const WorksLive = HttpApiBuilder.group(Bare, "works", (handlers) =>
  Effect.succeed(
    handlers
      .handle(
        "listWorks",
        () => Effect.succeed(HttpServerResponse.uint8Array(body, { contentType: "application/json" }))
      )
      .handle("healthz", () => Effect.succeed(HttpServerResponse.text("ok")))
  ))

HttpRouter.serve(HttpApiBuilder.layer(Bare).pipe(Layer.provide(WorksLive)), {
  disableLogger: true,
  disableListenLog: true
}).pipe(
  Layer.provide(NodeHttpServer.layer(Http.createServer, { port, host: "127.0.0.1" })),
  Layer.launch,
  NodeRuntime.runMain
)
