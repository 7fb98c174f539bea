/**
 * The catalog's credential middleware (docs/api-contract.md, "Credentials, scopes and the content limit";
 * docs/writing.md, "Who may write"), checking in this order:
 * present (401 MISSING_CREDENTIAL) -> valid (401 INVALID_CREDENTIAL; an address that sent too many
 * unknown API keys: 429 RATE_LIMITED, see `Credentials`) -> request budget (429 RATE_LIMITED) ->
 * scope (403 SCOPE_REQUIRED) -> on a write (a declared route whose method is not GET), a credential
 * that belongs to a site (403 TENANT_MISMATCH) -> and on routes with a rule (schema/Api/Writes.ts):
 * a user (403 USER_IDENTITY_REQUIRED) in good standing with the rule's role (403 PERMISSION_REQUIRED).
 * The user's roles are read at that moment, whatever the credential carried. Whose resource it is
 * (another site's) belongs to the operations, which have the rows.
 */
import { Context, Duration, Effect, Layer, Option } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { HttpApiEndpoint } from "effect/http-api"
import type { unhandled } from "effect/Types"
import type { Scope } from "../../../schema/Annotations.js"
import { RequiredScope, Scopes } from "../../../schema/Annotations.js"
import { Authorization, Principal, SiteWriteAuthorization, WriteAuthorization } from "../../../schema/Api/Security.js"
import type { PrincipalShape } from "../../../schema/Api/Security.js"
import { holdsRole, type RouteRule, RouteRules } from "../../../schema/Api/Writes.js"
import {
  InvalidCredential,
  MissingCredential,
  PermissionRequired,
  RateLimited,
  ScopeRequired,
  TenantMismatch,
  UserIdentityRequired
} from "../../../schema/Problem.js"
import { addressBucket, clientAddress } from "../../platform/ClientAddress.js"
import { type AccessTokenClaims, AccessTokenVerifier, UserStanding } from "../../platform/IdentityPort.js"
import { cacheCounters } from "../../platform/Metrics.js"
import { keepListening } from "../../platform/Notifications.js"
import { makeMemoryRateLimiter } from "../../platform/RateLimiter.js"
import { ReadRouting } from "../../platform/ReadReplica.js"
import type { RouteTable } from "../../platform/RouteTable.js"
import { CatalogLimits } from "../limits/Limits.js"
import { RequestBudget } from "../limits/RequestBudget.js"
import { API_KEYS_CHANNEL, ApiKeys, hashKeyHex, looksLikeApiKey, parseKeyNotification } from "./ApiKeys.js"

/** How long a verified key is trusted without a lookup; revocation also evicts at once (NOTIFY). */
const CACHE_TTL = Duration.toMillis(Duration.seconds(60))
const CACHE_MAX = 10_000
/** How long, and how many, API keys found unknown are remembered, so a repeated one costs no lookup. */
const MISS_TTL = Duration.toMillis(Duration.minutes(10))
const MISS_MAX = 10_000

const catalogScopes: ReadonlySet<string> = new Set(Scopes)

/**
 * An identity access token as a catalog principal. The catalog scopes of a user token are the OAuth
 * scopes of the same name that the client asked for and the user granted (`catalog:read`,
 * `claims:write`, ...); `openid`, `profile` and the like grant nothing here. The site is the
 * client's site (empty when the client has none), the content limit the client's.
 */
export const principalFromAccessToken = (claims: AccessTokenClaims): PrincipalShape => ({
  credential: "access_token",
  credentialId: claims.jti,
  owner: `client:${claims.client_id}:user:${claims.uid}`,
  site: claims.site ?? "",
  scopes: new Set(claims.scopes.filter((scope): scope is Scope => catalogScopes.has(scope))),
  contentLimit: claims.content_limit ?? "sfw",
  user: Option.some({ id: claims.uid, sub: claims.sub, roles: claims.roles, siteRoles: claims.site_roles })
})

