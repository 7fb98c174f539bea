/**
 * The catalog's credential middleware (docs/api-contract.md, "Credentials, scopes and the content limit";
 * docs/writing.md, "Who may write"), checking in this order:
 * present (401 MISSING_CREDENTIAL) -> valid (401 INVALID_CREDENTIAL) -> request budget (429
 * RATE_LIMITED) -> scope (403 SCOPE_REQUIRED) -> and on routes with a rule (schema/Api/Writes.ts):
 * a user (403 USER_IDENTITY_REQUIRED) in good standing with the rule's role (403 PERMISSION_REQUIRED).
 * The user's roles are read at that moment, whatever the credential carried. Tenant checks belong to
 * the operations, which know whose resource it is.
 */
import { Context, Duration, Effect, Layer, Option } from "effect"
import { HttpEffect, HttpServerRequest, HttpServerResponse } from "effect/http"
import type { HttpApiEndpoint } from "effect/http-api"
import type { Scope } from "../../../schema/Annotations.js"
import { RequiredScope, Scopes } from "../../../schema/Annotations.js"
import { Authorization, Principal, WriteAuthorization } from "../../../schema/Api/Security.js"
import type { PrincipalShape } from "../../../schema/Api/Security.js"
import { holdsRole, type RouteRule, RouteRules } from "../../../schema/Api/Writes.js"
import {
  InvalidCredential,
  MissingCredential,
  PermissionRequired,
  RateLimited,
  ScopeRequired,
  UserIdentityRequired
} from "../../../schema/Problem.js"
import { AccessTokenVerifier, AccessTokenVerifierJwks } from "../../identity/tokens/AccessTokenVerifier.js"
import { TokenLiveness } from "../../identity/tokens/Liveness.js"
import type { AccessTokenClaims } from "../../identity/tokens/Tokens.js"
import { UserStanding } from "../../identity/users/Standing.js"
import { keepListening } from "../../platform/Notifications.js"
import type { RouteTable } from "../../platform/RouteTable.js"
import { RequestBudget } from "../limits/RequestBudget.js"
import { API_KEYS_CHANNEL, ApiKeys, hashKey } from "./ApiKeys.js"

/** How long a verified key is trusted without a lookup; revocation also evicts at once (NOTIFY). */
const CACHE_TTL = Duration.toMillis(Duration.seconds(60))
const CACHE_MAX = 10_000

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

