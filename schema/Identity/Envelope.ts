/**
 * The `{code, message, data}` envelope of the non-protocol identity endpoints (docs/api-contract.md,
 * "Errors: identity (OAuth errors and the envelope)") and the closed registry of its error codes. `code`
 * 0 is success; clients check the HTTP status first and then `code`. The README's identity section is
 * generated from `EnvelopeCodes`, so every meaning is written once, here.
 */
import { Schema } from "effect"

// ---------------------------------------------------------------------------------------------
// Code registry
// ---------------------------------------------------------------------------------------------

export interface EnvelopeCodeEntry<C extends number = number, S extends number = number> {
  readonly code: C
  readonly status: S
  /** The fixed English `message` sent with the code. */
  readonly message: string
  /** When the code is used and what a client should do. */
  readonly description: string
}

const entry = <const C extends number, const S extends number>(
  code: C,
  status: S,
  message: string,
  description: string
): EnvelopeCodeEntry<C, S> => ({ code, status, message, description })

/** Every non-zero envelope code with its HTTP status and meaning (README, "Envelope codes"). */
export const EnvelopeCodes = {
  // 10xxx authentication: tokens, sign-in, email and password flows
  TOKEN_MISSING: entry(10001, 401, "Token missing", "No `Authorization: Bearer` token (or session) was sent."),
  TOKEN_INVALID: entry(
    10002,
    401,
    "Token invalid",
    "The token is malformed, has a bad signature, a wrong `typ` or issuer, or its family was revoked. Sign in again."
  ),
  TOKEN_EXPIRED: entry(10003, 401, "Token expired", "The access token is past `exp`. Refresh once, then retry."),
  VERIFICATION_CODE_INVALID: entry(
    10004,
    400,
    "Verification code invalid",
    "The emailed verification code is wrong, used or expired, or is not the code of the `pending` value sent " +
      "with it. Request a new one."
  ),
  EMAIL_TAKEN: entry(10006, 409, "Email already registered", "Another account uses this email address."),
  WEAK_PASSWORD: entry(
    10010,
    400,
    "Password too weak",
    "The new password is shorter than 8 or longer than 1024 characters, is one of the most common passwords, " +
      "or contains the account's email address or name."
  ),
  WRONG_PASSWORD: entry(
    10011,
    401,
    "Wrong password",
    "The password is wrong: at sign-in (an unknown email gets the same answer, so accounts cannot be enumerated), " +
      "or the `current_password` of a password change or of a change of the second factor."
  ),
  TOO_MANY_ATTEMPTS: entry(
    10012,
    429,
    "Too many attempts",
    "Too many guesses: an emailed code takes 5 tries and is then spent (ask for a new one); sign-in and " +
      "second-factor codes are throttled per address, per account and address, and by growing delays per " +
      "account (never a lockout). Wait as `Retry-After` says."
  ),
  CODE_REQUESTED_TOO_SOON: entry(
    10013,
    429,
    "Code requested too soon",
    "This requester asked a code for this address too recently, this client address asked too many codes, or the " +
      "address received too many code mails this hour. Wait as `Retry-After` says."
  ),
  TWO_FACTOR_REQUIRED: entry(
    10014,
    401,
    "Second factor required",
    "The password is right but the account has a second factor: send the current 6-digit code of the " +
      "authenticator app as `otp`, or an unused recovery code as `recovery_code`. No session was created."
  ),
  TWO_FACTOR_INVALID: entry(
    10015,
    401,
    "Second factor code wrong",
    "The authenticator code or recovery code is wrong, or was already used (a code is accepted once, RFC 6238 " +
      "section 5.2: wait for the next one)."
  ),
  REAUTHENTICATION_REQUIRED: entry(
    10016,
    401,
    "Sign in again",
    "Changing the email, the password or the second factor needs a sign-in younger than 10 minutes (RFC 9470: " +
      "`WWW-Authenticate: Bearer error=\"insufficient_user_authentication\", max_age=600`); also an administrator " +
      "switching accounts. Refreshing does not help: sign in again."
  ),
  // 15xxx OAuth and client errors on envelope endpoints and the sign-in pages
  UNKNOWN_CLIENT: entry(15001, 404, "Unknown client", "`client_id` is not a registered client. Never redirects."),
  REDIRECT_URI_MISMATCH: entry(
    15002,
    400,
    "redirect_uri mismatch",
    "`redirect_uri` is not exactly one of the client's registered redirect URIs. Never redirects."
  ),
  INVALID_SCOPE: entry(15003, 400, "Invalid scope", "A requested scope is unknown or not allowed for the client."),
  LOGOUT_TARGET_NOT_ALLOWED: entry(
    15004,
    400,
    "Logout redirect not allowed",
    "The origin of `redirect` matches no registered redirect URI of `client_id`. Never redirects."
  ),
  UNSUPPORTED_RESPONSE_TYPE: entry(15005, 400, "Unsupported response_type", "`response_type` must be `code`."),
  INVALID_PKCE: entry(
    15006,
    400,
    "Invalid PKCE parameters",
    "`code_challenge` is malformed, `code_challenge_method` is not `S256` or `plain`, or a public client sent no challenge."
  ),
  INVALID_AUTHORIZATION_REQUEST: entry(
    15007,
    400,
    "Invalid authorization request",
    "A required parameter (`state`, `client_id`, `redirect_uri`, `response_type`) is missing, repeated or malformed."
  ),
  CLIENT_AUTHENTICATION_FAILED: entry(
    15008,
    401,
    "Client authentication failed",
    "Client Basic authentication (service-to-service lookup) is missing or wrong."
  ),
  CONSENT_DENIED: entry(15009, 403, "Consent denied", "The user declined the client's request on the consent page."),
  CSRF_TOKEN_INVALID: entry(
    15010,
    403,
    "Form expired",
    "The form's CSRF token is missing, invalid or expired. Reload the page and submit again."
  ),
  CLIENT_NOT_PERMITTED: entry(
    15011,
    403,
    "Client not permitted",
    "The client may not use this operation (for example a public client calling a back-channel endpoint)."
  ),
  // 17xxx creator applications
  ALREADY_APPLIED: entry(
    17001,
    409,
    "Already applied",
    "A declined application may be followed by a new one 30 days after its decision. Wait as `Retry-After` says."
  ),
  APPLICATION_PENDING: entry(
    17002,
    409,
    "Application still pending",
    "The user already has an undecided application."
  ),
  ALREADY_CREATOR: entry(17003, 409, "Already a creator", "The user already holds the `creator` role."),
  APPLICATION_INVALID: entry(
    17004,
    400,
    "Statement invalid",
    "The statement is missing, shorter than 20 or longer than 4000 characters, `portfolio_url` is not an " +
      "http(s) URL of at most 2048 characters, or the body has another member."
  ),
  APPLICATION_NOT_FOUND: entry(17005, 404, "No such application", "No creator application has this id."),
  // Generic envelope failures outside the 10xxx, 15xxx and 17xxx ranges
  INVALID_REQUEST: entry(40001, 400, "Invalid request", "The body or a parameter failed validation."),
  PERMISSION_DENIED: entry(40301, 403, "Permission denied", "The signed-in user lacks the role this operation needs."),
  ACCOUNT_BANNED: entry(
    40302,
    403,
    "Account banned",
    "The account is banned: sign-in (after a correct password only), its tokens and its sessions are refused."
  ),
  NOT_FOUND: entry(40401, 404, "Not found", "The addressed resource does not exist."),
  IMAGE_INVALID: entry(
    42201,
    422,
    "Not an image",
    "The upload is not a JPEG, PNG, WebP, AVIF, HEIF or GIF image, is damaged, or has more than 40 megapixels."
  ),
  CONFLICT: entry(
    40901,
    409,
    "Conflict",
    "The account is not in the state the operation needs: a second factor is already on (set-up), or none is " +
      "on or being set up (enable, remove, new recovery codes)."
  ),
  PAYLOAD_TOO_LARGE: entry(
    41301,
    413,
    "Payload too large",
    "The request body is larger than the server accepts (`IDENTITY_MAX_BODY_BYTES`, 64 KiB by default). It was not read."
  ),
  UNSUPPORTED_MEDIA_TYPE: entry(
    41501,
    415,
    "Unsupported media type",
    "The endpoint takes a JSON body, and this one was not sent as `application/json` (no parameter but " +
      "`charset=utf-8`; RFC 9110 section 15.5.16). It was not read."
  ),
  RATE_LIMITED: entry(42901, 429, "Rate limited", "Too many requests. Wait as `Retry-After` says."),
  INTERNAL_ERROR: entry(50001, 500, "Internal error", "An unexpected server failure. Retry with backoff."),
  SERVICE_UNAVAILABLE: entry(
    50301,
    503,
    "Service unavailable",
    "The database does not answer. Retry with backoff after `Retry-After`."
  )
} as const

