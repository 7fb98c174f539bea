/**
 * Registered OAuth clients (SPEC 5): id, secret (stored as SHA-256; null for a public client, which
 * must use PKCE), exact redirect URIs, auto-consent flag, the site its users' site roles are scoped
 * to, a refresh-lifetime override and the catalog content limit of its users' tokens.
 *
 * Lookups are cached for a short time: the token endpoint finds the client before anything else
 * (DECISIONS 9), so a flood of requests for one client costs no database round trip here.
 */
import { SqlClient } from "@effect/sql"
import { Cache, Data, Duration, Effect, Exit, Option, Schema } from "effect"
import type { ContentLimit } from "../../../schema/Api/Security.js"
import { matchesHash, sha256Hex } from "../crypto/Secrets.js"

export interface Client {
  readonly clientId: string
  readonly name: string
  readonly logoUrl: string
  readonly secretHash: string | null
  readonly redirectUris: ReadonlyArray<string>
  readonly autoConsent: boolean
  readonly site: string | null
  readonly refreshTtlSeconds: number | null
  readonly contentLimit: ContentLimit
}

export const isPublicClient = (client: Client): boolean => client.secretHash === null

/** The client id the provider's own sign-in uses for its tokens; never registrable. */
export const FIRST_PARTY_CLIENT_ID = "shiori"

export class ClientInputError extends Data.TaggedError("ClientInputError")<{ readonly message: string }> {}

const ClientRow = Schema.Struct({
  client_id: Schema.String,
  name: Schema.String,
  logo_url: Schema.String,
  secret_hash: Schema.NullOr(Schema.String),
  redirect_uris: Schema.Array(Schema.String),
  auto_consent: Schema.Boolean,
  site: Schema.NullOr(Schema.String),
  refresh_ttl_seconds: Schema.NullOr(Schema.Number),
  content_limit: Schema.Literal("sfw", "nsfw")
})

const toClient = (row: typeof ClientRow.Type): Client => ({
  clientId: row.client_id,
  name: row.name,
  logoUrl: row.logo_url,
  secretHash: row.secret_hash,
  redirectUris: row.redirect_uris,
  autoConsent: row.auto_consent,
  site: row.site,
  refreshTtlSeconds: row.refresh_ttl_seconds,
  contentLimit: row.content_limit
})

/** Client secrets are stored with one SHA-256, so they must be high-entropy (at least 24 characters). */
export const MIN_SECRET_LENGTH = 24

/**
 * A registrable redirect URI: absolute, no fragment (RFC 6749 section 3.1.2); https, or http on a
 * loopback host for development and native apps (RFC 8252 section 7.3).
 */
export const isRegistrableRedirectUri = (uri: string): boolean => {
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return false
  }
  if (url.hash !== "" || uri.includes("#")) return false
  if (url.username !== "" || url.password !== "") return false
  if (url.protocol === "https:") return true
  return url.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)
}

const CACHE_TTL = Duration.seconds(30)

