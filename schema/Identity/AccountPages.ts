/**
 * The registration and account pages' query strings and form posts. Like the sign-in pages
 * (schema/Identity/Pages.ts), forms are `application/x-www-form-urlencoded` and every field is an
 * optional bounded string, so a page answers a missing field itself, with the form and the error
 * next to the field. Forms carry no identifier (written inline in the OpenAPI document, as there).
 */
import { Schema } from "effect"
import { Multipart } from "effect/http"
import { MaxLength } from "./Limits.js"
import { ProfileLength } from "./Me.js"
import { field } from "./Pages.js"

const csrf = field(MaxLength.csrf, "CSRF token of the page.")

export const RegisterPageParams = Schema.Struct({
  return_to: field(MaxLength.ownUrl, "Where to go once registered: a path on this server."),
  email: field(MaxLength.email, "The address a code was sent to: shows the second step.")
}).annotate({ identifier: "RegisterPageParams" })
export type RegisterPageParams = typeof RegisterPageParams.Type

export const RegisterSendCodeForm = Schema.Struct({
  csrf,
  email: field(MaxLength.email, "Address to register."),
  return_to: field(MaxLength.ownUrl, "Kept for the second step.")
})
export type RegisterSendCodeForm = typeof RegisterSendCodeForm.Type

/**
 * The second step of registration. The pending value of the code (src/identity/account/EmailCodes.ts)
 * is not a field: the first step's answer keeps it in an HttpOnly cookie scoped like the session's.
 */
export const RegisterForm = Schema.Struct({
  csrf,
  email: field(MaxLength.email, "Address the code was sent to."),
  code: field(16, "The 6-digit code from the mail."),
  name: field(ProfileLength.name, "Display name."),
  password: field(MaxLength.password, "New password."),
  return_to: field(MaxLength.ownUrl, "Where to go once registered.")
})
export type RegisterForm = typeof RegisterForm.Type

export const AccountPageParams = Schema.Struct({
  done: field(MaxLength.keyword, "Which change just succeeded: shows its confirmation."),
  email: field(MaxLength.email, "A new address a code was just sent to: shows the code field.")
}).annotate({ identifier: "AccountPageParams" })
export type AccountPageParams = typeof AccountPageParams.Type

export const ProfileForm = Schema.Struct({
  csrf,
  name: field(ProfileLength.name, "Display name."),
  bio: field(ProfileLength.bio, "A few words.")
})
export type ProfileForm = typeof ProfileForm.Type

export const EmailForm = Schema.Struct({
  csrf,
  email: field(MaxLength.email, "The new address."),
  code: field(16, "The code mailed to it (second step)."),
  current_password: field(MaxLength.password, "The current password (second step)."),
  two_factor_code: field(
    MaxLength.twoFactorCode,
    "Instead of the password, with a second factor on: an authenticator or recovery code (second step)."
  )
})
export type EmailForm = typeof EmailForm.Type

export const PasswordForm = Schema.Struct({
  csrf,
  current_password: field(MaxLength.password, "The current password."),
  new_password: field(MaxLength.password, "The new password.")
})
export type PasswordForm = typeof PasswordForm.Type

export const EndSessionForm = Schema.Struct({
  csrf,
  id: field(64, "The session to end.")
})
export type EndSessionForm = typeof EndSessionForm.Type

export const AvatarForm = Schema.Struct({
  csrf,
  file: Multipart.SingleFileSchema
})
