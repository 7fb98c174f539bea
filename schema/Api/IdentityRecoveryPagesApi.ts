/**
 * The provider's account-recovery pages ("Forgot your password?"): server-rendered HTML with the
 * sign-in pages' rules (no framing, CSRF tokens bound to a cookie, `return_to` only to this server).
 * A form's error comes back as the page, with the error next to its field.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { RecoveryForm, RecoveryPageParams, RecoverySendCodeForm } from "../Identity/RecoveryPages.js"
import { htmlError, HtmlPage, Redirect } from "./IdentityErrors.js"

const expired = htmlError(403, "Invalid CSRF token.")

export class IdentityRecoveryPagesApi extends HttpApiGroup.make("recoveryPages")
  .add(
    HttpApiEndpoint.get("recoveryPage", "/api/v1/ui/password/forgot", {
      query: RecoveryPageParams,
      success: HtmlPage
    })
      .annotate(OpenApi.Summary, "Account recovery page")
      .annotate(
        OpenApi.Description,
        "Asks for the account's email address; with `done=reset`, confirms a reset and links to the sign-in page. " +
          "The sign-in page links here (\"Forgot your password?\"), passing its `return_to` on."
      )
  )
  .add(
    HttpApiEndpoint.post("recoverySendCode", "/api/v1/ui/password/forgot/send-code", {
      payload: RecoverySendCodeForm.pipe(HttpApiSchema.asFormUrlEncoded()),
      success: HtmlPage.annotate({
        description:
          "Step two: the code and new password form. The same page whether or not the address has an account."
      }),
      error: [
        htmlError(400, "Step one again: the address is missing or malformed."),
        expired,
        htmlError(429, "Step one again: codes asked too often for this address or from this client (`Retry-After`).")
      ]
    })
      .annotate(OpenApi.Summary, "Mail a recovery code (form)")
      .annotate(
        OpenApi.Description,
        "When the address has an account, mails it a 6-digit code. The answer is the same for every address: " +
          "step two, saying a code was sent if an account exists."
      )
  )
  .add(
    HttpApiEndpoint.post("submitRecovery", "/api/v1/ui/password/reset", {
      payload: RecoveryForm.pipe(HttpApiSchema.asFormUrlEncoded()),
      success: Redirect(303, "Reset: to this page's confirmation."),
      error: [
        htmlError(400, "Step two again, with the error next to its field: a wrong or expired code, a weak password."),
        expired,
        htmlError(429, "Step two again: the code was tried too many times (`Retry-After` when it applies).")
      ]
    })
      .annotate(OpenApi.Summary, "Reset the password (form)")
      .annotate(
        OpenApi.Description,
        "Sets the new password, ends every session of the account and revokes its refresh tokens at every client, " +
          "and mails its owner a notice."
      )
  )
  .annotate(OpenApi.Title, "Account recovery pages")
  .annotate(
    OpenApi.Description,
    "\"Forgot your password?\": a code mailed to the account's address, then a new password."
  )
{}