export class Clients extends Effect.Service<Clients>()("identity/Clients", {
  effect: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const decodeRows = Schema.decodeUnknown(Schema.Array(ClientRow))

    const create = Effect.fn("Clients.create")(function*(input: {
      readonly clientId: string
      readonly name: string
      readonly secret: string | null
      readonly redirectUris: ReadonlyArray<string>
      readonly autoConsent: boolean
      readonly site: string | null
      readonly logoUrl: string
      readonly refreshTtlSeconds: number | null
      readonly contentLimit: ContentLimit
    }) {
      if (!/^[A-Za-z0-9._~-]{1,128}$/.test(input.clientId) || input.clientId === FIRST_PARTY_CLIENT_ID) {
        return yield* new ClientInputError({
          message: `client id must match ^[A-Za-z0-9._~-]{1,128}$ and not be ${FIRST_PARTY_CLIENT_ID}`
        })
      }
      if (input.secret !== null && input.secret.length < MIN_SECRET_LENGTH) {
        return yield* new ClientInputError({ message: `the secret must be at least ${MIN_SECRET_LENGTH} characters` })
      }
      if (input.redirectUris.length === 0) {
        return yield* new ClientInputError({ message: "at least one --redirect-uri is needed" })
      }
      const bad = input.redirectUris.filter((uri) => !isRegistrableRedirectUri(uri))
      if (bad.length > 0) {
        return yield* new ClientInputError({
          message: `redirect URIs must be absolute https (or http on a loopback host) without fragment: ${
            bad.join(", ")
          }`
        })
      }
      if (input.site !== null && !/^[a-z][a-z0-9_]{0,63}$/.test(input.site)) {
        return yield* new ClientInputError({ message: `site must match ^[a-z][a-z0-9_]*$ (max 64): ${input.site}` })
      }
      if (input.logoUrl !== "" && !/^https?:\/\//.test(input.logoUrl)) {
        return yield* new ClientInputError({ message: `logo URL must be http(s): ${input.logoUrl}` })
      }
      const rows = yield* sql`
        INSERT INTO oauth_clients (client_id, name, logo_url, secret_hash, redirect_uris, auto_consent, site,
                                   refresh_ttl_seconds, content_limit)
        VALUES (${input.clientId}, ${input.name}, ${input.logoUrl},
                ${input.secret === null ? null : sha256Hex(input.secret)}, ${[...new Set(input.redirectUris)]}::text[],
                ${input.autoConsent}, ${input.site}, ${input.refreshTtlSeconds}, ${input.contentLimit})
        ON CONFLICT (client_id) DO NOTHING
        RETURNING *
      `.pipe(Effect.flatMap(decodeRows), Effect.orDie)
      if (rows.length === 0) return yield* new ClientInputError({ message: `client ${input.clientId} exists` })
      return toClient(rows[0]!)
    })

    // Concurrent lookups of one id share one query; a found client is kept for a while, an unknown
    // id is not (a client registered a moment later must work at once).
    const cache = yield* Cache.makeWith({
      capacity: 10_000,
      lookup: (clientId: string) =>
        sql`SELECT * FROM oauth_clients WHERE client_id = ${clientId}`.pipe(
          Effect.flatMap(decodeRows),
          Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toClient)),
          Effect.orDie
        ),
      timeToLive: (exit) => Exit.isSuccess(exit) && Option.isSome(exit.value) ? CACHE_TTL : Duration.zero
    })

    const find = Effect.fn("Clients.find")(function*(clientId: string) {
      if (!/^[A-Za-z0-9._~-]{1,128}$/.test(clientId)) return Option.none<Client>()
      return yield* cache.get(clientId)
    })

    return { create, find } as const
  })
}) {}

/** Constant-time check of a presented secret against the client's stored hash. */
export const secretMatches = (client: Client, secret: string): boolean =>
  client.secretHash !== null && matchesHash(secret, client.secretHash)

/** RFC 6749 section 3.1.2.3: the redirect URI must equal a registered one, compared as strings. */
export const isRegisteredRedirect = (client: Client, redirectUri: string): boolean =>
  client.redirectUris.includes(redirectUri)

/**
 * DECISIONS 8: a logout target is allowed when its origin equals the origin of a registered redirect
 * URI. Answers the normalised URL to redirect to (never the raw string, so no parser differential
 * between this check and the browser), or none.
 */
export const allowedLogoutTarget = (client: Client, target: string): Option.Option<string> => {
  let url: URL
  try {
    url = new URL(target)
  } catch {
    return Option.none()
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") return Option.none()
  if (url.username !== "" || url.password !== "") return Option.none()
  const origins = new Set(client.redirectUris.flatMap((uri) => {
    try {
      return [new URL(uri).origin]
    } catch {
      return []
    }
  }))
  return origins.has(url.origin) ? Option.some(url.href) : Option.none()
}
