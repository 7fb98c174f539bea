/**
 * Client authentication at the token and revocation endpoints (RFC 6749 section 2.3):
 * `client_secret_basic` (RFC 6749 section 2.3.1: the id and secret are form-urlencoded before
 * base64), `client_secret_post`, or none for a public client. Using two methods at once is
 * `invalid_request`; every failed authentication is `invalid_client` (401) with a `Basic` challenge.
 * The back-channel envelope endpoints (the user lookup, src/identity/directory/Directory.ts) take
 * `client_secret_basic` only, through `authenticateBasic`.
 */
import { Data, Effect, Option, Result } from "effect"
import type { Client } from "../clients/Clients.js"
import type { Clients } from "../clients/Clients.js"
import { isPublicClient, secretMatches } from "../clients/Clients.js"
import { OAuthFailure, oauthFailure } from "./OAuthFailure.js"

export interface PresentedClient {
  readonly clientId: string
  readonly secret: string | null
  readonly method: "client_secret_basic" | "client_secret_post" | "none"
}

const formDecode = (value: string) => decodeURIComponent(value.replace(/\+/g, " "))

export const invalidClient = (description: string) =>
  oauthFailure("invalid_client", description, {
    status: 401,
    headers: { "www-authenticate": `Basic realm="shiori", charset="UTF-8"` }
  })

/** Who claims to be calling. None when neither a Basic header nor a body `client_id` was sent. */
export const presentedClient = (
  authorization: string | undefined,
  body: { readonly client_id?: string | undefined; readonly client_secret?: string | undefined }
): Effect.Effect<Option.Option<PresentedClient>, OAuthFailure> =>
  Effect.gen(function*() {
    const basic = authorization === undefined ? null : /^\s*basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(authorization)
    if (authorization !== undefined && basic === null && /^\s*basic\b/i.test(authorization)) {
      return yield* invalidClient("malformed Basic credentials")
    }
    if (basic !== null) {
      const decoded = Buffer.from(basic[1]!, "base64").toString("utf8")
      const colon = decoded.indexOf(":")
      if (colon < 0) return yield* invalidClient("malformed Basic credentials")
      let clientId: string
      let secret: string
      try {
        clientId = formDecode(decoded.slice(0, colon))
        secret = formDecode(decoded.slice(colon + 1))
      } catch {
        return yield* invalidClient("malformed Basic credentials")
      }
      if (body.client_secret !== undefined) {
        return yield* oauthFailure("invalid_request", "use one client authentication method, not two")
      }
      if (body.client_id !== undefined && body.client_id !== clientId) {
        return yield* oauthFailure("invalid_request", "client_id in the body differs from the Basic credentials")
      }
      return Option.some<PresentedClient>({ clientId, secret, method: "client_secret_basic" })
    }
    if (body.client_id === undefined || body.client_id === "") {
      if (body.client_secret !== undefined) return yield* oauthFailure("invalid_request", "client_id is required")
      return Option.none()
    }
    return Option.some<PresentedClient>({
      clientId: body.client_id,
      secret: body.client_secret ?? null,
      method: body.client_secret === undefined ? "none" : "client_secret_post"
    })
  })

/** The registered client behind a claimed id, before any secret is checked. */
export const findClient = (
  clients: Clients["Service"],
  presented: PresentedClient
): Effect.Effect<Client, OAuthFailure> =>
  clients.find(presented.clientId).pipe(
    Effect.flatMap(Option.match({
      onNone: () => Effect.fail(invalidClient("unknown client")),
      onSome: Effect.succeed
    }))
  )

/** Checks the secret (constant time) or that a public client sent none. */
export const checkSecret = (client: Client, presented: PresentedClient): Effect.Effect<void, OAuthFailure> => {
  if (isPublicClient(client)) {
    return presented.secret === null ? Effect.void : Effect.fail(invalidClient("public clients have no secret"))
  }
  if (presented.secret === null) return Effect.fail(invalidClient("client authentication is required"))
  return secretMatches(client, presented.secret) ? Effect.void : Effect.fail(invalidClient("wrong client credentials"))
}

/**
 * A back-channel caller refused: no, malformed or wrong Basic credentials (`unauthenticated`), or a
 * public client, which has no secret to prove who is calling (`public_client`).
 */
export class ClientRefused extends Data.TaggedError("ClientRefused")<{
  readonly reason: "unauthenticated" | "public_client"
}> {}

/**
 * The confidential client behind an `Authorization: Basic` header (RFC 7617; the id and secret
 * form-urlencoded first, RFC 6749 section 2.3.1), with the token endpoint's parsing and its
 * constant-time secret check. A public client is refused whatever it sends.
 */
export const authenticateBasic = (
  clients: Clients["Service"],
  authorization: string | undefined
): Effect.Effect<Client, ClientRefused> =>
  Effect.gen(function*() {
    const unauthenticated = new ClientRefused({ reason: "unauthenticated" })
    const presented = yield* Effect.mapError(presentedClient(authorization, {}), () => unauthenticated)
    if (Option.isNone(presented) || presented.value.method !== "client_secret_basic") return yield* unauthenticated
    const client = yield* Effect.mapError(findClient(clients, presented.value), () => unauthenticated)
    if (isPublicClient(client)) return yield* new ClientRefused({ reason: "public_client" })
    if (Result.isFailure(yield* Effect.result(checkSecret(client, presented.value)))) return yield* unauthenticated
    return client
  })