export type EnvelopeCodeName = keyof typeof EnvelopeCodes
export type EnvelopeCodeValue = (typeof EnvelopeCodes)[EnvelopeCodeName]["code"]

const codeValues = Object.values(EnvelopeCodes).map((e) => e.code) as unknown as readonly [
  EnvelopeCodeValue,
  ...Array<EnvelopeCodeValue>
]

/** The closed union of non-zero envelope codes. */
export const EnvelopeErrorCode = Schema.Literals(codeValues).annotate({
  description: "Non-zero envelope error code; see the identity section of the README."
})

// ---------------------------------------------------------------------------------------------
// Wire shapes
// ---------------------------------------------------------------------------------------------

/** A successful envelope `{code: 0, message, data}` around `data`. */
export const Envelope = <S extends Schema.Top>(data: S) =>
  Schema.Struct({
    code: Schema.Literal(0),
    message: Schema.String,
    data
  })

/** The schema `Envelope(data)` builds: what an envelope endpoint declares as its success. */
export type Envelope<S extends Schema.Top> = ReturnType<typeof Envelope<S>>

// Each class's fields are a Struct carrying the identifier and description: the OpenAPI document
// shows the encoded Struct, which would otherwise be an undescribed `<Name>Encoded`; the class's
// own description is the one a response takes.

/** A failed envelope: non-zero `code`, `data` null or absent. */
export class EnvelopeFailure extends Schema.Class<EnvelopeFailure>("EnvelopeFailure")(
  Schema.Struct({
    code: EnvelopeErrorCode,
    message: Schema.String,
    data: Schema.optionalKey(Schema.Null)
  }).annotate({ identifier: "EnvelopeFailure", description: "Envelope error: check the HTTP status, then `code`." }),
  { description: "Envelope error: check the HTTP status, then `code`." }
) {}

/** The success envelope's body. */
export const envelopeOk = <A>(data: A): { readonly code: 0; readonly message: string; readonly data: A } => ({
  code: 0,
  message: "ok",
  data
})

/** The body and HTTP status for a registry entry. */
export const envelopeFailure = (name: EnvelopeCodeName): {
  readonly status: number
  readonly body: EnvelopeFailure
} => {
  const { code, message, status } = EnvelopeCodes[name]
  return { status, body: new EnvelopeFailure({ code, message, data: null }) }
}
