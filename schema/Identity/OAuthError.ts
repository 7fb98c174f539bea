/**
 * Protocol errors: bare `{error, error_description}`. The names are the closed
 * union of RFC 6749 sections 4.1.2.1 and 5.2, RFC 6750 section 3.1, RFC 7009 section 2.2.1 and
 * OpenID Connect Core sections 3.1.2.6 and 6.
 */
import { Schema } from "effect"

export const OAuthErrorCode = Schema.Literals([
  // RFC 6749 section 4.1.2.1 (authorization endpoint) and section 5.2 (token endpoint)
  "invalid_request",
  "invalid_client",
  "invalid_grant",
  "unauthorized_client",
  "unsupported_grant_type",
  "unsupported_response_type",
  "invalid_scope",
  "access_denied",
  "server_error",
  "temporarily_unavailable",
  // RFC 6750 section 3.1 (protected resources: userinfo)
  "invalid_token",
  "insufficient_scope",
  // RFC 7009 section 2.2.1 (revocation)
  "unsupported_token_type",
  // OpenID Connect Core 1.0 section 3.1.2.6 (authorization endpoint)
  "interaction_required",
  "login_required",
  "account_selection_required",
  "consent_required",
  // OpenID Connect Core 1.0 sections 6.1 and 6.2: request objects are not supported
  "request_not_supported",
  "request_uri_not_supported"
])
export type OAuthErrorCode = typeof OAuthErrorCode.Type

/** HTTP status that RFC 6749 section 5.2 / RFC 6750 section 3.1 prescribe for each error. */
export const oauthErrorStatus = (error: OAuthErrorCode): number => {
  switch (error) {
    case "invalid_client":
    case "invalid_token":
      return 401
    case "insufficient_scope":
    case "access_denied":
      return 403
    case "server_error":
      return 500
    case "temporarily_unavailable":
      return 503
    default:
      return 400
  }
}

// Each class's fields are a Struct carrying the identifier and description: the OpenAPI document
// shows the encoded Struct, which would otherwise be an undescribed `<Name>Encoded`; the class's
// own description is the one a response takes.

export class OAuthError extends Schema.Class<OAuthError>("OAuthError")(
  Schema.Struct({
    error: OAuthErrorCode,
    error_description: Schema.String.annotate({ description: "Human-readable English; never branch on it." })
  }).annotate({ identifier: "OAuthError", description: "OAuth 2.0 error response (RFC 6749 section 5.2)." }),
  { description: "OAuth 2.0 error response (RFC 6749 section 5.2)." }
) {}
