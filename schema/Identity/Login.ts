/**
 * Password sign-in (`POST /api/v1/auth/login`), an envelope endpoint.
 */
import { Schema } from "effect"
import { Envelope } from "./Envelope.js"
import { Bounded, MaxLength } from "./Limits.js"
import { Email } from "./User.js"

export class LoginRequest extends Schema.Class<LoginRequest>("LoginRequest")({
  email: Email,
  // The upper bound keeps a single request from feeding megabytes into the password hash.
  password: Bounded(MaxLength.password, 1),
  // The second factor, for an account that has one (src/identity/twofactor/TwoFactor.ts).
  otp: Schema.optionalWith(
    Schema.String.pipe(Schema.pattern(/^[0-9]{6}$/, { message: () => "6 digits" })).annotate({
      description: "The current code of the authenticator app (TOTP, RFC 6238), when the account has a second factor.",
      examples: ["492039"]
    }),
    { exact: true }
  ),
  recovery_code: Schema.optionalWith(
    Bounded(MaxLength.twoFactorCode, 1).annotate({
      description: "Instead of `otp`: an unused recovery code (`xxxx-xxxx-xxxx-xxxx`); each works once."
    }),
    { exact: true }
  )
}, { description: "Sign in with email and password.", parseOptions: { errors: "all" } }) {}

export class LoginResult extends Schema.Class<LoginResult>("LoginResult")({
  access_token: Schema.String.annotate({ description: "JWT access token (RFC 9068), valid 900 seconds." }),
  token_type: Schema.Literal("Bearer"),
  expires_in: Schema.Int.annotate({ examples: [900] })
}, { description: "Sign-in result; the session cookie is set alongside." }) {}

/** `{code: 0, message, data: LoginResult}`. */
export const LoginResponse = Envelope(LoginResult)
export type LoginResponse = typeof LoginResponse.Type
