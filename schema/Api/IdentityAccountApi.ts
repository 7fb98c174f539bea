/**
 * Self-service account endpoints of the identity provider. They answer the `{code, message, data}`
 * envelope (codes in the README's identity section) and take the user's Bearer token from
 * `POST /auth/login` or `POST /auth/register`, except registration and recovery, which take none.
 */
import { Schema } from "effect"
import { Multipart } from "effect/http"
import { HttpApi, HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "effect/http-api"
import { LoginResponse } from "../Identity/Login.js"
import {
  AccountSessionsResponse,
  AvatarFileParam,
  AvatarUploadedResponse,
  ChangeEmailRequest,
  ChangePasswordRequest,
  CodeSentResponse,
  Done,
  MeResponse,
  PendingCodeSentResponse,
  RegisterRequest,
  ResetPasswordRequest,
  SendCodeRequest,
  SessionIdParam,
  UpdateMeRequest
} from "../Identity/Me.js"
import { envelopeError } from "./IdentityErrors.js"

const tokenErrors = envelopeError(401, "10001 token missing, 10002 token invalid or its session ended, 10003 expired.")
const recent = envelopeError(
  401,
  "10001/10002/10003 token problems; 10016 the sign-in is older than 10 minutes " +
    "(`WWW-Authenticate: Bearer error=\"insufficient_user_authentication\", max_age=600`, RFC 9470)."
)
const tooSoon = envelopeError(
  429,
  "10013: this requester asked a code for this address too recently, this client address asked too many codes, " +
    "or the address received too many code mails this hour; `Retry-After`."
)

/** Every failing field of the body is reported (a Schema 4 class carries no parse options). */
const allErrors = { errors: "all" } as const

export class IdentityAccountApi extends HttpApiGroup.make("account")
  .add(
    HttpApiEndpoint.get("me", "/api/v1/auth/me", {
      success: MeResponse,
      error: tokenErrors
    })
      .annotate(OpenApi.Summary, "The signed-in user")
      .annotate(OpenApi.Description, "The user's own account, with the email address.")
  )
  .add(
    HttpApiEndpoint.patch("updateMe", "/api/v1/auth/me", {
      payload: UpdateMeRequest,
      success: MeResponse,
      error: [
        envelopeError(400, "40001: a field is not a string of the allowed length (name 1 to 64, bio up to 1000)."),
        tokenErrors
      ]
    })
      .annotate(HttpApi.PayloadParseOptions, allErrors)
      .annotate(OpenApi.Summary, "Change the display name or bio")
      .annotate(OpenApi.Description, "Display fields only; absent fields stay. Answers the updated account.")
  )
  .add(
    HttpApiEndpoint.post("uploadAvatar", "/api/v1/auth/me/avatar", {
      payload: Schema.Struct({ file: Multipart.SingleFileSchema }).pipe(HttpApiSchema.asMultipart()),
      success: AvatarUploadedResponse,
      error: [
        envelopeError(400, "40001: not a multipart/form-data body with a `file` part."),
        tokenErrors,
        envelopeError(413, "41301: larger than `IDENTITY_MAX_AVATAR_BYTES` (5 MiB by default)."),
        envelopeError(422, "42201: the file is not a JPEG, PNG, WebP, AVIF, HEIF or GIF image, or is too big."),
        envelopeError(
          429,
          "42901: too many uploads for this account or from this address, or too many pictures waiting to be " +
            "decoded; `Retry-After`."
        )
      ]
    })
      .annotate(OpenApi.Summary, "Upload an avatar")
      .annotate(
        OpenApi.Description,
        "`multipart/form-data` with one `file` part. The image is decoded (at most 40 megapixels), cropped to a " +
          "square, resized to 256x256 and re-encoded as WebP, without any of the original's metadata; the answer's " +
          "`picture` (also in `/auth/me`, userinfo and id_tokens from now on) is its URL."
      )
  )
  .add(
    HttpApiEndpoint.get("avatar", "/api/v1/avatars/:file", {
      params: AvatarFileParam,
      success: Schema.Uint8Array.pipe(HttpApiSchema.asUint8Array({ contentType: "image/webp" })),
      error: envelopeError(404, "40401: no such avatar.")
    })
      .annotate(OpenApi.Summary, "An avatar image")
      .annotate(
        OpenApi.Description,
        "Public. The bytes never change for a URL: `Cache-Control: public, max-age=31536000, immutable`."
      )
  )
  .add(
    HttpApiEndpoint.post("sendEmailCode", "/api/v1/auth/email/send-code", {
      payload: SendCodeRequest,
      success: CodeSentResponse,
      error: [
        envelopeError(400, "40001: `email` is not an email address."),
        recent,
        tooSoon
      ]
    })
      .annotate(OpenApi.Summary, "Mail a code to a new address")
      .annotate(
        OpenApi.Description,
        "Mails a 6-digit code to `email`, valid 10 minutes for 5 tries; asking again replaces it. At most one a " +
          "minute and five an hour per address. Needs a sign-in younger than 10 minutes."
      )
  )
  .add(
    HttpApiEndpoint.put("changeEmail", "/api/v1/auth/email", {
      payload: ChangeEmailRequest,
      success: MeResponse,
      error: [
        envelopeError(
          400,
          "10004: the code is wrong, used or expired; 40001: malformed body, or neither `current_password` nor " +
            "`two_factor_code`."
        ),
        envelopeError(
          401,
          "10011: `current_password` is wrong; 10015: `two_factor_code` is wrong or the account has no second " +
            "factor; 10001/10002/10003/10016 as above."
        ),
        envelopeError(409, "10006: another account uses this address."),
        envelopeError(
          429,
          "10012: the code took 5 wrong tries and is spent (ask for a new one), or too many wrong current passwords " +
            "or second-factor codes for this account (`Retry-After`)."
        )
      ]
    })
      .annotate(OpenApi.Summary, "Change the email address")
      .annotate(
        OpenApi.Description,
        "Moves the account to `email`, proven by the code mailed to it; the owner proves it is them with " +
          "`current_password`, or with `two_factor_code` (a current authenticator code or an unused recovery code) " +
          "when the account has a second factor. Wrong ones count like a password change's. The address counts as " +
          "verified; every other session of the account ends and every refresh token it has at any client is " +
          "revoked (`invalid_grant`); the old address is told. Needs a sign-in younger than 10 minutes."
      )
  )
  .add(
    HttpApiEndpoint.put("changePassword", "/api/v1/auth/password", {
      payload: ChangePasswordRequest,
      success: Done,
      error: [
        envelopeError(400, "10010: the new password is too weak; 40001: malformed body."),
        envelopeError(401, "10011: `current_password` is wrong; 10001/10002/10003/10016 as above."),
        envelopeError(429, "10012: too many wrong current passwords for this account; `Retry-After`.")
      ]
    })
      .annotate(HttpApi.PayloadParseOptions, allErrors)
      .annotate(OpenApi.Summary, "Change the password")
      .annotate(
        OpenApi.Description,
        "Ends every other session of the account and revokes every refresh token it has at any client (they get " +
          "`invalid_grant`); the session making the change stays. The account's address is told. Needs a sign-in " +
          "younger than 10 minutes."
      )
  )
  .add(
    HttpApiEndpoint.get("sessions", "/api/v1/auth/sessions", {
      success: AccountSessionsResponse,
      error: tokenErrors
    })
      .annotate(OpenApi.Summary, "The account's live sessions")
      .annotate(OpenApi.Description, "Live sign-ins of the account, newest first; `current` marks this request's.")
  )
  .add(
    HttpApiEndpoint.delete("endSession", "/api/v1/auth/sessions/:id", {
      params: SessionIdParam,
      success: Done,
      error: [
        tokenErrors,
        envelopeError(404, "40401: no live session of this account has this id.")
      ]
    })
      .annotate(OpenApi.Summary, "End a session")
      .annotate(
        OpenApi.Description,
        "Signs that session out and revokes the refresh tokens that relying parties got through it."
      )
  )
  .add(
    HttpApiEndpoint.post("sendRegistrationCode", "/api/v1/auth/register/send-code", {
      payload: SendCodeRequest,
      success: PendingCodeSentResponse,
      error: [
        envelopeError(400, "40001: `email` is not an email address."),
        tooSoon
      ]
    })
      .annotate(OpenApi.Summary, "Mail a registration code")
      .annotate(
        OpenApi.Description,
        "No authentication. Answers the same whether or not the address has an account: a new address gets a " +
          "6-digit code (10 minutes, 5 tries), a known one a mail saying someone tried to register it. The answer's " +
          "`pending` value goes back with the code to `POST /auth/register`: the code works for nobody else. At " +
          "most one a minute and five an hour per client address and target address."
      )
  )
  .add(
    HttpApiEndpoint.post("register", "/api/v1/auth/register", {
      payload: RegisterRequest,
      success: LoginResponse,
      error: [
        envelopeError(
          400,
          "10004: the code is wrong, used or expired, or `pending` is not the one its send-code answered; " +
            "10010: the password is too weak."
        ),
        envelopeError(409, "10006: the address was registered meanwhile."),
        envelopeError(429, "10012: the code took 5 wrong tries and is spent.")
      ]
    })
      .annotate(OpenApi.Summary, "Create an account and sign in")
      .annotate(
        OpenApi.Description,
        "Creates the account (its address verified by the code of `pending`) and signs it in like `POST /auth/login`: the access " +
          "token in `data`, and the session cookie that keeps the browser signed in (HttpOnly, SameSite=Lax, " +
          "path-scoped to the issuer; `__Host-` and Secure over https). Only `application/json` bodies."
      )
  )
  .add(
    HttpApiEndpoint.post("sendRecoveryCode", "/api/v1/auth/password/forgot/send-code", {
      payload: SendCodeRequest,
      success: PendingCodeSentResponse,
      error: [
        envelopeError(400, "40001: `email` is not an email address."),
        tooSoon
      ]
    })
      .annotate(OpenApi.Summary, "Mail a password recovery code")
      .annotate(
        OpenApi.Description,
        "No authentication (\"forgot password\"). Answers the same whether or not the address has an account: the " +
          "account's address gets a 6-digit code (10 minutes, 5 tries), an address without an account a mail saying " +
          "so. The answer's `pending` value goes back with the code to `POST /auth/password/reset`. Limits as " +
          "`register/send-code`."
      )
  )
  .add(
    HttpApiEndpoint.post("resetPassword", "/api/v1/auth/password/reset", {
      payload: ResetPasswordRequest,
      success: Done,
      error: [
        envelopeError(
          400,
          "10004: the code is wrong, used or expired, or `pending` is unknown or expired; 10010: the password is " +
            "too weak; 40001: malformed body."
        ),
        envelopeError(429, "10012: the code took 5 wrong tries and is spent; ask for a new one.")
      ]
    })
      .annotate(OpenApi.Summary, "Set a new password with a recovery code")
      .annotate(
        OpenApi.Description,
        "Sets the account's password, proven by the code mailed for `pending`. Ends every session of the account and " +
          "revokes every refresh token it has at any client (`invalid_grant`); the owner is told. It signs nobody " +
          "in, and a second factor stays on: sign in with the new password (and the code)."
      )
  )
  .annotate(OpenApi.Title, "Accounts")
  .annotate(OpenApi.Description, "Envelope endpoints for the signed-in user, registration and account recovery.")
{}
