/**
 * The catalog server stack: the HttpApi implementation, its middleware, OpenAPI and docs, on
 * its own port. Built fresh (`Layer.fresh`) so it never shares a router with the identity server.
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServer } from "effect/http"
import { HttpApiBuilder, HttpApiScalar } from "effect/http-api"
import { CatalogApi, CatalogApiDocumented } from "../../schema/Api/CatalogApi.js"
import { withCompression } from "../platform/Compression.js"
import { ServerConfig } from "../platform/Config.js"
import { healthHandlers } from "../platform/Health.js"
import { completeOnHangUp, listen, runToCompletion } from "../platform/HttpListener.js"
import { withRequestMetrics } from "../platform/Metrics.js"
import { problemMiddleware, problemResponsesLayer, startingProblem } from "../platform/ProblemMiddleware.js"
import { withRequestId } from "../platform/RequestId.js"
import { ExactSlashes, RouteTable } from "../platform/RouteTable.js"
import {
  AuthorizationLive,
  Credentials,
  SiteWriteAuthorizationLive,
  WriteAuthorizationLive
} from "./auth/Authorization.js"
import { HttpCredentialsLive } from "./auth/Http.js"
import { HttpCalendarLive } from "./calendar/Http.js"
import { HttpCharactersLive } from "./characters/Http.js"
import { HttpClaimGroupsLive } from "./claims/Http.js"
import { HttpCompaniesLive } from "./companies/Http.js"
import { HttpCreditNamesLive } from "./credits/Http.js"
import { HttpEnginesLive } from "./engines/Http.js"
import { RequestBudget } from "./limits/RequestBudget.js"
import { HttpMediaLive } from "./media/Http.js"
import { HttpMirrorLive } from "./mirror/Http.js"
import { HttpNewsGroupsLive } from "./news/Http.js"
import { HttpPersonsLive } from "./persons/Http.js"
import { HttpPlaytimesLive } from "./playtimes/Http.js"
import { HttpProblemsLive } from "./problems/Http.js"
import { HttpProposalGroupsLive } from "./proposals/Http.js"
import { HttpReleasesLive } from "./releases/Http.js"
import { PgSearchIndexLive } from "./search/PgSearchIndex.js"
import { ReadCache } from "./shared/ReadCache.js"
import { ReplayLive } from "./shared/Replay.js"
import { HttpStatsLive } from "./stats/Http.js"
import { HttpTagsLive } from "./tags/Http.js"
import { HttpCoverVotesLive } from "./votes/Http.js"
import { HttpWorksLive } from "./works/Http.js"
import { Writes } from "./writes/Writes.js"

export const catalogRoutes = RouteTable.fromApi(CatalogApiDocumented)

const HttpHealthLive = HttpApiBuilder.group(
  CatalogApi,
  "health",
  (handlers) =>
    Effect.map(
      healthHandlers,
      (h) => handlers.handle("healthz", h.healthz, runToCompletion).handle("readyz", h.readyz, runToCompletion)
    )
)

/** The API's routes, with the OpenAPI document at `/v2/openapi.json`. */
export const CatalogApiLive = HttpApiBuilder.layer(CatalogApiDocumented, { openapiPath: "/v2/openapi.json" }).pipe(
  Layer.provide([
    HttpHealthLive,
    HttpProblemsLive,
    HttpCredentialsLive,
    HttpWorksLive,
    HttpMirrorLive,
    HttpCompaniesLive,
    HttpEnginesLive,
    HttpTagsLive,
    HttpReleasesLive,
    HttpCalendarLive,
    HttpStatsLive,
    HttpCharactersLive,
    HttpCreditNamesLive,
    HttpPersonsLive,
    HttpClaimGroupsLive,
    HttpProposalGroupsLive,
    HttpCoverVotesLive,
    HttpNewsGroupsLive,
    HttpPlaytimesLive,
    HttpMediaLive
  ]),
  Layer.provide(Layer.mergeAll(ReplayLive(catalogRoutes), Writes.layer, PgSearchIndexLive)),
  // The endpoint middleware: the credential checks, and the problem responses around them.
  Layer.provideMerge(
    Layer.mergeAll(
      AuthorizationLive(catalogRoutes),
      WriteAuthorizationLive(catalogRoutes),
      SiteWriteAuthorizationLive(catalogRoutes),
      problemResponsesLayer
    )
  ),
  Layer.provideMerge(
    Layer.mergeAll(Credentials.layer, ReadCache.layer, RequestBudget.layer)
  )
)

const catalogRequestMetrics = withRequestMetrics("catalog")

/**
 * What wraps every request, outermost first: the hang-up guard, the request id, the request
 * metrics, compression. It is router middleware (the server's own middleware runs after the response
 * is sent, so it could not change it) and installed before the problem middleware, which makes it
 * the outer one.
 */
const CatalogRequestLive = HttpRouter.middleware(
  (app) => completeOnHangUp(withRequestId(catalogRequestMetrics(withCompression(app)))),
  { global: true }
)

/** Everything but the listening socket: tests put it on an ephemeral port. */
export const CatalogHttpLive = HttpRouter.serve(
  Layer.merge(CatalogApiLive, HttpApiScalar.layer(CatalogApiDocumented, { path: "/v2/docs" })).pipe(
    Layer.provide(problemMiddleware(catalogRoutes)),
    Layer.provide(CatalogRequestLive)
  ),
  // No log line per request, and the address is logged by `CatalogServerLive` only (tests listen too).
  { disableLogger: true, disableListenLog: true }
).pipe(Layer.provide(ExactSlashes))

export const CatalogServerLive = Layer.unwrap(
  Effect.map(
    ServerConfig,
    (config) =>
      listen(HttpServer.withLogAddress(CatalogHttpLive), {
        port: config.catalogPort,
        host: config.host,
        starting: startingProblem({ docsUrl: config.docsUrl, publicUrl: config.catalogPublicUrl })
      })
  )
).pipe(Layer.fresh)
