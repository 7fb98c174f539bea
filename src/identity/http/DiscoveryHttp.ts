import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import { DiscoveryDocument } from "../../../schema/Identity/Discovery.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { makeDiscoveryDocument } from "../oauth/Discovery.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import { jsonAnswer } from "./Responses.js"

/** Encoded by the success both endpoints declare (schema/Api/IdentityDiscoveryApi.ts). */
const discoveryAnswer = jsonAnswer(DiscoveryDocument)

/** Both metadata locations serve the same document (OpenID Connect Discovery 1.0 section 4, RFC 8414 section 3). */
export const HttpDiscoveryLive = HttpApiBuilder.group(IdentityApi, "discovery", (handlers) =>
  Effect.gen(function*() {
    const { issuer } = yield* IdentityConfig
    const response = discoveryAnswer(makeDiscoveryDocument(issuer), {
      headers: { "cache-control": "public, max-age=300" }
    })
    return handlers
      .handle("openidConfiguration", () => Effect.succeed(response), runToCompletion)
      .handle("authorizationServerMetadata", () => Effect.succeed(response), runToCompletion)
  }))
