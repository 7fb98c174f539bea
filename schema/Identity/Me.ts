/**
 * The signed-in user's own account (`GET`/`PATCH /api/v1/auth/me`, in the envelope) and the
 * self-service requests around it: profile, email change, password change, sessions,
 * registration and recovery. Everything here answers only the account's owner, so it may carry the email.
 */
import { Schema } from "effect"
import { isNotBlank } from "../Text.js"
import { Envelope } from "./Envelope.js"
import { Bounded, MaxLength } from "./Limits.js"
import { Email, GrantedRole, Subject, UserId } from "./User.js"

/** Display fields: what a person shows others, never used to identify them. */
export const ProfileLength = { name: 64, bio: 1000 } as const

/** A display name as sent: 1 to 64 characters, not only whitespace or zero-width characters. */
export const DisplayName = Bounded(ProfileLength.name, 1).check(isNotBlank)

export const EmailedCode = Schema.String.check(Schema.isPattern(/^[0-9]{6}$/u, { message: "6 digits" })).annotate({
  description: "The 6-digit code from the email.",
  examples: ["042917"]
})

const UnixSeconds = Schema.Int.annotate({ description: "Unix timestamp (seconds)." })

// Each class's fields are a Struct carrying the identifier and description: the OpenAPI document
// shows the encoded Struct, which would otherwise be an undescribed `<Name>Encoded`; the class's
// own description is the one a response takes.

export class Me extends Schema.Class<Me>("Me")(
  Schema.Struct({
    id: UserId,
    sub: Subject,
    email: Schema.String,
    email_verified: Schema.Boolean.annotate({
      description: "Whether the address was proven (an emailed code, or an operator vouching for it)."
    }),
    name: Schema.String,
    picture: Schema.String.annotate({ description: "Avatar URL; may be empty." }),
    bio: Schema.String,
    roles: Schema.Array(GrantedRole).annotate({ description: "Granted roles; `user` is implicit." }),
    created_at: UnixSeconds,
    updated_at: UnixSeconds.annotate({ description: "Unix timestamp (seconds) of the last profile change." }),
    two_factor: Schema.Boolean.annotate({ description: "Whether sign-in asks for a second factor (TOTP)." })
  }).annotate({ identifier: "Me", description: "The signed-in user." }),
  { description: "The signed-in user." }
) {}

export const MeResponse = Envelope(Me)

export class UpdateMeRequest extends Schema.Class<UpdateMeRequest>("UpdateMeRequest")(
  // Every failing field is reported: the endpoint decodes this body with `errors: "all"`
  // (`HttpApi.PayloadParseOptions`; a Schema 4 schema carries no parse options).
  Schema.Struct({
    name: Schema.optionalKey(DisplayName.annotate({ description: "Display name." })),
    bio: Schema.optionalKey(Bounded(ProfileLength.bio).annotate({ description: "A few words; may be empty." }))
  }).annotate({ identifier: "UpdateMeRequest", description: "Display fields to change; absent fields stay." }),
  { description: "Display fields to change; absent fields stay." }
) {}

export class SendCodeRequest extends Schema.Class<SendCodeRequest>("SendCodeRequest")(
  Schema.Struct({
    email: Email
  }).annotate({ identifier: "SendCodeRequest", description: "Where to mail a 6-digit code." }),
  { description: "Where to mail a 6-digit code." }
) {}

export class CodeSent extends Schema.Class<CodeSent>("CodeSent")(
  Schema.Struct({
    expires_in: Schema.Int.annotate({ description: "Seconds the code stays valid (600).", examples: [600] })
  }).annotate({
    identifier: "CodeSent",
    description: "A code is on its way (the same answer whether or not the address has an account)."
  }),
  { description: "A code is on its way (the same answer whether or not the address has an account)." }
) {}

export const CodeSentResponse = Envelope(CodeSent)

/**
 * The opaque value that binds an anonymous flow (registration, recovery) to its emailed code: only
 * the holder of the value that asked for a code can try it. Ours are 43 characters.
 */
export const PendingValue = Bounded(128, 1).annotate({
  description: "The `pending` value from the send-code answer that mailed the code.",
  examples: ["q2f0cT1hX3Q4bW9vbl9ieV9hbm90aGVyX25hbWVfb2s"]
})

export class PendingCodeSent extends Schema.Class<PendingCodeSent>("PendingCodeSent")(
  Schema.Struct({
    pending: PendingValue.annotate({
      description: "Send it back with the code: the code works only together with this value. Keep it private."
    }),
    expires_in: Schema.Int.annotate({ description: "Seconds the code stays valid (600).", examples: [600] })
  }).annotate({
    identifier: "PendingCodeSent",
    description: "A code is on its way (the same answer whether or not the address has an account), bound to `pending`."
  }),
  {
    description: "A code is on its way (the same answer whether or not the address has an account), bound to `pending`."
  }
) {}

