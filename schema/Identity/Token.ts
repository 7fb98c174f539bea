/**
 * The token endpoint's wire shapes (RFC 6749 sections 4.1.3, 5.1 and 6).
 */
import { Schema } from "effect"
import { Bounded, MaxLength, MinLength } from "./Limits.js"

/** Access token lifetime in seconds (15 minutes). */
export const ACCESS_TOKEN_TTL_SECONDS = 900

const optionalString = (field: Schema.Codec<string>, description: string) =>
  Schema.optionalKey(field).annotate({ description })

// Each class's fields are a Struct carrying the identifier and description: the OpenAPI document
// shows the encoded Struct, which would otherwise be an undescribed `<Name>Encoded`; the class's
// own description is the one a response takes.

/**
 * The raw token request as a client sends it (JSON, or form-urlencoded per RFC 6749).
 * Every field is an optional string so decoding never fails on an unexpected grant; the token
 * service narrows it to one of the grants below and answers RFC 6749 section 5.2 errors
 * (`unsupported_grant_type`, `invalid_request`) itself. Only a value no client sends (too long,
 * NUL, a verifier outside RFC 7636's 43..128 characters) fails decoding: `invalid_request`.
 */
export class TokenRequest extends Schema.Class<TokenRequest>("TokenRequest")(
  Schema.Struct({
    grant_type: optionalString(Bounded(MaxLength.keyword), "`authorization_code` or `refresh_token`."),
    code: optionalString(Bounded(MaxLength.code), "The authorization code (64 hex characters)."),
    redirect_uri: optionalString(Bounded(MaxLength.uri), "Must equal the redirect_uri sent to authorize."),
    client_id: optionalString(Bounded(MaxLength.clientId), "Client id (client_secret_post or public client)."),
    client_secret: optionalString(Bounded(MaxLength.clientSecret), "Client secret (client_secret_post)."),
    code_verifier: optionalString(
      Bounded(MaxLength.codeVerifier, MinLength.codeVerifier),
      "PKCE verifier (RFC 7636), when a challenge was sent at authorize."
    ),
    refresh_token: optionalString(Bounded(MaxLength.refreshToken), "The refresh token to rotate."),
    scope: optionalString(
      Bounded(MaxLength.scope),
      "Space-separated; on refresh it may narrow the granted scope, never widen it."
    )
  }).annotate({ identifier: "TokenRequest", description: "Token request (both grants)." }),
  { description: "Token request (both grants)." }
) {}

/** The authorization_code grant after narrowing (RFC 6749 section 4.1.3, RFC 7636 section 4.5). */
export const AuthorizationCodeGrant = Schema.Struct({
  grant_type: Schema.Literal("authorization_code"),
  code: Schema.String.check(Schema.isPattern(/^[0-9a-f]{64}$/u)),
  redirect_uri: Schema.String,
  client_id: Schema.optionalKey(Schema.String),
  client_secret: Schema.optionalKey(Schema.String),
  code_verifier: Schema.optionalKey(Schema.String)
})
export type AuthorizationCodeGrant = typeof AuthorizationCodeGrant.Type

/** The refresh_token grant after narrowing (RFC 6749 section 6). */
export const RefreshTokenGrant = Schema.Struct({
  grant_type: Schema.Literal("refresh_token"),
  refresh_token: Schema.String.check(Schema.isMinLength(1)),
  client_id: Schema.optionalKey(Schema.String),
  client_secret: Schema.optionalKey(Schema.String),
  scope: Schema.optionalKey(Schema.String)
})
export type RefreshTokenGrant = typeof RefreshTokenGrant.Type

/** The two grants (`authorization_code`, `refresh_token`), discriminated by `grant_type`. */
export const TokenGrant = Schema.Union([AuthorizationCodeGrant, RefreshTokenGrant])
export type TokenGrant = typeof TokenGrant.Type

/** Successful token response (RFC 6749 section 5.1); bare JSON, never the envelope. */
export class TokenResponse extends Schema.Class<TokenResponse>("TokenResponse")(
  Schema.Struct({
    access_token: Schema.String.annotate({ description: "JWT (RFC 9068), valid 15 minutes." }),
    token_type: Schema.Literal("Bearer"),
    expires_in: Schema.Int.annotate({ description: "Always 900 seconds.", examples: [ACCESS_TOKEN_TTL_SECONDS] }),
    refresh_token: Schema.String.annotate({
      description: "Opaque, not a JWT; replaced on every refresh; lifetime follows the session."
    }),
    scope: Schema.optionalKey(Schema.String).annotate({
      description: "Echoes the granted scope."
    }),
    id_token: Schema.optionalKey(Schema.String).annotate({
      description: "RS256 id_token, present when the scope includes `openid`."
    })
  }).annotate({ identifier: "TokenResponse", description: "Token response." }),
  { description: "Token response." }
) {}

/** Revocation request (RFC 7009 section 2.1). */
export class RevokeRequest extends Schema.Class<RevokeRequest>("RevokeRequest")(
  Schema.Struct({
    token: optionalString(Bounded(MaxLength.jwt), "The refresh token (or an access token) to revoke."),
    token_type_hint: optionalString(Bounded(MaxLength.keyword), "`refresh_token` or `access_token`; a hint only."),
    client_id: optionalString(Bounded(MaxLength.clientId), "Client id (client_secret_post or public client)."),
    client_secret: optionalString(Bounded(MaxLength.clientSecret), "Client secret (client_secret_post).")
  }).annotate({ identifier: "RevokeRequest", description: "Revocation request." }),
  { description: "Revocation request." }
) {}
