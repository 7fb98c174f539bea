/**
 * The account-recovery pages' query string and form posts ("Forgot your password?"). Like the other
 * pages (schema/Identity/Pages.ts), forms are `application/x-www-form-urlencoded` and every field is
 * an optional bounded string, so a page answers a missing field itself, with the form and the error
 * next to the field. Forms carry no identifier (written inline in the OpenAPI document, as there).
 */
import { Schema } from "effect"
import { MaxLength } from "./Limits.js"
import { field } from "./Pages.js"

const csrf = field(MaxLength.csrf, "CSRF token of the page.")

/** The recovery in progress, as the first step gave it: `PendingValue` of schema/Identity/Me.ts. */
const PENDING_MAX_LENGTH = 128

export const RecoveryPageParams = Schema.Struct({
  return_to: field(MaxLength.ownUrl, "Where to sign in to once the password is reset: a path on this server."),
  email: field(MaxLength.email, "Email to pre-fill."),
  done: field(MaxLength.keyword, "`reset`: the password was just reset; shows the confirmation.")
}).annotate({ identifier: "RecoveryPageParams" })
export type RecoveryPageParams = typeof RecoveryPageParams.Type

export const RecoverySendCodeForm = Schema.Struct({
  csrf,
  email: field(MaxLength.email, "The account's address."),
  return_to: field(MaxLength.ownUrl, "Kept for the second step.")
})
export type RecoverySendCodeForm = typeof RecoverySendCodeForm.Type

export const RecoveryForm = Schema.Struct({
  csrf,
  pending: field(PENDING_MAX_LENGTH, "The recovery the first step started (a hidden field of the second step)."),
  email: field(MaxLength.email, "The address the code was asked for, shown again on an error."),
  code: field(16, "The 6-digit code from the mail."),
  password: field(MaxLength.password, "The new password."),
  return_to: field(MaxLength.ownUrl, "Kept for the sign-in link of the confirmation.")
})
export type RecoveryForm = typeof RecoveryForm.Type
