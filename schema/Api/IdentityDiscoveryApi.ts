/**
 * Provider metadata: the OpenID Connect Discovery location and the RFC 8414 location
 * for the issuer `{origin}/api/v1`.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { DiscoveryDocument } from "../Identity/Discovery.js"

export class IdentityDiscoveryApi extends HttpApiGroup.make("discovery")
  .add(
    HttpApiEndpoint.get("openidConfiguration", "/api/v1/.well-known/openid-configuration", {
      success: DiscoveryDocument
    })
      .annotate(OpenApi.Summary, "OpenID Provider configuration")
      .annotate(
        OpenApi.Description,
        "OpenID Connect Discovery 1.0 section 4: `{issuer}/.well-known/openid-configuration`. `issuer` is " +
          "byte-identical to every token's `iss` and to the `iss` authorization response parameter."
      )
  )
  .add(
    HttpApiEndpoint.get("authorizationServerMetadata", "/.well-known/oauth-authorization-server/api/v1", {
      success: DiscoveryDocument
    })
      .annotate(OpenApi.Summary, "OAuth 2.0 Authorization Server Metadata")
      .annotate(
        OpenApi.Description,
        "RFC 8414 section 3.1: the well-known segment inserted between the host and the issuer's path. The same " +
          "document as the OpenID configuration."
      )
  )
  .annotate(OpenApi.Title, "Discovery")
  .annotate(OpenApi.Description, "Provider metadata.")
{}
