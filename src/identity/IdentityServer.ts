/**
 * The identity server stack (SPEC 4.2) on its own port, built fresh (RECIPES.md).
 */
import { HttpApiBuilder, HttpApiScalar, HttpServer } from "@effect/platform"
import { Effect, Layer } from "effect"
import { IdentityApi } from "../../schema/Api/IdentityApi.js"
import { ServerConfig } from "../platform/Config.js"
import { healthHandlers } from "../platform/Health.js"
import { listen } from "../platform/HttpListener.js"
import { withRequestId } from "../platform/RequestId.js"
import { identityErrorMiddleware } from "./http/ErrorMiddleware.js"

const HttpHealthLive = HttpApiBuilder.group(
  IdentityApi,
  "health",
  (handlers) => Effect.map(healthHandlers, (h) => handlers.handle("healthz", h.healthz).handle("readyz", h.readyz))
)

export const IdentityApiLive = HttpApiBuilder.api(IdentityApi).pipe(Layer.provide([HttpHealthLive]))

export const IdentityHttpLive = HttpApiBuilder.serve(withRequestId).pipe(
  Layer.provide(HttpApiScalar.layer({ path: "/api/v1/docs" })),
  Layer.provide(HttpApiBuilder.middlewareOpenApi({ path: "/api/v1/openapi.json" })),
  Layer.provide(identityErrorMiddleware),
  Layer.provide(IdentityApiLive)
)

export const IdentityServerLive = Layer.unwrapEffect(
  Effect.map(
    ServerConfig,
    (config) => listen(HttpServer.withLogAddress(IdentityHttpLive), { port: config.identityPort, host: config.host })
  )
).pipe(Layer.fresh)
