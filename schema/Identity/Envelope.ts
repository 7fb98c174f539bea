/**
 * The `{code, message, data}` envelope of the non-protocol identity endpoints (SPEC 4.2, 7.2) and
 * the closed registry of its error codes (DECISIONS 10). `code` 0 is success; clients check the
 * HTTP status first and then `code`. The README's identity section is generated from
 * `EnvelopeCodes`, so every meaning is written once, here.
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

/** Every non-zero envelope code with its HTTP status and meaning (SPEC 7.2, DECISIONS 10). */
export const EnvelopeCodes = {
  // 10xxx authentication: tokens (SPEC 5), sign-in, email and password flows
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
    "The emailed verification code is wrong, used or expired. Request a new one."
  ),
  EMAIL_TAKEN: entry(10006, 409, "Email already registered", "Another account uses this email address."),
  WRONG_CREDENTIALS: entry(
    10010,
    401,
    "Wrong email or password",
    "Sign-in failed. The same code answers an unknown email, so accounts cannot be enumerated."
  ),
  ACCOUNT_BANNED: entry(10011, 403, "Account banned", "The account is banned; signing in and tokens are refused."),
  TOO_MANY_ATTEMPTS: entry(
    10012,
    429,
    "Too many attempts",
    "Sign-in or code sending is throttled per address, per account and address, and by growing delays per " +
      "account (never a lockout). Wait as `Retry-After` says."
  ),
  WEAK_PASSWORD: entry(
    10013,
    400,
    "Password not acceptable",
    "The new password is too short or too long, or the current password given for a change is wrong."
  ),
  REAUTHENTICATION_REQUIRED: entry(
    10016,
    401,
    "Sign in again",
    "An administrator switching accounts must sign in again before continuing."
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
    "The origin of `redirect` matches no registered redirect URI of `client_id` (DECISIONS 8). Never redirects."
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
  APPLICATION_PENDING: entry(
    17001,
    409,
    "Application already pending",
    "The user already has an undecided application."
  ),
  ALREADY_CREATOR: entry(17002, 409, "Already a creator", "The user already holds the `creator` role."),
  APPLICATION_NOT_FOUND: entry(17003, 404, "Application not found", "No such creator application."),
  APPLICATION_ALREADY_DECIDED: entry(
    17004,
    409,
    "Application already decided",
    "The application was already approved or declined."
  ),
  APPLICATION_INVALID: entry(
    17005,
    400,
    "Application invalid",
    "A field of the application is missing or too long."
  ),
  // Generic envelope failures outside the SPEC ranges
  INVALID_REQUEST: entry(40001, 400, "Invalid request", "The body or a parameter failed validation."),
  PERMISSION_DENIED: entry(40301, 403, "Permission denied", "The signed-in user lacks the role this operation needs."),
  NOT_FOUND: entry(40401, 404, "Not found", "The addressed resource does not exist."),
  PAYLOAD_TOO_LARGE: entry(
    41301,
    413,
    "Payload too large",
    "The request body is larger than the server accepts (`IDENTITY_MAX_BODY_BYTES`, 64 KiB by default). It was not read."
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
export const EnvelopeErrorCode = Schema.Literal(...codeValues).annotations({
  description: "Non-zero envelope error code; see the identity section of the README."
})

// ---------------------------------------------------------------------------------------------
// Wire shapes
// ---------------------------------------------------------------------------------------------

/** A successful envelope `{code: 0, message, data}` around `data`. */
export const Envelope = <A, I, R>(data: Schema.Schema<A, I, R>) =>
  Schema.Struct({
    code: Schema.Literal(0),
    message: Schema.String,
    data
  })

/** A failed envelope: non-zero `code`, `data` null or absent (SPEC 4.2). */
export class EnvelopeFailure extends Schema.Class<EnvelopeFailure>("EnvelopeFailure")({
  code: EnvelopeErrorCode,
  message: Schema.String,
  data: Schema.optionalWith(Schema.Null, { exact: true })
}, { description: "Envelope error: check the HTTP status, then `code`." }) {}

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
