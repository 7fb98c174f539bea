/**
 * Lifetimes of everything the provider issues. Signing-key retention is derived from them, so they
 * live in one place.
 */
import { ACCESS_TOKEN_TTL_SECONDS } from "../../../schema/Identity/Token.js"

export { ACCESS_TOKEN_TTL_SECONDS }

/** id_tokens are read once by the client at the token endpoint; one hour as most providers use. */
export const ID_TOKEN_TTL_SECONDS = 3600

/** Authorization codes: single use, 10 minutes (RFC 6749 section 4.1.2). */
export const AUTHORIZATION_CODE_TTL_SECONDS = 600

/**
 * Refresh tokens follow the session: 90 days unless the client overrides it
 * (docs/decisions.md, "Identity: tokens and sessions").
 */
export const REFRESH_TOKEN_TTL_SECONDS = 90 * 24 * 3600

/** The longest any signed token stays valid; a retired key is published at least this long. */
export const MAX_SIGNED_TOKEN_TTL_SECONDS = Math.max(ACCESS_TOKEN_TTL_SECONDS, ID_TOKEN_TTL_SECONDS)

/** Tolerated clock difference between this provider and verifiers. */
export const CLOCK_SKEW_SECONDS = 60
