/**
 * The sign-in pages' query strings and form posts (docs/decisions.md, "Identity: pages"). Forms are
 * `application/x-www-form-urlencoded`; every field is an optional string so a page can answer a
 * missing field itself (with the form again, not a JSON error). Each form carries the CSRF token
 * `csrf` of the page that rendered it. A value longer than any browser sends (schema/Identity/Limits.ts)
 * fails decoding: a 400 error page. Forms carry no identifier: the OpenAPI document writes each one
 * inline in its request body, as it always has.
 */
import { Schema } from "effect"
import { Bounded, MaxLength } from "./Limits.js"

/** An optional bounded string of a form or query: a page answers a missing field itself. */
export const field = (maxLength: number, description: string) =>
  Schema.optionalKey(Bounded(maxLength)).annotate({ description })

export const LoginPageParams = Schema.Struct({
  return_to: field(MaxLength.ownUrl, "Where to go after signing in: a path on this server (same origin, relative)."),
  login_hint: field(MaxLength.opaque, "Email to pre-fill."),
  select_account: field(
    MaxLength.keyword,
    "`1`: the client asked to choose an account; offers to continue as the signed-in user."
  )
}).annotate({ identifier: "LoginPageParams" })
export type LoginPageParams = typeof LoginPageParams.Type

export const LoginForm = Schema.Struct({
  csrf: field(MaxLength.csrf, "CSRF token of the page."),
  email: field(MaxLength.email, "Email address."),
  password: field(MaxLength.password, "Password."),
  return_to: field(MaxLength.ownUrl, "Where to go after signing in."),
  pending: field(
    MaxLength.pendingSignIn,
    "The second step of a sign-in with a second factor: the signed pending sign-in the first step gave."
  ),
  otp: field(MaxLength.twoFactorCode, "Second step: the 6-digit code of the authenticator app."),
  recovery_code: field(MaxLength.twoFactorCode, "Second step: a recovery code instead.")
})
export type LoginForm = typeof LoginForm.Type

export const ConsentForm = Schema.Struct({
  csrf: field(MaxLength.csrf, "CSRF token of the page."),
  request: field(MaxLength.ownUrl, "The authorization request's query string, as the consent page received it."),
  decision: field(MaxLength.keyword, "`approve` or `deny`.")
})
export type ConsentForm = typeof ConsentForm.Type

export const LogoutParams = Schema.Struct({
  client_id: field(MaxLength.clientId, "The relying party asking for logout."),
  redirect: field(
    MaxLength.uri,
    "Where to return afterwards; its origin must match a registered redirect URI."
  ),
  post_logout_redirect_uri: field(MaxLength.uri, "OpenID Connect RP-Initiated Logout name for `redirect`."),
  id_token_hint: field(MaxLength.jwt, "An id_token issued to the client; with it no confirmation is asked."),
  state: field(MaxLength.opaque, "Echoed to the return target.")
}).annotate({ identifier: "LogoutParams" })
export type LogoutParams = typeof LogoutParams.Type

export const LogoutForm = Schema.Struct({
  csrf: field(MaxLength.csrf, "CSRF token of the page."),
  decision: field(MaxLength.keyword, "`logout` or `cancel`."),
  client_id: field(MaxLength.clientId, "As received by the page."),
  redirect: field(MaxLength.uri, "As received by the page."),
  state: field(MaxLength.opaque, "As received by the page.")
})
export type LogoutForm = typeof LogoutForm.Type

export const PostLogoutRedirectParams = Schema.Struct({
  client_id: field(MaxLength.clientId, "The relying party."),
  redirect: field(MaxLength.uri, "The return target to validate.")
}).annotate({ identifier: "PostLogoutRedirectParams" })
