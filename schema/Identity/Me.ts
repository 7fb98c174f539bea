/**
 * The signed-in user's own account (`GET`/`PATCH /api/v1/auth/me`, in the envelope) and the
 * self-service requests around it: profile, email change, password change, sessions and
 * registration. Everything here answers only the account's owner, so it may carry the email.
 */
import { Schema } from "effect"
import { Envelope } from "./Envelope.js"
import { Bounded, MaxLength } from "./Limits.js"
import { Email, GrantedRole, Subject, UserId } from "./User.js"

/** Display fields: what a person shows others, never used to identify them. */
export const ProfileLength = { name: 64, bio: 1000 } as const

export const EmailedCode = Schema.String.pipe(
  Schema.pattern(/^[0-9]{6}$/, { message: () => "6 digits" }),
  Schema.annotate({ description: "The 6-digit code from the email.", examples: ["042917"] })
)

const UnixSeconds = Schema.Int.annotate({ description: "Unix timestamp (seconds)." })

export class Me extends Schema.Class<Me>("Me")({
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
}, { description: "The signed-in user." }) {}

export const MeResponse = Envelope(Me)

export class UpdateMeRequest extends Schema.Class<UpdateMeRequest>("UpdateMeRequest")({
  name: Schema.optionalWith(
    Bounded(ProfileLength.name, 1).annotate({ description: "Display name." }),
    { exact: true }
  ),
  bio: Schema.optionalWith(Bounded(ProfileLength.bio).annotate({ description: "A few words; may be empty." }), {
    exact: true
  })
}, { description: "Display fields to change; absent fields stay.", parseOptions: { errors: "all" } }) {}

export class SendCodeRequest extends Schema.Class<SendCodeRequest>("SendCodeRequest")({
  email: Email
}, { description: "Where to mail a 6-digit code." }) {}

export class CodeSent extends Schema.Class<CodeSent>("CodeSent")({
  expires_in: Schema.Int.annotate({ description: "Seconds the code stays valid (600).", examples: [600] })
}, { description: "A code is on its way (the same answer whether or not the address has an account)." }) {}

export const CodeSentResponse = Envelope(CodeSent)

export class ChangeEmailRequest extends Schema.Class<ChangeEmailRequest>("ChangeEmailRequest")({
  email: Email,
  code: EmailedCode
}, { description: "The new address and the code mailed to it." }) {}

export class ChangePasswordRequest extends Schema.Class<ChangePasswordRequest>("ChangePasswordRequest")({
  current_password: Bounded(MaxLength.password, 1),
  new_password: Bounded(MaxLength.password, 1)
}, { description: "The current password and the new one.", parseOptions: { errors: "all" } }) {}

export class AccountSession extends Schema.Class<AccountSession>("AccountSession")({
  id: Schema.UUID.annotate({ description: "The session's public id (the `sid` of its tokens)." }),
  current: Schema.Boolean.annotate({ description: "Whether this request was made with this session." }),
  created_at: UnixSeconds,
  auth_time: UnixSeconds.annotate({ description: "When its user last signed in with it." }),
  expires_at: UnixSeconds,
  user_agent: Schema.String,
  ip: Schema.String
}, { description: "A live sign-in of the account." }) {}

export class AccountSessions extends Schema.Class<AccountSessions>("AccountSessions")({
  items: Schema.Array(AccountSession).annotate({ description: "Live sessions, newest first." })
}, { description: "The account's live sessions." }) {}

export const AccountSessionsResponse = Envelope(AccountSessions)

export const SessionIdParam = Schema.Struct({ id: Bounded(64, 1) })

export class RegisterRequest extends Schema.Class<RegisterRequest>("RegisterRequest")({
  email: Email,
  code: EmailedCode,
  password: Bounded(MaxLength.password, 1),
  name: Bounded(ProfileLength.name, 1)
}, { description: "A new account: the address, the code mailed to it, a password and a display name." }) {}

/** Success without data (`{code: 0, message: "ok", data: null}`). */
export const Done = Envelope(Schema.Null)

export class AvatarUploaded extends Schema.Class<AvatarUploaded>("AvatarUploaded")({
  picture: Schema.String.annotate({ description: "The new avatar's URL (a 256x256 WebP, immutable)." })
}, { description: "The avatar was stored." }) {}

export const AvatarUploadedResponse = Envelope(AvatarUploaded)

export const AvatarFileParam = Schema.Struct({
  file: Schema.String.pipe(Schema.pattern(/^[0-9a-f]{64}\.webp$/)).annotate({
    description: "`{sha256}.webp`, as in `picture`."
  })
})
