import { Effect } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { IdentityConfig } from "../IdentityConfig.js"
import { makeDiscoveryDocument } from "../oauth/Discovery.js"

/** Both metadata locations serve the same document (OpenID Connect Discovery 1.0 section 4, RFC 8414 section 3). */
export const HttpDiscoveryLive = HttpApiBuilder.group(IdentityApi, "discovery", (handlers) =>
  Effect.gen(function*() {
    const { issuer } = yield* IdentityConfig
    const response = HttpServerResponse.jsonUnsafe(makeDiscoveryDocument(issuer), {
      headers: { "cache-control": "public, max-age=300" }
    })
    return handlers
      .handle("openidConfiguration", () => Effect.succeed(response), runToCompletion)
      .handle("authorizationServerMetadata", () => Effect.succeed(response), runToCompletion)
  }))
