/**
 * The protocol endpoints of the identity provider (docs/decisions.md, "Identity: protocol"). Success
 * and failure bodies are bare JSON (RFC 6749 / 6750 / 7009), never the envelope.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { AuthorizeParams } from "../Identity/Authorize.js"
import { Jwks } from "../Identity/Discovery.js"
import { LogoutParams, PostLogoutRedirectParams } from "../Identity/Pages.js"
import { RevokeRequest, TokenRequest, TokenResponse } from "../Identity/Token.js"
import { UserInfo } from "../Identity/UserInfo.js"
import { envelopeError, htmlError, oauthError, Redirect } from "./IdentityErrors.js"

/** The per-address limit of userinfo and revocation (src/identity/ratelimit/AddressLimits.ts). */
const addressLimited = oauthError(
  429,
  "`temporarily_unavailable`: too many requests from this address; wait as `Retry-After` says."
)

/** What userinfo refuses (RFC 6750 section 3.1), each with `WWW-Authenticate: Bearer` (section 3). */
const userinfoErrors = [
  oauthError(400, "`invalid_request`: the `Authorization` header is not a Bearer credential."),
  oauthError(401, "`invalid_token` with `WWW-Authenticate: Bearer` (RFC 6750 section 3)."),
  addressLimited
]

