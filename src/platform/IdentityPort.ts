/**
 * What the catalog needs of the identity provider, and the only way it reaches it: the services
 * below, with the claims and failures they speak in. The catalog imports nothing under
 * src/identity/ (test/platform/ImportCycles.test.ts keeps it so); identity implements these
 * services (`IdentityPortLive`, src/identity/IdentityPortLive.ts) and the composition root
 * (src/App.ts) plugs that in under the catalog's server stack. The contract stands here, apart from
 * both, so every arrow points into it: a catalog deployed alone (`SHIORI_SERVE=catalog`) runs the
 * same implementations, against the same database, without the identity server.
 *
 * - `AccessTokenVerifier`: a Bearer token the provider issued, verified (signature, issuer,
 *   audience, RFC 9068) and still alive (its refresh family or session not revoked).
 * - `UserStanding`: a user's roles and ban as they are now, whatever the token said.
 */
import { Context, Schema } from "effect"
import type { Effect, Option } from "effect"
import { GrantedRole } from "../../schema/Identity/User.js"

/**
 * The verified payload of an access token: RFC 9068 section 2.2 plus the provider's own claims
 * (src/identity/tokens/Tokens.ts, which signs them).
 */
export class AccessTokenClaims extends Schema.Class<AccessTokenClaims>("AccessTokenClaims")({
  iss: Schema.String,
  sub: Schema.String,
  aud: Schema.Union([Schema.String, Schema.Array(Schema.String)]),
  client_id: Schema.String,
  scope: Schema.String,
  jti: Schema.String,
  iat: Schema.Int,
  exp: Schema.Int,
  uid: Schema.Int,
  roles: Schema.Array(GrantedRole),
  site_roles: Schema.Array(Schema.String),
  site: Schema.optionalKey(Schema.String),
  fid: Schema.optionalKey(Schema.String),
  sid: Schema.optionalKey(Schema.String),
  auth_time: Schema.optionalKey(Schema.Int),
  content_limit: Schema.optionalKey(Schema.Literals(["sfw", "nsfw"]))
}) {
  get scopes(): ReadonlyArray<string> {
    return this.scope === "" ? [] : this.scope.split(" ")
  }
}

/** Why a presented access token was refused. Every reason is RFC 6750 `invalid_token`. */
export const AccessTokenRejection = Schema.Literals([
  "malformed",
  "unsupported_algorithm",
  "wrong_type",
  "unknown_key",
  "bad_signature",
  "wrong_issuer",
  "wrong_audience",
  "expired",
  "not_yet_valid",
  "invalid_claims",
  "revoked"
])
export type AccessTokenRejection = typeof AccessTokenRejection.Type

export class AccessTokenRejected extends Schema.TaggedError<AccessTokenRejected>()("AccessTokenRejected", {
  reason: AccessTokenRejection,
  message: Schema.String
}) {
  /** Envelope code (README.md, "Envelope codes"): 10003 for an expired token, 10002 for every other rejection. */
  get envelopeCode(): 10002 | 10003 {
    return this.reason === "expired" ? 10003 : 10002
  }
}

/** Access tokens for the catalog; implemented over the provider's JWKS (src/identity/tokens/AccessTokenVerifier.ts). */
export class AccessTokenVerifier extends Context.Service<AccessTokenVerifier, {
  readonly issuer: string
  /** The `aud` value every accepted token carries. */
  readonly audience: string
  /** A verified, live access token's claims, or why it was refused. */
  readonly verify: (token: string) => Effect.Effect<AccessTokenClaims, AccessTokenRejected>
}>()("identity/AccessTokenVerifier") {}

export interface Standing {
  readonly roles: ReadonlyArray<string>
  readonly banned: boolean
}

/**
 * A user's standing as the catalog needs it: current roles and whether the account is banned. Read
 * on every request that acts for a user, so a role granted or revoked (or a ban) applies at once,
 * whatever the credential. Implemented by src/identity/users/Standing.ts.
 */
export class UserStanding extends Context.Service<UserStanding, {
  /** The user's standing; none when the account no longer exists. */
  readonly of: (userId: number) => Effect.Effect<Option.Option<Standing>>
}>()("identity/UserStanding") {}
