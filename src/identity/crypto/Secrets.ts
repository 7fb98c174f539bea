/**
 * Random secrets, their storage hashes, constant-time comparison and PKCE (RFC 7636).
 *
 * Every bearer secret a client or browser holds (refresh token, session cookie, authorization code,
 * client secret) is high-entropy, so one SHA-256 is enough to store it: a database dump cannot be
 * replayed and lookups stay a primary-key match. Low-entropy secrets (passwords) go to `Passwords`.
 */
import { Context, Effect, Layer } from "effect"
import * as Crypto from "node:crypto"

/** 256-bit random value, base64url without padding (43 characters). */
export const randomToken = (): string => Crypto.randomBytes(32).toString("base64url")

/** An authorization code: 64 hex characters = 256 bits. */
export const randomAuthorizationCode = (): string => Crypto.randomBytes(32).toString("hex")

/** The storage form of a secret: SHA-256, lowercase hex. */
export const sha256Hex = (value: string): string => Crypto.createHash("sha256").update(value, "utf8").digest("hex")

/**
 * Constant-time equality of two strings. Both sides are hashed first so the
 * comparison takes the same time whatever their lengths, and `timingSafeEqual` never throws.
 */
export const constantTimeEquals = (a: string, b: string): boolean =>
  Crypto.timingSafeEqual(
    Crypto.createHash("sha256").update(a, "utf8").digest(),
    Crypto.createHash("sha256").update(b, "utf8").digest()
  )

/** Whether `value` is the secret whose storage hash is `storedHash`, in constant time. */
export const matchesHash = (value: string, storedHash: string): boolean => {
  const actual = Crypto.createHash("sha256").update(value, "utf8").digest()
  const expected = Buffer.from(storedHash, "hex")
  return expected.length === actual.length && Crypto.timingSafeEqual(actual, expected)
}

// ---------------------------------------------------------------------------------------------
// PKCE (RFC 7636)
// ---------------------------------------------------------------------------------------------

export type PkceMethod = "S256" | "plain"

/** RFC 7636 section 4.1: `code_verifier = 43*128unreserved`, unreserved = ALPHA / DIGIT / "-" / "." / "_" / "~". */
const VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/

/** RFC 7636 section 4.1 (verifier syntax). */
export const isValidCodeVerifier = (verifier: string): boolean => VERIFIER.test(verifier)

/**
 * RFC 7636 section 4.2 (challenge syntax). An S256 challenge is the base64url SHA-256 of a verifier,
 * exactly 43 characters; a plain challenge is a verifier itself.
 */
export const isValidCodeChallenge = (challenge: string, method: PkceMethod): boolean =>
  method === "S256" ? /^[A-Za-z0-9_-]{43}$/.test(challenge) : VERIFIER.test(challenge)

/** RFC 7636 section 4.2: `BASE64URL-ENCODE(SHA256(ASCII(code_verifier)))`. */
export const s256Challenge = (verifier: string): string =>
  Crypto.createHash("sha256").update(verifier, "ascii").digest("base64url")

/**
 * The outcome of the PKCE check at the token endpoint (RFC 7636 section 4.6):
 * - a code issued with a challenge needs a verifier that matches under the method bound to the code
 *   (an S256 challenge replayed as a "plain" verifier fails, because S256 is applied to it);
 * - a code issued without a challenge must not receive a verifier (`invalid_grant`), so a
 *   downgrade by stripping the challenge at authorize is caught at the token endpoint.
 */
export type PkceOutcome = "ok" | "verifier_missing" | "verifier_malformed" | "verifier_mismatch" | "verifier_unexpected"

export const checkPkce = (
  bound: { readonly challenge: string; readonly method: PkceMethod } | null,
  verifier: string | undefined
): PkceOutcome => {
  if (bound === null) return verifier === undefined ? "ok" : "verifier_unexpected"
  if (verifier === undefined) return "verifier_missing"
  if (!isValidCodeVerifier(verifier)) return "verifier_malformed"
  const derived = bound.method === "S256" ? s256Challenge(verifier) : verifier
  return constantTimeEquals(derived, bound.challenge) ? "ok" : "verifier_mismatch"
}

/**
 * The same operations as a service, so callers that need randomness can swap in a deterministic
 * layer in tests.
 */
export class Secrets extends Context.Service<Secrets>()("identity/Secrets", {
  make: Effect.succeed({
    token: Effect.sync(randomToken),
    authorizationCode: Effect.sync(randomAuthorizationCode),
    hash: sha256Hex,
    matchesHash,
    constantTimeEquals,
    checkPkce
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