export const PendingCodeSentResponse = Envelope(PendingCodeSent)

export class ChangeEmailRequest extends Schema.Class<ChangeEmailRequest>("ChangeEmailRequest")(
  Schema.Struct({
    email: Email,
    code: EmailedCode,
    current_password: Schema.optionalKey(
      Bounded(MaxLength.password, 1).annotate({ description: "The account's current password." })
    ),
    two_factor_code: Schema.optionalKey(
      Bounded(MaxLength.twoFactorCode, 1).annotate({
        description: "Instead of the password, when the account has a second factor: a current authenticator code " +
          "or an unused recovery code."
      })
    )
  }).annotate({
    identifier: "ChangeEmailRequest",
    description: "The new address, the code mailed to it, and the current password or a second-factor code."
  }),
  { description: "The new address, the code mailed to it, and the current password or a second-factor code." }
) {}

export class ChangePasswordRequest extends Schema.Class<ChangePasswordRequest>("ChangePasswordRequest")(
  // Every failing field is reported: the endpoint decodes this body with `errors: "all"`
  // (`HttpApi.PayloadParseOptions`; a Schema 4 schema carries no parse options).
  Schema.Struct({
    current_password: Bounded(MaxLength.password, 1),
    new_password: Bounded(MaxLength.password, 1)
  }).annotate({ identifier: "ChangePasswordRequest", description: "The current password and the new one." }),
  { description: "The current password and the new one." }
) {}

export class AccountSession extends Schema.Class<AccountSession>("AccountSession")(
  Schema.Struct({
    id: Schema.String.check(Schema.isUUID()).annotate({
      description: "The session's public id (the `sid` of its tokens)."
    }),
    current: Schema.Boolean.annotate({ description: "Whether this request was made with this session." }),
    created_at: UnixSeconds,
    auth_time: UnixSeconds.annotate({ description: "When its user last signed in with it." }),
    expires_at: UnixSeconds,
    user_agent: Schema.String,
    ip: Schema.String
  }).annotate({ identifier: "AccountSession", description: "A live sign-in of the account." }),
  { description: "A live sign-in of the account." }
) {}

export class AccountSessions extends Schema.Class<AccountSessions>("AccountSessions")(
  Schema.Struct({
    items: Schema.Array(AccountSession).annotate({ description: "Live sessions, newest first." })
  }).annotate({ identifier: "AccountSessions", description: "The account's live sessions." }),
  { description: "The account's live sessions." }
) {}

export const AccountSessionsResponse = Envelope(AccountSessions)

export const SessionIdParam = Schema.Struct({ id: Bounded(64, 1) })

export class RegisterRequest extends Schema.Class<RegisterRequest>("RegisterRequest")(
  Schema.Struct({
    email: Email,
    pending: PendingValue,
    code: EmailedCode,
    password: Bounded(MaxLength.password, 1),
    name: DisplayName
  }).annotate({
    identifier: "RegisterRequest",
    description: "A new account: the address, the `pending` value and code of its send-code, a password and a " +
      "display name."
  }),
  {
    description: "A new account: the address, the `pending` value and code of its send-code, a password and a " +
      "display name."
  }
) {}

export class ResetPasswordRequest extends Schema.Class<ResetPasswordRequest>("ResetPasswordRequest")(
  Schema.Struct({
    pending: PendingValue,
    code: EmailedCode,
    password: Bounded(MaxLength.password, 1).annotate({ description: "The new password." })
  }).annotate({
    identifier: "ResetPasswordRequest",
    description: "A new password, with the `pending` value and the code of `password/forgot/send-code`."
  }),
  { description: "A new password, with the `pending` value and the code of `password/forgot/send-code`." }
) {}

/** Success without data (`{code: 0, message: "ok", data: null}`). */
export const Done = Envelope(Schema.Null)

export class AvatarUploaded extends Schema.Class<AvatarUploaded>("AvatarUploaded")(
  Schema.Struct({
    picture: Schema.String.annotate({ description: "The new avatar's URL (a 256x256 WebP, immutable)." })
  }).annotate({ identifier: "AvatarUploaded", description: "The avatar was stored." }),
  { description: "The avatar was stored." }
) {}

export const AvatarUploadedResponse = Envelope(AvatarUploaded)

export const AvatarFileParam = Schema.Struct({
  file: Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}\.webp$/u)).annotate({
    description: "`{sha256}.webp`, as in `picture`."
  })
})
