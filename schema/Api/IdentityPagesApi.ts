/**
 * The provider's own server-rendered pages (docs/decisions.md, "Identity: pages"): sign-in, consent and
 * logout. Each page sends `Content-Security-Policy: frame-ancestors 'none'` and `X-Frame-Options: DENY`;
 * each form carries a CSRF token bound to a cookie (and to the session where there is one).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { AuthorizeParams } from "../Identity/Authorize.js"
import { ConsentForm, LoginForm, LoginPageParams, LogoutForm, LogoutParams } from "../Identity/Pages.js"
import { htmlError, HtmlPage, Redirect } from "./IdentityErrors.js"

export class IdentityPagesApi extends HttpApiGroup.make("pages")
  .add(
    HttpApiEndpoint.get("loginPage", "/api/v1/ui/login", {
      query: LoginPageParams,
      success: HtmlPage
    })
      .annotate(OpenApi.Summary, "Sign-in page")
      .annotate(
        OpenApi.Description,
        "Email and password form. `return_to` (a relative path on this server) is where the browser goes after " +
          "signing in; anything else is ignored. With a live session it also offers to continue as that user."
      )
  )
  .add(
    HttpApiEndpoint.post("submitLogin", "/api/v1/ui/login", {
      payload: LoginForm.pipe(HttpApiSchema.asFormUrlEncoded()),
      success: [
        Redirect(303, "Signed in: to `return_to`."),
        HtmlPage.annotate({
          description: "Signed in without `return_to`: the signed-in page; or, with a second factor on, the page " +
            "asking for its code."
        })
      ],
      error: [
        htmlError(401, "The form again with an error: wrong email or password."),
        htmlError(403, "The form again: banned account, or an invalid CSRF token."),
        htmlError(429, "The form again: too many attempts (`Retry-After`).")
      ]
    })
      .annotate(OpenApi.Summary, "Sign in (form)")
      .annotate(OpenApi.Description, "The sign-in form's target. Sets the session cookie on success.")
  )
  .add(
    HttpApiEndpoint.get("consentPage", "/api/v1/ui/consent", {
      query: AuthorizeParams,
      success: HtmlPage,
      error: [
        htmlError(400, "Error page: bad `redirect_uri` or malformed request."),
        htmlError(404, "Error page: unknown client.")
      ]
    })
      .annotate(OpenApi.Summary, "Consent page")
      .annotate(
        OpenApi.Description,
        "Shows the client's name, logo and the requested scopes with Approve and Deny. Reached from " +
          "`/oauth/authorize` with the same query; needs the session cookie."
      )
  )
  .add(
    HttpApiEndpoint.post("submitConsent", "/api/v1/ui/consent", {
      payload: ConsentForm.pipe(HttpApiSchema.asFormUrlEncoded()),
      success: Redirect(303, "Approve: back to `/oauth/authorize`; deny: to `redirect_uri` with `access_denied`."),
      error: htmlError(403, "Invalid CSRF token.")
    })
      .annotate(OpenApi.Summary, "Approve or deny (form)")
      .annotate(OpenApi.Description, "Remembers the approval for this client and scope set.")
  )
  .add(
    HttpApiEndpoint.get("logoutPage", "/api/v1/ui/logout", {
      query: LogoutParams,
      success: [HtmlPage, Redirect(303, "Nobody is signed in: straight to the allowed return target.")]
    })
      .annotate(OpenApi.Summary, "Logout page")
      .annotate(
        OpenApi.Description,
        "Asks for confirmation, unless a valid `id_token_hint` for the signed-in user is given; then ends the " +
          "session and returns to `redirect` when its origin is registered for `client_id`, else shows a signed-out " +
          "page."
      )
  )
  .add(
    HttpApiEndpoint.post("submitLogout", "/api/v1/ui/logout", {
      payload: LogoutForm.pipe(HttpApiSchema.asFormUrlEncoded()),
      success: Redirect(303, "To the allowed return target."),
      error: htmlError(403, "Invalid CSRF token.")
    })
      .annotate(OpenApi.Summary, "Confirm logout (form)")
      .annotate(OpenApi.Description, "Ends the session (and the refresh families it produced).")
  )
  .add(
    HttpApiEndpoint.get("stylesheet", "/api/v1/ui/style.css", {
      success: Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/css" }))
    })
      .annotate(OpenApi.Summary, "Stylesheet of the pages")
      .annotate(OpenApi.Description, "Served from here so the pages' CSP needs no inline styles.")
  )
  .annotate(OpenApi.Title, "Pages")
  .annotate(OpenApi.Description, "Server-rendered sign-in, consent and logout pages.")
{}
