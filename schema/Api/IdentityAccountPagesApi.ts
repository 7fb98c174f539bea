/**
 * The provider's registration and account pages: server-rendered HTML with the sign-in pages'
 * rules (no framing, CSRF tokens bound to a cookie and the session, `return_to` only to this
 * server). A form's error comes back as the page, with the error next to its field.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import {
  AccountPageParams,
  AvatarForm,
  EmailForm,
  EndSessionForm,
  PasswordForm,
  ProfileForm,
  RegisterForm,
  RegisterPageParams,
  RegisterSendCodeForm
} from "../Identity/AccountPages.js"
import { htmlError, HtmlPage, Redirect } from "./IdentityErrors.js"

const formErrors = [
  htmlError(400, "The page again, with the error next to its field (a wrong code, a weak password...)."),
  htmlError(401, "The page again: the current password is wrong, or the change needs a fresh sign-in."),
  htmlError(403, "Invalid CSRF token."),
  htmlError(409, "The page again: the address is taken."),
  htmlError(429, "The page again: codes asked too often or tried too many times (`Retry-After`).")
] as const

/** The avatar form's refusals: the others, and a file that is no image (as `POST /auth/me/avatar`). */
const avatarFormErrors = [
  ...formErrors,
  htmlError(422, "The page again: the file is not an image (PNG, JPEG, GIF or WebP).")
] as const

/** Both email forms post the same fields (one schema, written inline in each request body). */
const emailForm = EmailForm.pipe(HttpApiSchema.asFormUrlEncoded())

/** A form's target: its fields, a 303 to the next page, or the page again with the error. */
const post = <
  const Name extends string,
  const Path extends `/api/v1/ui/${string}`,
  Form extends HttpApiEndpoint.PayloadConstraintCodecs<"POST">
>(name: Name, path: Path, form: Form, description: string) =>
  HttpApiEndpoint.post(name, path, { payload: form, success: Redirect(303, description), error: formErrors })

export class IdentityAccountPagesApi extends HttpApiGroup.make("accountPages")
  .add(
    HttpApiEndpoint.get("registerPage", "/api/v1/ui/register", {
      query: RegisterPageParams,
      success: HtmlPage
    })
      .annotate(OpenApi.Summary, "Registration page")
      .annotate(
        OpenApi.Description,
        "Step one asks for the email address; with `email` (after a code was sent) step two asks for the code, a " +
          "display name and a password. `return_to` (a path on this server) is where the new user goes."
      )
  )
  .add(
    post(
      "registerSendCode",
      "/api/v1/ui/register/send-code",
      RegisterSendCodeForm.pipe(HttpApiSchema.asFormUrlEncoded()),
      "To step two of the registration page."
    )
      .annotate(OpenApi.Summary, "Send a registration code (form)")
      .annotate(
        OpenApi.Description,
        "Mails a 6-digit code (as `POST /auth/register/send-code`), then shows step two; an error shows step one again."
      )
  )
  .add(
    post(
      "submitRegister",
      "/api/v1/ui/register",
      RegisterForm.pipe(HttpApiSchema.asFormUrlEncoded()),
      "Registered and signed in: to `return_to` or the account page."
    )
      .annotate(OpenApi.Summary, "Create the account (form)")
      .annotate(OpenApi.Description, "Sets the session cookie on success.")
  )
  .add(
    HttpApiEndpoint.get("accountPage", "/api/v1/ui/account", {
      query: AccountPageParams,
      success: HtmlPage,
      error: Redirect(302, "Not signed in: to the sign-in page, which comes back here.")
    })
      .annotate(OpenApi.Summary, "Account page")
      .annotate(
        OpenApi.Description,
        "Profile, avatar, email, password, two-factor authentication and the live sessions, each with its form. Relying parties " +
          "link their users here."
      )
  )
  .add(
    post(
      "saveProfile",
      "/api/v1/ui/account/profile",
      ProfileForm.pipe(HttpApiSchema.asFormUrlEncoded()),
      "Saved: to the account page."
    )
      .annotate(OpenApi.Summary, "Save the profile (form)")
      .annotate(OpenApi.Description, "Display name and bio, as `PATCH /auth/me`.")
  )
  .add(
    HttpApiEndpoint.post("uploadAvatarForm", "/api/v1/ui/account/avatar", {
      payload: AvatarForm.pipe(HttpApiSchema.asMultipart()),
      success: Redirect(303, "Stored: to the account page."),
      error: avatarFormErrors
    })
      .annotate(OpenApi.Summary, "Upload an avatar (form)")
      .annotate(OpenApi.Description, "`multipart/form-data` with `csrf` and `file`; see `POST /auth/me/avatar`.")
  )
  .add(
    post(
      "sendEmailCodeForm",
      "/api/v1/ui/account/email/send-code",
      emailForm,
      "To the account page's code field."
    )
      .annotate(OpenApi.Summary, "Mail a code to a new address (form)")
      .annotate(
        OpenApi.Description,
        "As `POST /auth/email/send-code`; then the page asks for the code. Needs a sign-in younger than 10 minutes."
      )
  )
  .add(
    post(
      "changeEmailForm",
      "/api/v1/ui/account/email",
      emailForm,
      "Changed: to the account page."
    )
      .annotate(OpenApi.Summary, "Change the email (form)")
      .annotate(OpenApi.Description, "As `PUT /auth/email`. Needs a sign-in younger than 10 minutes.")
  )
  .add(
    post(
      "changePasswordForm",
      "/api/v1/ui/account/password",
      PasswordForm.pipe(HttpApiSchema.asFormUrlEncoded()),
      "Changed: to the account page."
    )
      .annotate(OpenApi.Summary, "Change the password (form)")
      .annotate(
        OpenApi.Description,
        "As `PUT /auth/password`: every other session ends. Needs a sign-in younger than 10 minutes."
      )
  )
  .add(
    post(
      "endSessionForm",
      "/api/v1/ui/account/sessions/end",
      EndSessionForm.pipe(HttpApiSchema.asFormUrlEncoded()),
      "Ended: to the account page (or signed out)."
    )
      .annotate(OpenApi.Summary, "End a session (form)")
      .annotate(OpenApi.Description, "As `DELETE /auth/sessions/{id}`; ending this browser's own session signs it out.")
  )
  .annotate(OpenApi.Title, "Account pages")
  .annotate(OpenApi.Description, "Registration and the account page, as HTML.")
{}
