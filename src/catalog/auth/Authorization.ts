/**
 * The catalog's credential middleware (docs/api-contract.md, "Credentials, scopes and the content limit"),
 * checking in this order:
 * present (401 MISSING_CREDENTIAL) -> valid (401 INVALID_CREDENTIAL) -> scope (403 SCOPE_REQUIRED).
 * Person and tenant checks belong to the operations that need them.
 */
import { HttpRouter, HttpServerRequest } from "@effect/platform"
import { Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import type { Scope } from "../../../schema/Annotations.js"
import { RequiredScope, Scopes } from "../../../schema/Annotations.js"
import { Authorization } from "../../../schema/Api/Security.js"
import type { PrincipalShape } from "../../../schema/Api/Security.js"
import { InvalidCredential, MissingCredential, ScopeRequired } from "../../../schema/Problem.js"
import { AccessTokenVerifier, AccessTokenVerifierJwks } from "../../identity/tokens/AccessTokenVerifier.js"
import { TokenLiveness } from "../../identity/tokens/Liveness.js"
import type { AccessTokenClaims } from "../../identity/tokens/Tokens.js"
import { keepListening } from "../../platform/Notifications.js"
import type { RouteTable } from "../../platform/RouteTable.js"
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
  site: claims.site ?? "",
  scopes: new Set(claims.scopes.filter((scope): scope is Scope => catalogScopes.has(scope))),
  contentLimit: claims.content_limit ?? "sfw",
  user: Option.some({ id: claims.uid, sub: claims.sub, roles: claims.roles, siteRoles: claims.site_roles })
})

/** Looks up credentials, with a small cache in front of the database. */
export class Credentials extends Effect.Service<Credentials>()("catalog/Credentials", {
  scoped: Effect.gen(function*() {
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

    const authenticate = Effect.fn("Credentials.authenticate")(function*(token: string) {
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
  }),
  dependencies: [ApiKeys.Default, AccessTokenVerifierJwks.pipe(Layer.provide(TokenLiveness.Default))]
}) {}

/** `Authorization: Bearer <token>` with the scheme matched case-insensitively (RFC 7235 2.1). */
export const bearerToken = (header: string | undefined): Option.Option<string> => {
  if (header === undefined) return Option.none()
  const match = /^\s*bearer\s+(\S+)\s*$/i.exec(header)
  return match ? Option.some(match[1]!) : Option.some("")
}

export const AuthorizationLive = (routes: RouteTable) =>
  Layer.effect(
    Authorization,
    Effect.gen(function*() {
      const credentials = yield* Credentials
      const scopes = new Map<string, Scope | "any">()
      for (const route of routes.routes) {
        const needsCredential = route.group.middlewares.has(Authorization as any)
        if (!needsCredential) continue
        const scope = Context.getOption(route.annotations, RequiredScope)
        if (Option.isNone(scope)) {
          return yield* Effect.dieMessage(`${route.method} ${route.path} has no RequiredScope annotation`)
        }
        scopes.set(`${route.method} ${route.path}`, scope.value)
      }
      return Authorization.of({
        bearer: (_decoded: Redacted.Redacted) =>
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
            const route = yield* HttpRouter.RouteContext
            const required = scopes.get(`${route.route.method} ${route.route.path}`)
            if (required !== undefined && required !== "any" && !principal.scopes.has(required)) {
              return yield* new ScopeRequired({
                detail: `This operation needs the \`${required}\` scope.`
              })
            }
            return principal
          })
      })
    })
  )