/**
 * Looks up credentials, with a small cache in front of the database.
 *
 * Unknown API keys cost the sender, not the database (docs/writing.md, "Limits"). Each process knows
 * the hash of every live key (`live`: read whenever LISTEN is in force, kept current by the
 * notifications of creations and revocations). A key it does not know as live is almost surely
 * unknown: before its lookup it takes a token from its client address's bucket
 * (`CATALOG_FAILED_AUTH_BURST`, `CATALOG_FAILED_AUTH_PER_MINUTE`; the address as the identity
 * provider resolves it, behind `TRUSTED_PROXIES`, an IPv6 address counting as its /64), and an empty
 * bucket is 429 `RATE_LIMITED` with `Retry-After`, without a lookup. A key found unknown is
 * remembered (`misses`, at most `MISS_MAX` for `MISS_TTL`) and refused again without a lookup while
 * still taking its token. A live key never meets the bucket, whatever its address sent before: it
 * is in `live`, or in the cache of keys verified in the last minute. Only a key created a moment
 * ago, whose notification has not arrived yet, takes a token (once: it is then known).
 *
 * The buckets are per process (a shared bucket would cost the query this saves): with n processes an
 * address gets n bursts. Access tokens are never throttled: a forged or expired one is refused by
 * its signature and claims, without a query.
 */