/** Looks up credentials, with a small cache in front of the database. */
export class Credentials extends Context.Service<Credentials>()("catalog/Credentials", {
  make: Effect.gen(function*() {
    const keys = yield* ApiKeys
    const accessTokens = yield* AccessTokenVerifier
    const cache = new Map<string, { readonly principal: PrincipalShape; readonly expires: number }>()
    /** Bumped by every eviction: a lookup that began before one is not cached (it may predate the revocation). */
    let generation = 0

    // Every process evicts a revoked key as soon as the revoking transaction commits. A revocation
    // notified while the listener was away is unknown: the cache is emptied each time LISTEN is in
    // force again (platform/Notifications.ts).
    yield* keepListening(API_KEYS_CHANNEL, {
      onConnected: Effect.sync(() => {
        generation++
        cache.clear()
      }),
      onNotification: (id) =>
        Effect.sync(() => {
          generation++
          for (const [hash, entry] of cache) if (entry.principal.credentialId === id) cache.delete(hash)
        })
    })

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

    // Every request runs this, almost always to a cache hit: no span and no call-site capture (a
    // miss's statement has its own SQL span).
    const authenticate = Effect.fnUntraced(function*(token: string) {
      if (!token.startsWith("sk_")) return yield* authenticateAccessToken(token)
      const hash = hashKey(token).toString("hex")
      const now = Date.now()
      const cached = cache.get(hash)
      if (cached !== undefined && cached.expires > now) return cached.principal
      const started = generation
      const found = yield* keys.findLive(token)
      if (Option.isNone(found)) {
        return yield* new InvalidCredential({ detail: "The credential is unknown, revoked or malformed." })
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
      if (cache.size >= CACHE_MAX) cache.clear()
      cache.set(hash, { principal, expires: now + CACHE_TTL })
      return principal
    })

    /**
     * The principal of an API key verified in the last minute (and not revoked since), without any
     * I/O; undefined for anything else. For answering before the request stack runs (HotResponses).
     */
    const peek = (token: string): PrincipalShape | undefined => {
      if (!token.startsWith("sk_")) return undefined
      const cached = cache.get(hashKey(token).toString("hex"))
      return cached !== undefined && cached.expires > Date.now() ? cached.principal : undefined
    }

    return { authenticate, peek } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(
    Layer.provide([ApiKeys.layer, AccessTokenVerifierJwks.pipe(Layer.provide(TokenLiveness.layer))])
  )
}

/** `Authorization: Bearer <token>` with the scheme matched case-insensitively (RFC 7235 2.1). */
export const bearerToken = (header: string | undefined): Option.Option<string> => {
  if (header === undefined) return Option.none()
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(header)
  return match ? Option.some(match[1]!) : Option.some("")
}

interface RouteNeeds {
  readonly scope: Scope | "any"
  readonly rule: RouteRule | undefined
}

const makeAuthorize = (routes: RouteTable) =>
  Effect.gen(function*() {
    const credentials = yield* Credentials
    const budget = yield* RequestBudget
    const standing = yield* UserStanding
    const needs = new Map<string, RouteNeeds>()
    for (const route of routes.routes) {
      const middlewares = route.endpoint.middlewares as ReadonlySet<unknown>
      if (!middlewares.has(Authorization) && !middlewares.has(WriteAuthorization)) continue
      const scope = Context.getOption(route.annotations, RequiredScope)
      if (Option.isNone(scope)) {
        return yield* Effect.die(new Error(`${route.method} ${route.path} has no RequiredScope annotation`))
      }
      const rule = Option.getOrUndefined(Context.getOption(route.annotations, RouteRules))
      if (rule !== undefined && !middlewares.has(WriteAuthorization)) {
        return yield* Effect.die(new Error(`${route.method} ${route.path} has a rule but not WriteAuthorization`))
      }
      needs.set(`${route.method} ${route.path}`, { scope: scope.value, rule })
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

    /** Credential, budget and scope: what every route checks. */
    const authenticate = (endpoint: HttpApiEndpoint.Top) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const token = bearerToken(request.headers.authorization)
        if (Option.isNone(token)) {
          return yield* new MissingCredential({ detail: "Send `Authorization: Bearer <token>`." })
        }
        if (token.value === "") {
          return yield* new InvalidCredential({ detail: "The Authorization header is not a Bearer credential." })
        }
        const principal = yield* credentials.authenticate(token.value)
        const admission = yield* budget.take(principal.owner)
        const limitHeaders = budget.headers(admission)
        // Listed after any policy the answer already names (a spent quota), as one list per field.
        yield* HttpEffect.appendPreResponseHandler((_request, response) =>
          Effect.succeed(HttpServerResponse.setHeaders(response, mergeLimitHeaders(response.headers, limitHeaders)))
        )
        if (admission.retryAfterSeconds > 0) {
          return yield* new RateLimited({
            detail: "This credential's request budget is spent; wait `Retry-After` seconds.",
            retry_after: admission.retryAfterSeconds
          })
        }
        const need = routeNeeds(endpoint)
        if (need !== undefined && need.scope !== "any" && !principal.scopes.has(need.scope)) {
          return yield* new ScopeRequired({ detail: `This operation needs the \`${need.scope}\` scope.` })
        }
        return principal
      })

    /** Then the route's rule. */
    const authenticateForRule = (endpoint: HttpApiEndpoint.Top) =>
      Effect.gen(function*() {
        const principal = yield* authenticate(endpoint)
        const need = routeNeeds(endpoint)
        return need?.rule?.user === true ? yield* actingUser(principal, need.rule) : principal
      })

    return { authenticate, authenticateForRule } as const
  })

/** RateLimit fields of `extra` appended to the ones `existing` already has (RFC 9651 lists). */
const mergeLimitHeaders = (
  existing: Readonly<Record<string, string>>,
  extra: Readonly<Record<string, string>>
): Record<string, string> =>
  Object.fromEntries(
    Object.entries(extra).map((
      [name, value]
    ) => [name, existing[name] === undefined ? value : `${existing[name]}, ${value}`])
  )

/**
 * The middleware reads the `Authorization` header itself (`bearerToken`): the decoded bearer
 * credential cannot tell a missing header from one of another scheme.
 */
export const AuthorizationLive = (routes: RouteTable) =>
  Layer.effect(
    Authorization,
    Effect.map(makeAuthorize(routes), (a) =>
      Authorization.of({
        bearer: (httpEffect, { endpoint }) =>
          Effect.flatMap(
            a.authenticate(endpoint),
            (principal) => Effect.provideService(httpEffect, Principal, principal)
          )
      }))
  )

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
