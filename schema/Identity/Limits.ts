/**
 * Length bounds of the identity server's form, query and JSON fields. Each is far above what a real
 * client sends, so only a hostile or broken request reaches one, and it is refused as malformed
 * (400 in the route's own error style) before any work: no megabyte passwords fed to scrypt, no
 * 10 KB emails in rate-limit keys and database indexes. The request body as a whole is bounded
 * separately (`IDENTITY_MAX_BODY_BYTES`, src/platform/BodyLimit.ts).
 */
import { Schema } from "effect"
import { StorableText } from "../Text.js"

export const MaxLength = {
  /** RFC 5321 section 4.5.3.1.3: a path is at most 256 octets with its angle brackets. */
  email: 254,
  password: 1024,
  clientId: 255,
  clientSecret: 512,
  /** redirect_uri, logout targets. */
  uri: 2048,
  scope: 1024,
  /** state, nonce, login_hint: opaque values of the client. */
  opaque: 1024,
  /** Our authorization codes are 64 hex characters (src/identity/crypto/Secrets.ts). */
  code: 128,
  /** RFC 7636 section 4.1: 43 to 128 characters; a challenge is at most as long as a plain verifier. */
  codeVerifier: 128,
  /** Ours are 43 characters (src/identity/crypto/Secrets.ts `randomToken`). */
  refreshToken: 512,
  /** A JWT: an access token given to revocation, an id_token hint, a request object. */
  jwt: 8192,
  /** `exp.mac`: at most 12 digits, a dot and 43 characters (src/identity/pages/forms/Csrf.ts). */
  csrf: 56,
  /** `uid.exp.nonce.mac` of a sign-in between its password and its code (src/identity/twofactor/PendingSignIn.ts). */
  pendingSignIn: 128,
  /** A 6-digit TOTP or a recovery code, with whatever spaces and dashes a person types. */
  twoFactorCode: 64,
  /**
   * A URL path and query this server itself produced (`return_to`, the consent form's copy of the
   * authorization request); the request line that carried it was at most Node's 16 KiB header limit.
   */
  ownUrl: 16384,
  /** Keywords: grant_type (an extension grant is a URI), response_type, prompt, decision... */
  keyword: 256
} as const

export const MinLength = {
  /** RFC 7636 section 4.1. */
  codeVerifier: 43
} as const

/**
 * A string of at most `max` (and at least `min`) characters that the database can store (no NUL, no
 * unpaired surrogate: schema/Text.ts). No real client sends either.
 */
export const Bounded = (max: number, min = 0) => {
  const bounded = StorableText.check(Schema.isMaxLength(max))
  // `isMinLength` counts UTF-16 units and JSON Schema code points, so Schema 4 documents a minimum of
  // n units as ceil(n / 2) code points. The one minimum above 1 is the PKCE verifier's 43 (RFC 7636:
  // unreserved ASCII characters, one unit each), which the document states as it is.
  return min > 0 ? bounded.check(Schema.isMinLength(min, { toJsonSchema: () => ({ minLength: min }) })) : bounded
}