export class Credentials extends Context.Service<Credentials>()("catalog/Credentials", {
  make: Effect.gen(function*() {
    const keys = yield* ApiKeys
    const accessTokens = yield* AccessTokenVerifier
    const limits = yield* CatalogLimits
    const failures = yield* makeMemoryRateLimiter
    const cache = new Map<string, { readonly principal: PrincipalShape; readonly expires: number }>()
    /** Hash (hex) of every live key this process knows of, with its id (one entry per issued, unrevoked key). */
    const live = new Map<string, string>()
    /** Hashes of keys found unknown, with when they are forgotten; oldest first. */
    const misses = new Map<string, number>()
    const credentialCache = cacheCounters("catalog_api_keys")
    /** Bumped by every eviction: a lookup that began before one is not cached (it may predate the revocation). */
    let generation = 0

    // Every process evicts a revoked key as soon as the revoking transaction commits. A revocation
    // notified while the listener was away is unknown: the cache is emptied, and the live keys read
    // again, each time LISTEN is in force again (platform/Notifications.ts).
    yield* keepListening(API_KEYS_CHANNEL, {
      onConnected: Effect.gen(function*() {
        generation++
        cache.clear()
        const rows = yield* keys.liveHashes()
        live.clear()
        for (const row of rows) live.set(row.hash, row.id)
      }).pipe(
        // Kept as they were (a revocation still evicts); read again at the next reconnection.
        Effect.catchDefect((defect) => Effect.logWarning("could not read the live API keys", defect))
      ),
      onNotification: (payload) =>
        Effect.sync(() => {
          const notified = parseKeyNotification(payload)
          if (notified.created) {
            live.set(notified.hash, notified.id)
            return
          }
          generation++
          for (const [hash, entry] of cache) if (entry.principal.credentialId === notified.id) cache.delete(hash)
          for (const [hash, id] of live) if (id === notified.id) live.delete(hash)
        })
    })

    const unknownKey = () => new InvalidCredential({ detail: "The credential is unknown, revoked or malformed." })

    const rememberMiss = (hash: string, now: number) => {
      misses.delete(hash)
      misses.set(hash, now + MISS_TTL)
      if (misses.size > MISS_MAX) misses.delete(misses.keys().next().value!)
    }

    /** Not an API key: an access token of the identity provider, verified on every request. */
    const authenticateAccessToken = (token: string) =>
      accessTokens.verify(token).pipe(
        Effect.map(principalFromAccessToken),
        Effect.mapError((rejected) =>
          new InvalidCredential({
            detail: rejected.reason === "expired"
              ? "The access token has expired; refresh it once, then retry."
              : "The access token is invalid or was revoked."
          })
        )
      )

    // A key not in the cache: one this process does not know as live takes a token of its address's
    // bucket first; then the lookup (whose statement has its own SQL span).
    const lookUpKey = Effect.fnUntraced(function*(
      token: string,
      hash: string,
      now: number,
      request: HttpServerRequest.HttpServerRequest
    ) {
      if (!live.has(hash)) {
        const address = addressBucket(clientAddress(request, limits.trustedProxies))
        const admission = yield* failures.take(`failed-credentials:${address}`, limits.failedCredentials)
        if (!admission.allowed) {
          return yield* new RateLimited({
            detail: "Too many unknown credentials from this address; wait `Retry-After` seconds.",
            retry_after: admission.retryAfterSeconds
          })
        }
        const forgotten = misses.get(hash)
        if (forgotten !== undefined && forgotten > now) return yield* unknownKey()
      }
      const started = generation
      const found = yield* keys.findLive(token)
      if (Option.isNone(found)) {
        // Revoked (its notification still on the way), or never issued.
        live.delete(hash)
        if (looksLikeApiKey(token)) rememberMiss(hash, now)
        return yield* unknownKey()
      }
      const key = found.value
      const principal: PrincipalShape = {
        credential: "api_key",
        credentialId: key.id,
        owner: `key:${key.id}`,
        site: key.site,
        scopes: new Set(key.scopes),
        contentLimit: key.contentLimit,
        user: key.userId === null ? Option.none() : Option.some({
          id: key.userId,
          sub: "",
          roles: [],
          siteRoles: []
        })
      }
      if (generation !== started) return principal
      live.set(hash, key.id)
      if (cache.size >= CACHE_MAX) cache.clear()
      cache.set(hash, { principal, expires: now + CACHE_TTL })
      return principal
    })

    // Every request runs this, almost always to a cache hit, which is answered here without a
    // generator, a span or a call-site capture. `request` names the client address.
    const authenticate = (
      token: string,
      request: HttpServerRequest.HttpServerRequest
    ): Effect.Effect<PrincipalShape, InvalidCredential | RateLimited> => {
      if (!token.startsWith("sk_")) return authenticateAccessToken(token)
      const hash = hashKeyHex(token)
      const now = Date.now()
      const cached = cache.get(hash)
      if (cached !== undefined && cached.expires > now) {
        credentialCache.hit()
        return Effect.succeed(cached.principal)
      }
      credentialCache.miss()
      return lookUpKey(token, hash, now, request)
    }

    return { authenticate } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(
    // The access-token verifier is identity's, plugged in by the composition root (src/App.ts).
    Layer.provide([ApiKeys.layer, CatalogLimits.layer])
  )
}

/** `Authorization: Bearer <token>` with the scheme matched case-insensitively (RFC 7235 2.1). */
export const bearerToken = (header: string | undefined): Option.Option<string> => {
  if (header === undefined) return Option.none()
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(header)
  return match ? Option.some(match[1]!) : Option.some("")
}

/** What the credential middleware refuses a request with on every route. */
type Refusal = MissingCredential | InvalidCredential | RateLimited | ScopeRequired

interface RouteNeeds {
  readonly scope: Scope | "any"
  readonly rule: RouteRule | undefined
  /** A declared route whose method is not GET: its credential must belong to a site. */
  readonly write: boolean
}

const makeAuthorize = (routes: RouteTable) =>
  Effect.gen(function*() {
    const credentials = yield* Credentials
    const budget = yield* RequestBudget
    const standing = yield* UserStanding
    const needs = new Map<string, RouteNeeds>()
    for (const route of routes.routes) {
      const middlewares = route.endpoint.middlewares as ReadonlySet<unknown>
      const ruled = middlewares.has(WriteAuthorization) || middlewares.has(SiteWriteAuthorization)
      if (!middlewares.has(Authorization) && !ruled) continue
      const scope = Context.getOption(route.annotations, RequiredScope)
      if (Option.isNone(scope)) {
        return yield* Effect.die(new Error(`${route.method} ${route.path} has no RequiredScope annotation`))
      }
      const rule = Option.getOrUndefined(Context.getOption(route.annotations, RouteRules))
      if (rule !== undefined && !ruled) {
        return yield* Effect.die(
          new Error(`${route.method} ${route.path} has a rule but not WriteAuthorization (or SiteWriteAuthorization)`)
        )
      }
      // SiteWriteAuthorization documents no user or role problem: its rules may need neither.
      if (middlewares.has(SiteWriteAuthorization) && (rule === undefined || rule.user || rule.role !== undefined)) {
        return yield* Effect.die(
          new Error(`${route.method} ${route.path}: SiteWriteAuthorization needs a rule without user or role`)
        )
      }
      // A write's `TENANT_MISMATCH` is among the problems `declare` gives it (schema/Api/Writes.ts).
      if (rule === undefined && route.method !== "GET") {
        return yield* Effect.die(new Error(`${route.method} ${route.path} writes but is not declared with a rule`))
      }
      needs.set(`${route.method} ${route.path}`, { scope: scope.value, rule, write: route.method !== "GET" })
    }

    /** What the endpoint being served needs (the middleware is handed the endpoint). */
    const routeNeeds = (endpoint: HttpApiEndpoint.Top) => needs.get(`${endpoint.method} ${endpoint.path}`)

    /** The user the rule needs, with the roles and standing they have now. */
    const actingUser = (principal: PrincipalShape, rule: RouteRule) =>
      Effect.gen(function*() {
        if (Option.isNone(principal.user)) {
          return yield* new UserIdentityRequired({
            detail: "This operation acts for a person: use an identity access token or an API key created for a " +
              "user (`api-key create --user <id>`)."
          })
        }
        const user = principal.user.value
        const now = yield* standing.of(user.id)
        if (Option.isNone(now) || now.value.banned) {
          return yield* new PermissionRequired({ detail: "The credential's user may not act on the catalog." })
        }
        if (rule.role !== undefined && !holdsRole(now.value.roles, rule.role)) {
          return yield* new PermissionRequired({
            detail: `This operation needs the \`${rule.role}\` role or one above it.`
          })
        }
        return { ...principal, user: Option.some({ ...user, roles: now.value.roles }) } satisfies PrincipalShape
      })

    /**
     * Credential, budget and scope: what every route checks. Every request runs it, so it is
     * written as plain steps, not a generator: each step of the happy path is answered at once.
     */
    const authenticate = (
      endpoint: HttpApiEndpoint.Top
    ): Effect.Effect<PrincipalShape, Refusal, HttpServerRequest.HttpServerRequest> =>
      Effect.flatMap(Effect.service(HttpServerRequest.HttpServerRequest), (request): Effect.Effect<
        PrincipalShape,
        Refusal,
        HttpServerRequest.HttpServerRequest
      > => {
        const token = bearerToken(request.headers.authorization)
        if (Option.isNone(token)) {
          return Effect.fail(new MissingCredential({ detail: "Send `Authorization: Bearer <token>`." }))
        }
        if (token.value === "") {
          return Effect.fail(new InvalidCredential({ detail: "The Authorization header is not a Bearer credential." }))
        }
        return Effect.flatMap(credentials.authenticate(token.value, request), (principal) =>
          Effect.flatMap(budget.take(principal.owner), (admission) => {
            const limitHeaders = budget.headers(admission)
            const checked: Effect.Effect<PrincipalShape, Refusal> = admission.retryAfterSeconds > 0
              ? Effect.fail(
                new RateLimited({
                  detail: "This credential's request budget is spent; wait `Retry-After` seconds.",
                  retry_after: admission.retryAfterSeconds
                })
              )
              : scopeChecked(endpoint, principal)
            // Listed after any policy the answer already names (a spent quota), as one list per field.
            return HttpEffect.withPreResponseHandler(
              checked,
              (_request, response) =>
                Effect.succeed(withLimitHeaders(response, limitHeaders))
            )
          }))
      })

    const scopeChecked = (
      endpoint: HttpApiEndpoint.Top,
      principal: PrincipalShape
    ): Effect.Effect<PrincipalShape, ScopeRequired> => {
      const need = routeNeeds(endpoint)
      return need !== undefined && need.scope !== "any" && !principal.scopes.has(need.scope)
        ? Effect.fail(new ScopeRequired({ detail: `This operation needs the \`${need.scope}\` scope.` }))
        : Effect.succeed(principal)
    }

    /** Then the route's rule. */
    const authenticateForRule = (endpoint: HttpApiEndpoint.Top) =>
      Effect.gen(function*() {
        const principal = yield* authenticate(endpoint)
        const need = routeNeeds(endpoint)
        // An access token of a client without a site: nothing it writes could belong to anyone. The
        // problem is the endpoint's own (`declare` gives it to every write), not the middleware's,
        // whose problems every route it guards would document; the endpoint's codec encodes it.
        if (need?.write === true && principal.site === "") {
          return yield* Effect.fail(
            new TenantMismatch({
              detail: "The credential belongs to no site; writes need one."
            }) as unknown as unhandled
          )
        }
        return need?.rule?.user === true ? yield* actingUser(principal, need.rule) : principal
      })

    return { authenticate, authenticateForRule } as const
  })

/** The RateLimit fields appended to the ones the response already has (RFC 9651 lists). */
const withLimitHeaders = (
  response: HttpServerResponse.HttpServerResponse,
  fields: Readonly<Record<string, string>>
): HttpServerResponse.HttpServerResponse => {
  const merged: Record<string, string> = {}
  for (const name in fields) {
    const existing = response.headers[name]
    merged[name] = existing === undefined ? fields[name]! : `${existing}, ${fields[name]}`
  }
  return HttpServerResponse.setHeaders(response, merged)
}

/**
 * The middleware reads the `Authorization` header itself (`bearerToken`): the decoded bearer
 * credential cannot tell a missing header from one of another scheme.
 */
export const AuthorizationLive = (routes: RouteTable) =>
  Layer.effect(
    Authorization,
    Effect.gen(function*() {
      const a = yield* makeAuthorize(routes)
      const routing = yield* ReadRouting
      return Authorization.of({
        bearer: (httpEffect, { endpoint }) =>
          Effect.flatMap(
            a.authenticate(endpoint),
            (principal) => {
              const handled = Effect.provideService(httpEffect, Principal, principal)
              return replicaReadable(endpoint) ? routing.reads(handled) : handled
            }
          )
      })
    })
  )

/**
 * GET routes kept on the primary: the feeds (docs/change-feed.md; the claim event log), whose
 * positions and horizon are the primary's, and the credential's own description.
 */
const primaryReads: ReadonlySet<string> = new Set([
  "/v2/catalog/changes",
  "/v2/catalog/redirects",
  "/v2/catalog/claim-events",
  "/v2/credential"
])

/**
 * The routes whose handlers may read from the read replica once the credential is checked
 * (src/platform/ReadReplica.ts): the GET routes of the credential middleware but `primaryReads`.
 */
const replicaReadable = (endpoint: HttpApiEndpoint.Top) => endpoint.method === "GET" && !primaryReads.has(endpoint.path)

export const WriteAuthorizationLive = (routes: RouteTable) =>
  Layer.effect(
    WriteAuthorization,
    Effect.map(makeAuthorize(routes), (a) =>
      WriteAuthorization.of({
        bearer: (httpEffect, { endpoint }) =>
          Effect.flatMap(
            a.authenticateForRule(endpoint),
            (principal) => Effect.provideService(httpEffect, Principal, principal)
          )
      }))
  )

export const SiteWriteAuthorizationLive = (routes: RouteTable) =>
  Layer.effect(
    SiteWriteAuthorization,
    Effect.map(makeAuthorize(routes), (a) =>
      SiteWriteAuthorization.of({
        bearer: (httpEffect, { endpoint }) =>
          Effect.flatMap(
            // Its routes' rules need no user or role (checked when the route table is read).
            a.authenticateForRule(endpoint).pipe(
              Effect.catchTags({ UserIdentityRequired: Effect.die, PermissionRequired: Effect.die })
            ),
            (principal) => Effect.provideService(httpEffect, Principal, principal)
          )
      }))
  )
