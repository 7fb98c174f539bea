/**
 * The identity server stack on its own port, built fresh (`Layer.fresh`, like the catalog's), served like the
 * catalog by `listen` (graceful drain; 503 with `Retry-After` while starting, here as the envelope).
 */
import { Effect, Layer } from "effect"
import type { Types } from "effect"
import { HttpEffect, HttpRouter, HttpServer, HttpServerResponse } from "effect/http"
import type { HttpServerRequest } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { IdentityApi } from "../../schema/Api/IdentityApi.js"
import { ServerConfig } from "../platform/Config.js"
import { healthHandlers } from "../platform/Health.js"
import { completeOnHangUp, listen, runToCompletion } from "../platform/HttpListener.js"
import { withRequestMetrics } from "../platform/Metrics.js"
import { withRequestId } from "../platform/RequestId.js"
import { ExactSlashes } from "../platform/RouteTable.js"
import { HttpAccountLive } from "./http/AccountHttp.js"
import { HttpAuthLive } from "./http/AuthHttp.js"
import { HttpCreatorLive } from "./http/CreatorHttp.js"
import { HttpDevLive } from "./http/DevHttp.js"
import { HttpDirectoryLive } from "./http/DirectoryHttp.js"
import { HttpDiscoveryLive } from "./http/DiscoveryHttp.js"
import { identityErrorMiddleware } from "./http/ErrorMiddleware.js"
import { HttpOAuthLive } from "./http/OAuthHttp.js"
import { envelopeFailureBody } from "./http/Responses.js"
import { HttpTwoFactorLive } from "./http/TwoFactorHttp.js"
import { IdentityServicesLive } from "./IdentityServices.js"
import { HttpAccountPagesLive } from "./pages/account/Http.js"
import { HttpRecoveryPagesLive } from "./pages/recovery/Http.js"
import { HttpPagesLive } from "./pages/signin/Http.js"
import { HttpTwoFactorPagesLive } from "./pages/twofactor/Http.js"
import { IdentityConfig } from "./shared/IdentityConfig.js"

const HttpHealthLive = HttpApiBuilder.group(
  IdentityApi,
  "health",
  (handlers) =>
    Effect.map(
      healthHandlers,
      (h) => handlers.handle("healthz", h.healthz, runToCompletion).handle("readyz", h.readyz, runToCompletion)
    )
)

/**
 * The API's routes, `/api/v1/openapi.json` among them: the JSON groups of src/identity/http/ and the
 * pages of src/identity/pages/<feature>/Http.ts.
 */
export const IdentityApiLive = HttpApiBuilder.layer(IdentityApi, { openapiPath: "/api/v1/openapi.json" }).pipe(
  Layer.provide([
    HttpHealthLive,
    HttpDiscoveryLive,
    HttpOAuthLive,
    HttpAuthLive,
    HttpAccountLive,
    HttpAccountPagesLive,
    HttpRecoveryPagesLive,
    HttpDirectoryLive,
    HttpCreatorLive,
    HttpTwoFactorLive,
    HttpPagesLive,
    HttpTwoFactorPagesLive,
    HttpDevLive
  ]),
  Layer.provide(IdentityServicesLive)
)

/**
 * No identity response may be framed (clickjacking of the sign-in and consent pages); pages set
 * their full policy themselves, everything else gets `frame-ancestors 'none'`. With an https issuer
 * every response also carries HSTS (RFC 6797): a browser that saw it once never again reaches the
 * provider over http, where its session cookie and credentials would be exposed. A year, the
 * duration browsers' preload lists ask for, and the issuer host's subdomains too.
 */
export const HSTS = "max-age=31536000; includeSubDomains"

const withSecurityHeaders = <E, R>(
  app: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>,
  hsts: boolean
): Effect.Effect<HttpServerResponse.HttpServerResponse, E, R | HttpServerRequest.HttpServerRequest> =>
  HttpEffect.appendPreResponseHandler((_request, response) =>
    Effect.succeed(HttpServerResponse.setHeaders(response, {
      "x-frame-options": "DENY",
      "x-content-type-options": "nosniff",
      "content-security-policy": response.headers["content-security-policy"] ?? "frame-ancestors 'none'",
      ...(hsts ? { "strict-transport-security": HSTS } : {})
    }))
  ).pipe(Effect.andThen(app))

const identityRequestMetrics = withRequestMetrics("identity")

/**
 * What wraps every request, outermost first: the hang-up guard, the request id, the request
 * metrics (src/platform/Metrics.ts), the security headers. It is router middleware installed before the error middleware, which makes it the outer
 * one; its headers go on through pre-response handlers, so the error middleware's answers (and a
 * failure that escapes it) get them too.
 */
const IdentityRequestLive = HttpRouter.middleware(
  Effect.map(
    IdentityConfig,
    (config) => (app: Effect.Effect<HttpServerResponse.HttpServerResponse, Types.unhandled>) =>
      completeOnHangUp(withRequestId(identityRequestMetrics(withSecurityHeaders(app, config.hsts))))
  ),
  { global: true }
)

/** Everything but the listening socket: tests put it on an ephemeral port. */
export const IdentityHttpLive = HttpRouter.serve(
  Layer.merge(IdentityApiLive, HttpApiScalar.layer(IdentityApi, { path: "/api/v1/docs" })).pipe(
    Layer.provide(identityErrorMiddleware),
    Layer.provide(IdentityRequestLive)
  ),
  // No log line per request, and the address is logged by `IdentityServerLive` only (tests listen too).
  { disableLogger: true, disableListenLog: true }
).pipe(
  Layer.provide(IdentityConfig.layer),
  Layer.provide(ExactSlashes)
)

/** What a request gets before the application is attached: the envelope's SERVICE_UNAVAILABLE. */
const starting = () => ({
  contentType: "application/json",
  body: JSON.stringify(envelopeFailureBody("SERVICE_UNAVAILABLE").body)
})

export const IdentityServerLive = Layer.unwrap(
  Effect.map(ServerConfig, (config) =>
    listen(HttpServer.withLogAddress(IdentityHttpLive), {
      port: config.identityPort,
      host: config.host,
      starting
    }))
).pipe(Layer.fresh)
