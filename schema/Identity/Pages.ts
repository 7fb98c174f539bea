/**
 * The sign-in pages' query strings and form posts (DECISIONS 12). Forms are
 * `application/x-www-form-urlencoded`; every field is an optional string so a page can answer a
 * missing field itself (with the form again, not a JSON error). Each form carries the CSRF token
 * `csrf` of the page that rendered it.
 */
import { Schema } from "effect"

const field = (description: string) => Schema.optional(Schema.String).annotations({ description })

export const LoginPageParams = Schema.Struct({
  return_to: field("Where to go after signing in: a path on this server (same origin, relative)."),
  login_hint: field("Email to pre-fill."),
  select_account: field("`1`: the client asked to choose an account; offers to continue as the signed-in user.")
}).annotations({ identifier: "LoginPageParams" })
export type LoginPageParams = typeof LoginPageParams.Type

export const LoginForm = Schema.Struct({
  csrf: field("CSRF token of the page."),
  email: field("Email address."),
  password: field("Password."),
  return_to: field("Where to go after signing in.")
}).annotations({ identifier: "LoginForm" })
export type LoginForm = typeof LoginForm.Type

export const ConsentForm = Schema.Struct({
  csrf: field("CSRF token of the page."),
  request: field("The authorization request's query string, as the consent page received it."),
  decision: field("`approve` or `deny`.")
}).annotations({ identifier: "ConsentForm" })
export type ConsentForm = typeof ConsentForm.Type

export const LogoutParams = Schema.Struct({
  client_id: field("The relying party asking for logout."),
  redirect: field("Where to return afterwards (SPEC 4.2); its origin must match a registered redirect URI."),
  post_logout_redirect_uri: field("OpenID Connect RP-Initiated Logout name for `redirect`."),
  id_token_hint: field("An id_token issued to the client; with it no confirmation is asked."),
  state: field("Echoed to the return target.")
}).annotations({ identifier: "LogoutParams" })
export type LogoutParams = typeof LogoutParams.Type

export const LogoutForm = Schema.Struct({
  csrf: field("CSRF token of the page."),
  decision: field("`logout` or `cancel`."),
  client_id: field("As received by the page."),
  redirect: field("As received by the page."),
  state: field("As received by the page.")
}).annotations({ identifier: "LogoutForm" })
export type LogoutForm = typeof LogoutForm.Type

export const PostLogoutRedirectParams = Schema.Struct({
  client_id: field("The relying party."),
  redirect: field("The return target to validate.")
}).annotations({ identifier: "PostLogoutRedirectParams" })
