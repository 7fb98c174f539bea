/**
 * `POST /oauth/revoke` (RFC 7009). Revoking a refresh token, or an access token of a family, ends
 * the whole family. 200 for a valid, unknown or malformed token; a token of another client is left
 * alone (still 200). Client credentials are optional (README.md, "Security"), but when sent they
 * must be right (401 `invalid_client`). A missing `token` is 400 `invalid_request`.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { RevokeRequest } from "../../../schema/Identity/Token.js"
import { FIRST_PARTY_CLIENT_ID } from "../clients/Clients.js"
import { Clients } from "../clients/Clients.js"
import { sha256Hex } from "../crypto/Secrets.js"
import { Sessions } from "../sessions/Sessions.js"
import { Tokens } from "../tokens/Tokens.js"
import { checkSecret, findClient, presentedClient } from "./ClientAuthentication.js"
import { Grants } from "./Grants.js"
import type { OAuthFailure } from "./OAuthFailure.js"
import { oauthFailure } from "./OAuthFailure.js"

export class Revocation extends Context.Service<Revocation>()("identity/Revocation", {
  make: Effect.gen(function*() {
    const grants = yield* Grants
    const clients = yield* Clients
    const tokens = yield* Tokens
    const sessions = yield* Sessions

    const revoke = Effect.fn("Revocation.revoke")(
      function*(request: RevokeRequest, authorization: string | undefined): Effect.fn.Return<void, OAuthFailure> {
        const presented = yield* presentedClient(authorization, request)
        let clientId: string | null = null
        if (Option.isSome(presented)) {
          const client = yield* findClient(clients, presented.value)
          yield* checkSecret(client, presented.value)
          clientId = client.clientId
        }
        if (request.token === undefined || request.token === "") {
          return yield* oauthFailure("invalid_request", "token is required")
        }
        const mayRevoke = (owner: string) => clientId === null || clientId === owner

        const refresh = yield* grants.findRefreshToken(sha256Hex(request.token))
        if (Option.isSome(refresh)) {
          if (mayRevoke(refresh.value.client_id)) yield* grants.revokeFamily(refresh.value.family_id, "revoked")
          return
        }
        // Not a refresh token: an access token of ours revokes its family (or its sign-in session).
        const claims = yield* Effect.option(tokens.verifyAccessToken(request.token))
        if (Option.isNone(claims)) return
        const { fid, sid } = claims.value
        if (fid !== undefined) {
          const owner = yield* grants.familyClient(fid)
          if (Option.isSome(owner) && mayRevoke(owner.value)) yield* grants.revokeFamily(fid, "revoked")
        } else if (sid !== undefined && claims.value.client_id === FIRST_PARTY_CLIENT_ID && clientId === null) {
          const session = yield* sessions.fromSid(sid)
          if (Option.isSome(session)) yield* sessions.end(session.value.id)
        }
      }
    )
    return { revoke } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
