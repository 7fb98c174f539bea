/**
 * The provider metadata document (docs/decisions.md, "Identity: protocol"), derived from the issuer
 * so every URL and the `issuer` value are byte-identical to the tokens' `iss`.
 */
import { DiscoveryDocument } from "../../../schema/Identity/Discovery.js"
import { SUPPORTED_SCOPES } from "../shared/Scopes.js"

export const makeDiscoveryDocument = (issuer: string): DiscoveryDocument =>
  new DiscoveryDocument({
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    userinfo_endpoint: `${issuer}/oauth/userinfo`,
    jwks_uri: `${issuer}/oauth/jwks`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    end_session_endpoint: `${issuer}/oauth/logout`,
    response_types_supported: ["code"],
    response_modes_supported: ["query"],
    grant_types_supported: ["authorization_code", "refresh_token"],
    subject_types_supported: ["public"],
    id_token_signing_alg_values_supported: ["RS256"],
    scopes_supported: [...SUPPORTED_SCOPES],
    claims_supported: [
      "iss",
      "sub",
      "aud",
      "exp",
      "iat",
      "auth_time",
      "nonce",
      "at_hash",
      "azp",
      "name",
      "email",
      "email_verified",
      "picture",
      "updated_at",
      "roles",
      "site_roles"
    ],
    token_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
    revocation_endpoint_auth_methods_supported: ["client_secret_basic", "client_secret_post", "none"],
    code_challenge_methods_supported: ["S256", "plain"],
    // RFC 9207: the authorize redirect carries `iss`; openid-client and oauth4webapi check it.
    authorization_response_iss_parameter_supported: true,
    // OIDC Core 6.1 / 6.2: request objects are refused (`request_not_supported`, `request_uri_not_supported`).
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    claims_parameter_supported: false
  })
