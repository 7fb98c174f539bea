/**
 * Password sign-in (`POST /api/v1/auth/login`), an envelope endpoint.
 */
import { Schema } from "effect"
import { Envelope } from "./Envelope.js"
import { Bounded, MaxLength } from "./Limits.js"
import { Email } from "./User.js"

// Each class's fields are a Struct carrying the identifier and description: the OpenAPI document
// shows the encoded Struct, which would otherwise be an undescribed `<Name>Encoded`; the class's
// own description is the one a response takes.

export class LoginRequest extends Schema.Class<LoginRequest>("LoginRequest")(
  // Every failing field is reported: the endpoint decodes this body with `errors: "all"`
  // (`HttpApi.PayloadParseOptions`; a Schema 4 schema carries no parse options).
  Schema.Struct({
    email: Email,
    // The upper bound keeps a single request from feeding megabytes into the password hash.
    password: Bounded(MaxLength.password, 1),
    // The second factor, for an account that has one (src/identity/twofactor/TwoFactor.ts).
    otp: Schema.optionalKey(
      Schema.String.check(Schema.isPattern(/^[0-9]{6}$/u, { message: "6 digits" })).annotate({
        description:
          "The current code of the authenticator app (TOTP, RFC 6238), when the account has a second factor.",
        examples: ["492039"]
      })
    ),
    recovery_code: Schema.optionalKey(
      Bounded(MaxLength.twoFactorCode, 1).annotate({
        description: "Instead of `otp`: an unused recovery code (`xxxx-xxxx-xxxx-xxxx`); each works once."
      })
    )
  }).annotate({ identifier: "LoginRequest", description: "Sign in with email and password." }),
  { description: "Sign in with email and password." }
) {}

export class LoginResult extends Schema.Class<LoginResult>("LoginResult")(
  Schema.Struct({
    access_token: Schema.String.annotate({ description: "JWT access token (RFC 9068), valid 900 seconds." }),
    token_type: Schema.Literal("Bearer"),
    expires_in: Schema.Int.annotate({ examples: [900] })
  }).annotate({ identifier: "LoginResult", description: "Sign-in result; the session cookie is set alongside." }),
  { description: "Sign-in result; the session cookie is set alongside." }
) {}

/** `{code: 0, message, data: LoginResult}`. */
export const LoginResponse = Envelope(LoginResult)
export type LoginResponse = typeof LoginResponse.Type
