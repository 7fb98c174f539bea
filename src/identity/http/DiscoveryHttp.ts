/**
 * Handlers of the `discovery` group: the provider's metadata (schema/Api/IdentityDiscoveryApi.ts),
 * the same document at both locations (OpenID Connect Discovery 1.0 section 4, RFC 8414 section 3),
 * built once; caches may keep it five minutes.
 */
import { Effect } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { makeDiscoveryDocument } from "../oauth/Discovery.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import { answer } from "./Responses.js"

export const HttpDiscoveryLive = HttpApiBuilder.group(IdentityApi, "discovery", (handlers) =>
  Effect.gen(function*() {
    const { issuer } = yield* IdentityConfig
    const document = answer(makeDiscoveryDocument(issuer), { "cache-control": "public, max-age=300" })
    return handlers
      .handle("openidConfiguration", () => document, runToCompletion)
      .handle("authorizationServerMetadata", () => document, runToCompletion)
  }))
