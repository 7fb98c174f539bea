/**
 * OpenID Provider metadata (OpenID Connect Discovery 1.0 section 3, RFC 8414 section 2) and the
 * JWK Set (RFC 7517 section 5) served at `{issuer}/oauth/jwks` (key rotation: docs/decisions.md,
 * "Identity: tokens and sessions").
 */
import { Schema } from "effect"

const Strings = Schema.Array(Schema.String)

// Each class's fields are a Struct carrying the identifier and description: the OpenAPI document
// shows the encoded Struct, which would otherwise be an undescribed `<Name>Encoded`; the class's
// own description is the one a response takes.

export class DiscoveryDocument extends Schema.Class<DiscoveryDocument>("DiscoveryDocument")(
  Schema.Struct({
    issuer: Schema.String.annotate({ description: "Byte-identical to every token's `iss`." }),
    authorization_endpoint: Schema.String,
    token_endpoint: Schema.String,
    userinfo_endpoint: Schema.String,
    jwks_uri: Schema.String,
    revocation_endpoint: Schema.String,
    end_session_endpoint: Schema.String,
    response_types_supported: Strings,
    response_modes_supported: Strings,
    grant_types_supported: Strings,
    subject_types_supported: Strings,
    id_token_signing_alg_values_supported: Strings,
    scopes_supported: Strings,
    claims_supported: Strings,
    token_endpoint_auth_methods_supported: Strings,
    revocation_endpoint_auth_methods_supported: Strings,
    code_challenge_methods_supported: Strings,
    authorization_response_iss_parameter_supported: Schema.Boolean,
    request_parameter_supported: Schema.Boolean.annotate({
      description: "false: a `request` parameter is refused with `request_not_supported` (OIDC Core 6.1)."
    }),
    request_uri_parameter_supported: Schema.Boolean.annotate({
      description: "false: a `request_uri` parameter is refused with `request_uri_not_supported` (OIDC Core 6.2)."
    }),
    claims_parameter_supported: Schema.Boolean
  }).annotate({ identifier: "DiscoveryDocument", description: "OpenID Provider configuration." }),
  { description: "OpenID Provider configuration." }
) {}

/** A public RSA signing key (RFC 7517 section 4, RFC 7518 section 6.3.1). */
export class Jwk extends Schema.Class<Jwk>("Jwk")(
  Schema.Struct({
    kty: Schema.Literal("RSA"),
    kid: Schema.String.annotate({ description: "RFC 7638 thumbprint of the key." }),
    use: Schema.Literal("sig"),
    alg: Schema.Literal("RS256"),
    n: Schema.String,
    e: Schema.String
  }).annotate({ identifier: "Jwk", description: "Public signing key." }),
  { description: "Public signing key." }
) {}

export class Jwks extends Schema.Class<Jwks>("Jwks")(
  Schema.Struct({
    keys: Schema.Array(Jwk)
  }).annotate({
    identifier: "Jwks",
    description: "JWK Set: the active key and retired keys whose tokens may still be live."
  }),
  { description: "JWK Set: the active key and retired keys whose tokens may still be live." }
) {}