export class IdentityOAuthApi extends HttpApiGroup.make("oauth")
  .add(
    HttpApiEndpoint.get("authorize", "/api/v1/oauth/authorize", {
      query: AuthorizeParams,
      success: Redirect(
        302,
        "To `redirect_uri` with `code`, `state` and `iss` (RFC 9207); or with `error` per RFC 6749 section " +
          "4.1.2.1; or to the sign-in or consent page."
      ),
      error: [
        htmlError(400, "Error page: bad `redirect_uri` or malformed request. Never redirects."),
        htmlError(404, "Error page: unknown client. Never redirects."),
        oauthError(401, "`invalid_token`: the Bearer token is invalid, expired or revoked.")
      ]
    })
      .annotate(OpenApi.Summary, "Obtain an authorization code")
      .annotate(
        OpenApi.Description,
        "Authorization Code flow with PKCE (RFC 6749 section 4.1, RFC 7636). The user is identified by a Bearer " +
          "access token from `POST /auth/login` or by the provider's session cookie; without either a browser is " +
          "sent to the sign-in page and comes back. `redirect_uri` must equal a registered URI exactly; an unknown " +
          "client or a mismatched `redirect_uri` shows an error page and never redirects. Consent is asked once per " +
          "client and scope set unless the client is auto-consent. The code is 64 hex characters, single use, " +
          "valid 10 minutes, bound to the client, the redirect URI and the PKCE challenge (S256 by default)."
      )
  )
  .add(
    HttpApiEndpoint.post("token", "/api/v1/oauth/token", {
      // RFC 6749 section 4.1.3 sends the form encoding; JSON is accepted too.
      payload: [TokenRequest, TokenRequest.pipe(HttpApiSchema.asFormUrlEncoded())],
      success: TokenResponse,
      error: [
        oauthError(400, "`invalid_request`, `invalid_grant`, `unsupported_grant_type`, `invalid_scope`."),
        oauthError(401, "`invalid_client`: client authentication failed."),
        oauthError(429, "Too many requests for this client_id; wait as `Retry-After` says.")
      ]
    })
      .annotate(OpenApi.Summary, "Exchange a code or a refresh token")
      .annotate(
        OpenApi.Description,
        "Grants `authorization_code` and `refresh_token`. The body is JSON or " +
          "`application/x-www-form-urlencoded` (RFC 6749). Client authentication: `client_secret_basic`, " +
          "`client_secret_post`, or none for a public client (PKCE required). Access tokens are RS256 JWTs " +
          "(`typ: at+jwt`, RFC 9068) valid 900 s; the refresh token is opaque and rotated on every use; reusing a " +
          "rotated one revokes its whole family (RFC 9700 section 4.14.2). `id_token` when the scope has `openid`. " +
          "Responses carry `Cache-Control: no-store`. Rate limited per client_id (token bucket), never per IP."
      )
  )
  .add(
    HttpApiEndpoint.get("userinfo", "/api/v1/oauth/userinfo", {
      success: UserInfo,
      error: userinfoErrors
    })
      .annotate(OpenApi.Summary, "Read user information")
      .annotate(
        OpenApi.Description,
        "`Authorization: Bearer <access token>`. Always `id`, `sub`, `roles`, `updated_at`; `name` and `picture` " +
          "with scope `profile` or an empty scope; `email` with scope `email` or an empty scope; `site_roles` " +
          "scoped to the token's site, omitted when none. Tokens of a revoked family are refused."
      )
  )
  .add(
    HttpApiEndpoint.post("userinfoPost", "/api/v1/oauth/userinfo", {
      success: UserInfo,
      error: userinfoErrors
    })
      .annotate(OpenApi.Summary, "Read user information (POST)")
      .annotate(OpenApi.Description, "The same as GET (OpenID Connect Core section 5.3.1).")
  )
  .add(
    HttpApiEndpoint.post("revoke", "/api/v1/oauth/revoke", {
      // RFC 7009 section 2.1 sends the form encoding; JSON is accepted too.
      payload: [RevokeRequest, RevokeRequest.pipe(HttpApiSchema.asFormUrlEncoded())],
      success: HttpApiSchema.Empty(200).annotate({ description: "Always, whether or not anything was revoked." }),
      error: [
        oauthError(400, "`invalid_request`: no `token`."),
        oauthError(401, "`invalid_client`: client credentials were sent and are wrong."),
        addressLimited
      ]
    })
      .annotate(OpenApi.Summary, "Revoke a token")
      .annotate(
        OpenApi.Description,
        "RFC 7009. Body `{token}` as JSON or form. Revoking a refresh token (or an access token) ends its whole " +
          "family: userinfo and the catalog stop accepting the family's access tokens. 200 for a valid, unknown or " +
          "malformed token, and for another client's token (which is left alone)."
      )
  )
  .add(
    HttpApiEndpoint.get("logout", "/api/v1/oauth/logout", {
      query: LogoutParams,
      success: Redirect(302, "To the provider's logout page, with the same parameters.")
    })
      .annotate(OpenApi.Summary, "RP-initiated logout entry")
      .annotate(
        OpenApi.Description,
        "A relying party navigates the browser here with `client_id` and `redirect` (or the OpenID names " +
          "`post_logout_redirect_uri`, `id_token_hint`, `state`). The logout page asks for confirmation unless a " +
          "valid `id_token_hint` is given, ends the session, then returns to `redirect` only when its origin " +
          "matches a registered redirect URI of `client_id`."
      )
  )
  .add(
    HttpApiEndpoint.get("postLogoutRedirect", "/api/v1/oauth/post-logout-redirect", {
      query: PostLogoutRedirectParams,
      success: Redirect(302, "To `redirect`: its origin matches a registered redirect URI of `client_id`."),
      error: [
        envelopeError(400, "15004: the target is not allowed (never redirects); 15007: parameters missing."),
        envelopeError(404, "15001: unknown client.")
      ]
    })
      .annotate(OpenApi.Summary, "Validate a logout return target")
      .annotate(
        OpenApi.Description,
        "Redirects to `redirect` when its origin (scheme, host, port) equals the origin of one of the client's " +
          "registered redirect URIs; otherwise answers an envelope error and never redirects."
      )
  )
  .add(
    HttpApiEndpoint.get("jwks", "/api/v1/oauth/jwks", {
      success: Jwks
    })
      .annotate(OpenApi.Summary, "Signing keys (JWKS)")
      .annotate(
        OpenApi.Description,
        "The RS256 public keys (RFC 7517) that verify access tokens and id_tokens: the active key, a rotated-in " +
          "key before it signs, and retired keys until every token they signed has expired."
      )
  )
  .annotate(OpenApi.Title, "OAuth 2.0 / OpenID Connect")
  .annotate(OpenApi.Description, "Protocol endpoints; bare RFC JSON.")
{}
