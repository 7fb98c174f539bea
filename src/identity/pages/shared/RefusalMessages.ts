/**
 * What a person reads on the account and recovery pages for each refusal of the account services,
 * and the field it is shown next to; a code without an entry shows its envelope message on the form.
 * The pages reach it through `FormValidation.refusal` (src/identity/pages/forms/FormValidation.ts).
 */
import type { EnvelopeCodeName } from "../../../../schema/Identity/Envelope.js"
import { EnvelopeCodes } from "../../../../schema/Identity/Envelope.js"
import type { Refused } from "../../shared/Refused.js"
import type { FieldErrors } from "./FormFields.js"

/** What a person reads for each refusal, and the field it belongs to. */
const MESSAGES: Partial<Record<EnvelopeCodeName, { readonly field: string; readonly message: string }>> = {
  CODE_REQUESTED_TOO_SOON: {
    field: "email",
    message: "Codes were asked for too often, for this address or from here. Wait a little, then try again."
  },
  VERIFICATION_CODE_INVALID: {
    field: "code",
    message: "This code is wrong or has expired. Check the mail, or ask for a new code."
  },
  TOO_MANY_ATTEMPTS: {
    field: "code",
    message: "Too many wrong tries. Ask for a new code, or wait before trying again."
  },
  WEAK_PASSWORD: {
    field: "password",
    message: "Choose a stronger password: at least 8 characters, not a common password, not your email or name."
  },
  EMAIL_TAKEN: { field: "email", message: "Another account uses this email address." },
  WRONG_PASSWORD: { field: "current_password", message: "This is not your current password." },
  TWO_FACTOR_INVALID: {
    field: "two_factor_code",
    message: "This code is wrong or was already used. Wait for the next one in your app, or use a recovery code."
  },
  REAUTHENTICATION_REQUIRED: {
    field: "reauthenticate",
    message: "For your safety, this change needs a recent sign-in. Sign in again, then make the change."
  },
  INVALID_REQUEST: { field: "form", message: "Check the form: a field is missing or too long." },
  NOT_FOUND: { field: "form", message: "That session has already ended." },
  IMAGE_INVALID: {
    field: "avatar",
    message: "This file is not a picture we can use: choose a JPEG, PNG, WebP, AVIF or GIF image."
  },
  PAYLOAD_TOO_LARGE: { field: "avatar", message: "This file is too large." }
}

/** The refusal as field errors, next to its field (or `fieldOverride`). */
export const messageOf = (refusal: Refused, fieldOverride?: string): FieldErrors => {
  const known = MESSAGES[refusal.code]
  return { [fieldOverride ?? known?.field ?? "form"]: known?.message ?? EnvelopeCodes[refusal.code].message }
}

/** The status and headers (`Retry-After`...) the page answers a refusal with. */
export const refusedStatus = (refusal: Refused) => ({
  status: EnvelopeCodes[refusal.code].status,
  headers: { ...refusal.headers }
})
