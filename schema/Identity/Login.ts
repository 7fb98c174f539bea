/**
 * Password sign-in (`POST /api/v1/auth/login`), an envelope endpoint (SPEC 4.2, issue 4 item 1).
 */
import { Schema } from "effect"
import { Envelope } from "./Envelope.js"
import { Bounded, MaxLength } from "./Limits.js"
import { Email } from "./User.js"

export class LoginRequest extends Schema.Class<LoginRequest>("LoginRequest")({
  email: Email,
  // The upper bound keeps a single request from feeding megabytes into the password hash.
  password: Bounded(MaxLength.password, 1)
}, { description: "Sign in with email and password.", parseOptions: { errors: "all" } }) {}

export class LoginResult extends Schema.Class<LoginResult>("LoginResult")({
  access_token: Schema.String.annotations({ description: "JWT access token (RFC 9068), valid 900 seconds." }),
  token_type: Schema.Literal("Bearer"),
  expires_in: Schema.Int.annotations({ examples: [900] })
}, { description: "Sign-in result; the session cookie is set alongside." }) {}

/** `{code: 0, message, data: LoginResult}`. */
export const LoginResponse = Envelope(LoginResult)
export type LoginResponse = typeof LoginResponse.Type
