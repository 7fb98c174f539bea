/**
 * Identity's side of the catalog's contract (src/platform/IdentityPort.ts): the access-token verifier
 * over the provider's JWKS with its liveness check, and users' standing, both reading the provider's
 * tables. The composition root (src/App.ts) provides it under the catalog's server stack, whether or
 * not the identity server runs in the same process.
 */
import { Layer } from "effect"
import { AccessTokenVerifierJwks } from "./tokens/AccessTokenVerifier.js"
import { TokenLiveness } from "./tokens/Liveness.js"
import { UserStandingLive } from "./users/Standing.js"

export const IdentityPortLive = Layer.merge(
  AccessTokenVerifierJwks.pipe(Layer.provide(TokenLiveness.layer)),
  UserStandingLive
)
