/**
 * The second factor (TOTP, RFC 6238, with recovery codes): envelope endpoints for the signed-in
 * user's Bearer token from `POST /auth/login`, and the set-up page for the session cookie. Every
 * change needs a sign-in younger than 10 minutes; turning the factor on or off and new recovery
 * codes also need the current password. Turning it on or off ends every other sign-in of the
 * account (sessions and relying parties' refresh tokens) and mails the owner.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  RecoveryCodesResponse,
  TwoFactorCodeRequest,
  TwoFactorForm,
  TwoFactorRemovedResponse,
  TwoFactorSetupResponse
} from "../Identity/TwoFactor.js"
import { envelopeError, htmlError, HtmlPage, Redirect } from "./IdentityErrors.js"

const recent = envelopeError(
  401,
  "10001/10002/10003 token problems; 10016 the sign-in is older than 10 minutes " +
    "(`WWW-Authenticate: Bearer error=\"insufficient_user_authentication\", max_age=600`, RFC 9470)."
)
const proven = envelopeError(
  401,
  "10001/10002/10003 token problems; 10016 the sign-in is older than 10 minutes " +
    "(`WWW-Authenticate: Bearer error=\"insufficient_user_authentication\", max_age=600`, RFC 9470); " +
    "10011 `current_password` is wrong; 10015 the code is wrong or already used."
)
const throttled = envelopeError(
  429,
  "10012: too many wrong codes, or wrong passwords (five, then one a minute, shared with password changes), " +
    "for this account; `Retry-After`."
)
const malformed = envelopeError(400, "40001: the body is not `{code, current_password}` JSON.")

export class IdentityTwoFactorApi extends HttpApiGroup.make("twoFactor")
  .add(
    HttpApiEndpoint.post("setup", "/api/v1/auth/2fa/setup", {
      success: TwoFactorSetupResponse,
      error: [
        recent,
        envelopeError(409, "40901: a second factor is already on (remove it first).")
      ]
    })
      .annotate(OpenApi.Summary, "Start setting up a second factor")
      .annotate(
        OpenApi.Description,
        "A new TOTP key (HMAC-SHA-1, 6 digits, 30 seconds), as base32, as an `otpauth://` URI and as a QR code " +
          "(SVG). It is pending until `POST /auth/2fa/enable` confirms it with a first code (within 15 minutes); " +
          "calling this again replaces it."
      )
  )
  .add(
    HttpApiEndpoint.post("enable", "/api/v1/auth/2fa/enable", {
      payload: TwoFactorCodeRequest,
      success: RecoveryCodesResponse,
      error: [
        malformed,
        proven,
        envelopeError(409, "40901: no set-up is pending, or a second factor is already on."),
        throttled
      ]
    })
      .annotate(OpenApi.Summary, "Turn the second factor on")
      .annotate(
        OpenApi.Description,
        "Confirms the pending key with a current code from the app, after the current password. From now on " +
          "sign-in asks for a code. Answers ten recovery codes, shown only this once. Every other session of the " +
          "account ends and every refresh token it holds at any client is revoked; the owner is mailed."
      )
  )
  .add(
    HttpApiEndpoint.delete("disable", "/api/v1/auth/2fa", {
      payload: TwoFactorCodeRequest,
      success: TwoFactorRemovedResponse,
      error: [
        malformed,
        proven,
        envelopeError(409, "40901: no second factor is on."),
        throttled
      ]
    })
      .annotate(OpenApi.Summary, "Turn the second factor off")
      .annotate(
        OpenApi.Description,
        "Removes the key and the recovery codes after the current password and a current code or a recovery code " +
          "(`{code, current_password}` in the body). Every other session of the account ends and every refresh " +
          "token it holds at any client is revoked; the owner is mailed."
      )
  )
  .add(
    HttpApiEndpoint.post("recoveryCodes", "/api/v1/auth/2fa/recovery-codes", {
      payload: TwoFactorCodeRequest,
      success: RecoveryCodesResponse,
      error: [
        malformed,
        proven,
        envelopeError(409, "40901: no second factor is on."),
        throttled
      ]
    })
      .annotate(OpenApi.Summary, "New recovery codes")
      .annotate(
        OpenApi.Description,
        "After the current password and a current code or a recovery code, ten new recovery codes replace all " +
          "earlier ones."
      )
  )
  .annotate(OpenApi.Title, "Second factor")
  .annotate(OpenApi.Description, "TOTP (RFC 6238) and recovery codes for the signed-in user.")
{}

export class IdentityTwoFactorPagesApi extends HttpApiGroup.make("twoFactorPages")
  .add(
    HttpApiEndpoint.get("twoFactorPage", "/api/v1/ui/account/two-factor", {
      success: HtmlPage,
      error: Redirect(302, "Not signed in, or the sign-in is older than 10 minutes: to the sign-in page.")
    })
      .annotate(OpenApi.Summary, "Second factor page")
      .annotate(
        OpenApi.Description,
        "With the session cookie of a sign-in younger than 10 minutes: without a factor, a pending set-up's QR " +
          "code and key with a form for the first code; with one, forms to remove it or renew the recovery codes."
      )
  )
  .add(
    HttpApiEndpoint.post("submitTwoFactor", "/api/v1/ui/account/two-factor", {
      payload: TwoFactorForm.pipe(HttpApiSchema.asFormUrlEncoded()),
      success: HtmlPage,
      error: [
        htmlError(400, "The page again: the code or the current password is missing."),
        htmlError(401, "The page again: the current password is wrong, or the code is wrong or already used."),
        htmlError(403, "Invalid CSRF token."),
        htmlError(429, "The page again: too many wrong codes or passwords (`Retry-After`).")
      ]
    })
      .annotate(OpenApi.Summary, "Change the second factor (form)")
      .annotate(
        OpenApi.Description,
        "Turns the factor on (showing the recovery codes once), off, or renews the recovery codes; each needs a " +
          "code and the current password. Turning it on or off ends every other sign-in of the account and mails " +
          "the owner."
      )
  )
  .annotate(OpenApi.Title, "Second factor pages")
  .annotate(OpenApi.Description, "Server-rendered set-up of the second factor.")
{}
