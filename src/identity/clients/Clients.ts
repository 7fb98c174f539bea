/**
 * Registered OAuth clients: id, secret (stored as SHA-256; null for a public client, which
 * must use PKCE), exact redirect URIs, auto-consent flag, the site its users' site roles are scoped
 * to, a refresh-lifetime override, the catalog content limit of its users' tokens and the scopes it
 * may request (migrations/0012; `DEFAULT_CLIENT_SCOPES` unless an operator chose others), and its
 * entry in the public application directory (logo, tagline, homepage, order, listed; migrations/0015).
 *
 * Lookups are cached for a short time: the token endpoint finds the client before anything else
 * (src/identity/oauth/TokenService.ts), so a flood of requests for one client costs no database
 * round trip here.
 */
import { Cache, Context, Data, Duration, Effect, Exit, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import type { ContentLimit } from "../../../schema/Api/Security.js"
import { matchesHash, sha256Hex } from "../crypto/Secrets.js"
import { CONFIDENTIAL_ONLY_SCOPES, DEFAULT_CLIENT_SCOPES, isSupportedScope } from "../shared/Scopes.js"

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
  /** The scopes it may request at authorize and on refresh; any other is `invalid_scope`. */
  readonly allowedScopes: ReadonlyArray<string>
  readonly tagline: string
  readonly homepageUrl: string
  /** Position in the public directory (`GET /oauth/ecosystem`), then `clientId`. */
  readonly displayOrder: number
  /** Whether the public directory shows it; `client-info` answers for every client. */
  readonly listed: boolean
}

/** The directory entry of a client, as `client create|update` sets it; absent fields stay as they are. */
export interface ClientListing {
  readonly name?: string | undefined
  readonly logoUrl?: string | undefined
  readonly tagline?: string | undefined
  readonly homepageUrl?: string | undefined
  readonly displayOrder?: number | undefined
  readonly listed?: boolean | undefined
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
  content_limit: Schema.Literals(["sfw", "nsfw"]),
  allowed_scopes: Schema.Array(Schema.String),
  tagline: Schema.String,
  homepage_url: Schema.String,
  display_order: Schema.Number,
  listed: Schema.Boolean
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
  contentLimit: row.content_limit,
  allowedScopes: row.allowed_scopes,
  tagline: row.tagline,
  homepageUrl: row.homepage_url,
  displayOrder: row.display_order,
  listed: row.listed
})

/** The scopes of `scopes` the client may not request (RFC 6749 section 3.3), in their order. */
export const scopesNotAllowed = (client: Client, scopes: ReadonlyArray<string>): ReadonlyArray<string> =>
  scopes.filter((scope) => !client.allowedScopes.includes(scope))

/**
 * The allowed scopes an operator asked for, checked: known scopes only, at least one, and none a
 * public client may not hold (`CONFIDENTIAL_ONLY_SCOPES`).
 */
