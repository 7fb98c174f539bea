/**
 * The second factor's envelope endpoints (`/api/v1/auth/2fa...`): TOTP set-up (RFC 6238) and
 * recovery codes. Every change needs a sign-in younger than 10 minutes; turning the factor on or
 * off and new recovery codes also need the current password.
 */
import { Schema } from "effect"
import { Envelope } from "./Envelope.js"
import { Bounded, MaxLength } from "./Limits.js"
import { field } from "./Pages.js"

/** A TOTP (6 digits) or a recovery code (`xxxx-xxxx-xxxx-xxxx`); spaces and dashes are ignored. */
export const TwoFactorCode = Bounded(MaxLength.twoFactorCode, 1).annotate({
  description: "The current 6-digit code of the authenticator app, or an unused recovery code.",
  examples: ["492039", "k7qm-2xza-p4ve-u6tn"]
})

// Each class's fields are a Struct carrying the identifier and description: the OpenAPI document
// shows the encoded Struct, which would otherwise be an undescribed `<Name>Encoded`; the class's
// own description is the one a response takes.

/** The account's password, asked again before the way it signs in changes. */
export const CurrentPassword = Bounded(MaxLength.password, 1).annotate({
  description: "The account's current password (wrong: 401 10011, counted like a password change's guesses)."
})

export class TwoFactorCodeRequest extends Schema.Class<TwoFactorCodeRequest>("TwoFactorCodeRequest")(
  Schema.Struct({
    code: TwoFactorCode,
    current_password: CurrentPassword
  }).annotate({
    identifier: "TwoFactorCodeRequest",
    description:
      "A code proving the factor (or, to enable it, the first code of the new secret) and the current password."
  }),
  {
    description:
      "A code proving the factor (or, to enable it, the first code of the new secret) and the current password."
  }
) {}

export class TwoFactorSetup extends Schema.Class<TwoFactorSetup>("TwoFactorSetup")(
  Schema.Struct({
    secret: Schema.String.annotate({
      description: "The TOTP key in base32 (RFC 4648), for typing into an authenticator app.",
      examples: ["JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP"]
    }),
    otpauth_uri: Schema.String.annotate({
      description: "`otpauth://totp/...` with the key, SHA1, 6 digits, 30-second period and issuer `shiori`."
    }),
    qr_svg: Schema.String.annotate({ description: "`otpauth_uri` as a QR code, an SVG document." })
  }).annotate({
    identifier: "TwoFactorSetup",
    description: "A pending set-up: confirm it with a first code at `POST /auth/2fa/enable`."
  }),
  { description: "A pending set-up: confirm it with a first code at `POST /auth/2fa/enable`." }
) {}

export const TwoFactorSetupResponse = Envelope(TwoFactorSetup)

export class RecoveryCodes extends Schema.Class<RecoveryCodes>("RecoveryCodes")(
  Schema.Struct({
    recovery_codes: Schema.Array(Schema.String).annotate({
      description: "Ten single-use codes, each standing in for one authenticator code. Shown only this once."
    })
  }).annotate({
    identifier: "RecoveryCodes",
    description: "The account's new recovery codes; any earlier ones no longer work."
  }),
  { description: "The account's new recovery codes; any earlier ones no longer work." }
) {}

export const RecoveryCodesResponse = Envelope(RecoveryCodes)

/** `{code: 0, message: "ok", data: null}`. */
export const TwoFactorRemovedResponse = Envelope(Schema.Null)

/**
 * The set-up page's forms (`application/x-www-form-urlencoded`, every field optional so the page
 * answers a missing one itself, and written inline in the OpenAPI document, like schema/Identity/Pages.ts).
 */
export const TwoFactorForm = Schema.Struct({
  csrf: field(MaxLength.csrf, "CSRF token of the page."),
  action: field(MaxLength.keyword, "`enable`, `disable`, `recovery-codes`, or `restart` (a new key for the set-up)."),
  code: field(MaxLength.twoFactorCode, "A code of the app, or (to disable or renew the codes) a recovery code."),
  current_password: field(MaxLength.password, "The account's current password (`enable`, `disable`, `recovery-codes`).")
})
export type TwoFactorForm = typeof TwoFactorForm.Type
