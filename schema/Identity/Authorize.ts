/**
 * The authorization request (`GET /oauth/authorize`, RFC 6749 section 4.1.1, RFC 7636
 * section 4.3, OpenID Connect Core section 3.1.2.1). Every parameter is an optional string on the
 * wire: the provider itself decides which failures may go back to the client's `redirect_uri`
 * (RFC 6749 section 4.1.2.1) and which must stop on an error page (unknown client, bad redirect_uri).
 * A repeated parameter fails decoding and stops on the error page (RFC 6749 section 3.1), and so
 * does a value longer than any client sends (schema/Identity/Limits.ts).
 */
import { Schema } from "effect"
import { Bounded, MaxLength } from "./Limits.js"

const param = (description: string, maxLength: number = MaxLength.opaque) =>
  Schema.optionalKey(Bounded(maxLength)).annotate({ description })

export const AuthorizeParams = Schema.Struct({
  client_id: param("Registered client id. Required.", MaxLength.clientId),
  redirect_uri: param("Required; must equal a registered redirect URI exactly.", MaxLength.uri),
  response_type: param("Required; fixed `code`.", MaxLength.keyword),
  state: param("Required; random value against CSRF, echoed back."),
  scope: param(
    "Space-separated: `openid`, `profile`, `email`, `offline_access` and the catalog scopes (`catalog:read`, ...), " +
      "within the client's allowed scopes. Empty or absent: `profile email`, which is what an empty scope releases.",
    MaxLength.scope
  ),
  code_challenge: param("PKCE challenge (RFC 7636). Public clients must send one.", MaxLength.codeVerifier),
  code_challenge_method: param("`S256` (default) or `plain`.", MaxLength.keyword),
  nonce: param("OpenID Connect nonce, copied into the id_token."),
  prompt: param(
    "`login` forces re-authentication; `select_account` (with `login_hint`) switches accounts; `consent` asks " +
      "again; `none` never shows a page.",
    MaxLength.keyword
  ),
  login_hint: param("Email of the account to sign in with (account switching)."),
  max_age: param("Maximum seconds since the user last signed in.", MaxLength.keyword),
  response_mode: param("Only `query`.", MaxLength.keyword),
  request: param(
    "Not supported: refused with `request_not_supported` (OpenID Connect Core section 6.1).",
    MaxLength.jwt
  ),
  request_uri: param(
    "Not supported: refused with `request_uri_not_supported` (OpenID Connect Core section 6.2).",
    MaxLength.uri
  ),
  auth_after: param(
    "Set by the provider itself when it sends the browser to its sign-in page (a signed instant): a sign-in " +
      "after it satisfies `prompt=login` and `max_age`. Clients do not send it.",
    MaxLength.keyword
  )
}).annotate({ identifier: "AuthorizeParams" })
export type AuthorizeParams = typeof AuthorizeParams.Type