const checkAllowedScopes = (scopes: ReadonlyArray<string>, isPublic: boolean) =>
  Effect.gen(function*() {
    const distinct = [...new Set(scopes)]
    if (distinct.length === 0) return yield* new ClientInputError({ message: "at least one --scope is needed" })
    const unknown = distinct.filter((scope) => !isSupportedScope(scope))
    if (unknown.length > 0) return yield* new ClientInputError({ message: `unknown scope: ${unknown.join(", ")}` })
    const forbidden = distinct.filter((scope) => (CONFIDENTIAL_ONLY_SCOPES as ReadonlyArray<string>).includes(scope))
    if (isPublic && forbidden.length > 0) {
      return yield* new ClientInputError({
        message: `a public client cannot be granted ${forbidden.join(", ")} (it has no secret to prove who asks)`
      })
    }
    return distinct
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

/** Bounds of the directory fields; migrations/0015 holds the database to the same. */
export const ListingLimits = { name: 128, url: 2048, tagline: 200 } as const

/**
 * A logo or homepage the directory and the consent page may show: empty, or absolute https (http
 * only on a loopback host, for development), without credentials, at most `ListingLimits.url`.
 */
export const isListableUrl = (uri: string): boolean => {
  if (uri === "") return true
  if (uri.length > ListingLimits.url) return false
  let url: URL
  try {
    url = new URL(uri)
  } catch {
    return false
  }
  if (url.username !== "" || url.password !== "") return false
  if (url.protocol === "https:") return true
  return url.protocol === "http:" && ["127.0.0.1", "localhost", "[::1]"].includes(url.hostname)
}

// Control characters would let a tagline or name rewrite what a directory page shows around it.
const hasControlCharacters = (text: string) => /[\u0000-\u001f\u007f]/.test(text)

/** The listing fields an operator gave, checked; `display_order` must fit PostgreSQL's integer. */
const checkListing = (listing: ClientListing) =>
  Effect.gen(function*() {
    if (
      listing.name !== undefined &&
      (listing.name.length === 0 || listing.name.length > ListingLimits.name || hasControlCharacters(listing.name))
    ) {
      return yield* new ClientInputError({
        message: `the name must be 1 to ${ListingLimits.name} characters without control characters`
      })
    }
    for (const [flag, value] of [["--logo-url", listing.logoUrl], ["--homepage-url", listing.homepageUrl]] as const) {
      if (value !== undefined && !isListableUrl(value)) {
        return yield* new ClientInputError({
          message: `${flag} must be https (or http on 127.0.0.1 or localhost), at most ${ListingLimits.url} ` +
            `characters, without credentials: ${value}`
        })
      }
    }
    if (
      listing.tagline !== undefined &&
      (listing.tagline.length > ListingLimits.tagline || hasControlCharacters(listing.tagline))
    ) {
      return yield* new ClientInputError({
        message: `the tagline must be at most ${ListingLimits.tagline} characters without control characters`
      })
    }
    if (
      listing.displayOrder !== undefined &&
      !(Number.isInteger(listing.displayOrder) && Math.abs(listing.displayOrder) <= 2_147_483_647)
    ) {
      return yield* new ClientInputError({ message: "--display-order must be an integer of at most 2147483647" })
    }
    return listing
  })

const CACHE_TTL = Duration.seconds(30)

export class Clients extends Context.Service<Clients>()("identity/Clients", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const decodeRows = Schema.decodeUnknownEffect(Schema.Array(ClientRow))

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
      /** Default: `DEFAULT_CLIENT_SCOPES`. */
      readonly allowedScopes?: ReadonlyArray<string> | undefined
      /** The directory entry: none, unlisted, unless given. */
      readonly tagline?: string | undefined
      readonly homepageUrl?: string | undefined
      readonly displayOrder?: number | undefined
      readonly listed?: boolean | undefined
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
      yield* checkListing(input)
      const allowedScopes = yield* checkAllowedScopes(
        input.allowedScopes ?? DEFAULT_CLIENT_SCOPES,
        input.secret === null
      )
      const rows = yield* sql`
        INSERT INTO oauth_clients (client_id, name, logo_url, secret_hash, redirect_uris, auto_consent, site,
                                   refresh_ttl_seconds, content_limit, allowed_scopes, tagline, homepage_url,
                                   display_order, listed)
        VALUES (${input.clientId}, ${input.name}, ${input.logoUrl},
                ${input.secret === null ? null : sha256Hex(input.secret)}, ${[...new Set(input.redirectUris)]}::text[],
                ${input.autoConsent}, ${input.site}, ${input.refreshTtlSeconds}, ${input.contentLimit},
                ${allowedScopes}::text[], ${input.tagline ?? ""}, ${input.homepageUrl ?? ""},
                ${input.displayOrder ?? 0}, ${input.listed ?? false})
        ON CONFLICT (client_id) DO NOTHING
        RETURNING *
      `.pipe(Effect.flatMap(decodeRows), Effect.orDie)
      if (rows.length === 0) return yield* new ClientInputError({ message: `client ${input.clientId} exists` })
      return toClient(rows[0]!)
    })

    // Concurrent lookups of one id share one query; a found client is kept for a while, an unknown
    // id is not (a client registered a moment later must work at once).
    const cache = yield* Cache.makeWith(
      (clientId: string) =>
        sql`SELECT * FROM oauth_clients WHERE client_id = ${clientId}`.pipe(
          Effect.flatMap(decodeRows),
          Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), toClient)),
          Effect.orDie
        ),
      {
        capacity: 10_000,
        timeToLive: (exit) => Exit.isSuccess(exit) && Option.isSome(exit.value) ? CACHE_TTL : Duration.zero
      }
    )

    const find = Effect.fn("Clients.find")(function*(clientId: string) {
      if (!/^[A-Za-z0-9._~-]{1,128}$/.test(clientId)) return Option.none<Client>()
      return yield* Cache.get(cache, clientId)
    })

    /**
     * Changes a client: the scopes it may request (replaced when given) and its directory entry
     * (each given field). Other processes see the change once their cached copy of the client
     * expires (`CACHE_TTL`). Tokens already issued keep their scopes until they expire; a refresh
     * issues at most the allowed ones (src/identity/oauth/TokenService.ts). Fails when the client is
     * unknown or a value is refused.
     */
    const update = Effect.fn("Clients.update")(function*(
      clientId: string,
      changes: { readonly scopes?: ReadonlyArray<string> | undefined; readonly listing?: ClientListing | undefined }
    ) {
      const found = yield* sql`SELECT * FROM oauth_clients WHERE client_id = ${clientId}`.pipe(
        Effect.flatMap(decodeRows),
        Effect.orDie
      )
      if (found.length === 0) return yield* new ClientInputError({ message: `no client ${clientId}` })
      const allowedScopes = changes.scopes === undefined
        ? null
        : yield* checkAllowedScopes(changes.scopes, found[0]!.secret_hash === null)
      const listing = yield* checkListing(changes.listing ?? {})
      // A null parameter keeps the column as it is.
      const rows = yield* sql`
        UPDATE oauth_clients SET
          allowed_scopes = coalesce(${allowedScopes}::text[], allowed_scopes),
          name = coalesce(${listing.name ?? null}::text, name),
          logo_url = coalesce(${listing.logoUrl ?? null}::text, logo_url),
          tagline = coalesce(${listing.tagline ?? null}::text, tagline),
          homepage_url = coalesce(${listing.homepageUrl ?? null}::text, homepage_url),
          display_order = coalesce(${listing.displayOrder ?? null}::integer, display_order),
          listed = coalesce(${listing.listed ?? null}::boolean, listed)
        WHERE client_id = ${clientId}
        RETURNING *
      `.pipe(Effect.flatMap(decodeRows), Effect.orDie)
      if (rows.length === 0) return yield* new ClientInputError({ message: `no client ${clientId}` })
      yield* Cache.invalidate(cache, clientId)
      return toClient(rows[0]!)
    })

    /** Replaces the scopes a client may request (`update` with scopes only). */
    const updateScopes = (clientId: string, scopes: ReadonlyArray<string>) => update(clientId, { scopes })

    /**
     * The clients the public directory shows, in `display_order`, then `client_id` order. Read from
     * the database each time; the directory endpoint caches the answer (src/identity/directory).
     */
    const listed = sql`
      SELECT * FROM oauth_clients WHERE listed ORDER BY display_order, client_id
    `.pipe(
      Effect.flatMap(decodeRows),
      Effect.map((rows) => rows.map(toClient)),
      Effect.orDie,
      Effect.withSpan("Clients.listed")
    )

    return { create, find, update, updateScopes, listed } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}

/** Constant-time check of a presented secret against the client's stored hash. */
export const secretMatches = (client: Client, secret: string): boolean =>
  client.secretHash !== null && matchesHash(secret, client.secretHash)

/** RFC 6749 section 3.1.2.3: the redirect URI must equal a registered one, compared as strings. */
export const isRegisteredRedirect = (client: Client, redirectUri: string): boolean =>
  client.redirectUris.includes(redirectUri)

/**
 * A logout target is allowed when its origin equals the origin of a registered redirect URI
 * (README.md, "Security"). Answers the normalised URL to redirect to (never the raw string, so no
 * parser differential between this check and the browser), or none.
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
