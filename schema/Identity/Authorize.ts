/**
 * The authorization request (SPEC 4.2 "GET /oauth/authorize", RFC 6749 section 4.1.1, RFC 7636
 * section 4.3, OpenID Connect Core section 3.1.2.1). Every parameter is an optional string on the
 * wire: the provider itself decides which failures may go back to the client's `redirect_uri`
 * (RFC 6749 section 4.1.2.1) and which must stop on an error page (unknown client, bad redirect_uri).
 * A repeated parameter fails decoding and stops on the error page (RFC 6749 section 3.1).
 */
import { Schema } from "effect"

const param = (description: string) => Schema.optional(Schema.String).annotations({ description })

export const AuthorizeParams = Schema.Struct({
  client_id: param("Registered client id. Required."),
  redirect_uri: param("Required; must equal a registered redirect URI exactly."),
  response_type: param("Required; fixed `code`."),
  state: param("Required; random value against CSRF, echoed back."),
  scope: param(
    "Space-separated: `openid`, `profile`, `email`, `offline_access` and the catalog scopes (`catalog:read`, ...), " +
      "within the client's allowed scopes. Empty or absent: `profile email`, which is what an empty scope releases."
  ),
  code_challenge: param("PKCE challenge (RFC 7636). Public clients must send one."),
  code_challenge_method: param("`S256` (default) or `plain`."),
  nonce: param("OpenID Connect nonce, copied into the id_token."),
  prompt: param(
    "`login` forces re-authentication; `select_account` (with `login_hint`) switches accounts; `consent` asks " +
      "again; `none` never shows a page."
  ),
  login_hint: param("Email of the account to sign in with (account switching)."),
  max_age: param("Maximum seconds since the user last signed in."),
  response_mode: param("Only `query`."),
  request: param("Not supported: refused with `request_not_supported` (OpenID Connect Core section 6.1)."),
  request_uri: param(
    "Not supported: refused with `request_uri_not_supported` (OpenID Connect Core section 6.2)."
  ),
  auth_after: param(
    "Set by the provider itself when it sends the browser to its sign-in page (a signed instant): a sign-in " +
      "after it satisfies `prompt=login` and `max_age`. Clients do not send it."
  )
}).annotations({ identifier: "AuthorizeParams" })
export type AuthorizeParams = typeof AuthorizeParams.Type
