/**
 * The token endpoint (SPEC 4.2, RFC 6749 sections 4.1.3, 5 and 6; DECISIONS 3-6, 9).
 *
 * Order: client id known -> per-client token bucket (before any secret is hashed; an in-process
 * bucket in front of the shared one, and a refused client is refused from memory until its bucket
 * refills, so a flood costs almost no database work and cannot slow other clients) -> secret ->
 * grant.
 *
 * `authorization_code`: the code is consumed first, in the same transaction that creates what it
 * produces, so a concurrent replay waits on the row and then revokes it (DECISIONS 4). A consumed
 * code stays consumed even when a later check fails (wrong client, redirect_uri or PKCE verifier):
 * a stolen code cannot be tried twice.
 *
 * `refresh_token`: rotation is one conditional statement (exactly one winner among concurrent
 * uses); any use of an already-rotated token revokes the whole family (RFC 9700 section 4.14.2),
 * including concurrent duplicates, which cannot be told from a replay. The token is bound to its
 * client; `scope` may narrow the new access token, never widen it, and the successor refresh token
 * keeps the original grant (RFC 6749 section 6).
 */
import { Clock, Effect, Option } from "effect"
import type { TokenRequest, TokenResponse } from "../../../schema/Identity/Token.js"
import type { Client } from "../clients/Clients.js"
import { isPublicClient } from "../clients/Clients.js"
import { Clients } from "../clients/Clients.js"
import { checkPkce, randomToken, sha256Hex } from "../crypto/Secrets.js"
import { IdentityConfig } from "../IdentityConfig.js"
import { makeMemoryRateLimiter, RateLimiter } from "../ratelimit/RateLimiter.js"
import { REFRESH_TOKEN_TTL_SECONDS } from "../tokens/Lifetimes.js"
import { Tokens } from "../tokens/Tokens.js"
import type { User } from "../users/Users.js"
import { Users } from "../users/Users.js"
import { checkSecret, findClient, presentedClient } from "./ClientAuthentication.js"
import { Grants } from "./Grants.js"
import type { OAuthFailure } from "./OAuthFailure.js"
import { oauthFailure } from "./OAuthFailure.js"
import { formatScope, isSubset, parseScope } from "./Scopes.js"

type Wire = { -readonly [K in keyof TokenResponse]: TokenResponse[K] }

const invalidGrant = (description: string) => oauthFailure("invalid_grant", description)

export class TokenService extends Effect.Service<TokenService>()("identity/TokenService", {
  effect: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const grants = yield* Grants
    const clients = yield* Clients
    const users = yield* Users
    const tokens = yield* Tokens
    const limiter = yield* RateLimiter
    // In front of the shared bucket, the same policy in this process's memory: a burst arriving all
    // at once is cut to `capacity` database round trips here, so it cannot exhaust the pool that
    // other clients' requests need. The shared bucket stays the authority across processes.
    const local = yield* makeMemoryRateLimiter
    // Clients refused by the shared bucket, refused again from memory until this instant.
    const blockedUntil = new Map<string, number>()

    const rateLimit = Effect.fn("TokenService.rateLimit")(function*(clientId: string) {
      const now = yield* Clock.currentTimeMillis
      const until = blockedUntil.get(clientId)
      if (until !== undefined && until > now) return Math.max(1, Math.ceil((until - now) / 1000))
      const inProcess = yield* local.take(clientId, config.rateLimits.tokenEndpoint)
      if (!inProcess.allowed) return inProcess.retryAfterSeconds
      const taken = yield* limiter.take(`token:${clientId}`, config.rateLimits.tokenEndpoint)
      if (taken.allowed) {
        blockedUntil.delete(clientId)
        return 0
      }
      if (blockedUntil.size > 10_000) blockedUntil.clear()
      blockedUntil.set(clientId, now + taken.retryAfterSeconds * 1000)
      return taken.retryAfterSeconds
    })

    /** Tokens for `user` with `scopes`, in the family `familyId`. */
    const respond = Effect.fn("TokenService.respond")(function*(input: {
      readonly client: Client
      readonly user: User
      readonly scopes: ReadonlyArray<string>
      readonly familyId: string
      readonly refreshToken: string
      readonly authTime: Date
      readonly nonce: string | null
    }) {
      const siteRoles = yield* users.siteRoles(input.user.id, input.client.site)
      const authTime = Math.floor(input.authTime.getTime() / 1000)
      const access = yield* tokens.issueAccessToken({
        sub: input.user.sub,
        uid: input.user.id,
        clientId: input.client.clientId,
        audience: input.client.clientId,
        scopes: input.scopes,
        roles: input.user.roles,
        siteRoles,
        site: input.client.site ?? undefined,
        familyId: input.familyId,
        authTime,
        contentLimit: input.client.contentLimit
      })
      const body: Wire = {
        access_token: access.token,
        token_type: "Bearer",
        expires_in: access.expiresIn,
        refresh_token: input.refreshToken
      }
      if (input.scopes.length > 0) body.scope = formatScope(input.scopes)
      if (input.scopes.includes("openid")) {
        body.id_token = yield* tokens.issueIdToken({
          sub: input.user.sub,
          clientId: input.client.clientId,
          authTime,
          nonce: input.nonce ?? undefined,
          accessToken: access.token,
          claims: {
            ...(input.scopes.includes("profile") ? { name: input.user.name, picture: input.user.picture } : {}),
            ...(input.scopes.includes("email") ? { email: input.user.email } : {})
          }
        })
      }
      return body
    })

    const liveUser = (userId: number) =>
      Effect.flatMap(
        users.findById(userId),
        (user) =>
          Option.isNone(user) || user.value.banned ? invalidGrant("the user is not active") : Effect.succeed(user.value)
      )

    const authorizationCode = Effect.fn("TokenService.authorizationCode")(
      function*(client: Client, request: TokenRequest) {
        if (request.code === undefined || request.code === "") {
          return yield* oauthFailure("invalid_request", "code is required")
        }
        if (request.redirect_uri === undefined) {
          return yield* oauthFailure("invalid_request", "redirect_uri is required")
        }
        const codeHash = sha256Hex(request.code)
        const refreshToken = randomToken()
        // The transaction commits consumption and replay revocation even when the grant fails.
        const outcome = yield* grants.withTransaction(Effect.either(Effect.gen(function*() {
          const consumed = yield* grants.consumeCode(codeHash)
          if (Option.isNone(consumed)) {
            const replayed = yield* grants.revokeCodeReplay(codeHash)
            return yield* invalidGrant(replayed ? "the code was already used" : "unknown code")
          }
          const code = consumed.value
          if (code.client_id !== client.clientId) return yield* invalidGrant("the code was issued to another client")
          if (!code.fresh) return yield* invalidGrant("the code has expired")
          if (code.redirect_uri !== request.redirect_uri) {
            return yield* invalidGrant("redirect_uri does not match the authorization request")
          }
          const pkce = checkPkce(
            code.code_challenge === null
              ? null
              : { challenge: code.code_challenge, method: code.code_challenge_method! },
            request.code_verifier
          )
          if (pkce !== "ok") return yield* invalidGrant(`PKCE verification failed (${pkce.replace(/_/g, " ")})`)
          if (isPublicClient(client) && code.code_challenge === null) {
            return yield* invalidGrant("public clients must use PKCE")
          }
          const user = yield* liveUser(code.user_id)
          const familyId = yield* grants.createFamily({
            clientId: client.clientId,
            userId: user.id,
            codeHash,
            sessionId: code.session_id,
            authTime: code.auth_time,
            ttlSeconds: client.refreshTtlSeconds ?? REFRESH_TOKEN_TTL_SECONDS,
            scopes: code.scopes,
            refreshHash: sha256Hex(refreshToken)
          })
          return { user, code, familyId }
        }))).pipe(Effect.orDie)
        if (outcome._tag === "Left") return yield* outcome.left
        const { code, familyId, user } = outcome.right
        return yield* respond({
          client,
          user,
          scopes: code.scopes,
          familyId,
          refreshToken,
          authTime: code.auth_time,
          nonce: code.nonce
        })
      }
    )

    const refresh = Effect.fn("TokenService.refresh")(function*(client: Client, request: TokenRequest) {
      if (request.refresh_token === undefined || request.refresh_token === "") {
        return yield* oauthFailure("invalid_request", "refresh_token is required")
      }
      const tokenHash = sha256Hex(request.refresh_token)
      const found = yield* grants.findRefreshToken(tokenHash)
      if (Option.isNone(found)) return yield* invalidGrant("unknown refresh token")
      const token = found.value
      if (token.client_id !== client.clientId) return yield* invalidGrant("the refresh token belongs to another client")
      if (token.family_revoked || token.revoked) return yield* invalidGrant("the refresh token was revoked")
      if (token.rotated) {
        yield* grants.revokeFamily(token.family_id, "refresh_reuse")
        return yield* invalidGrant("the refresh token was already used; its family is revoked")
      }
      if (token.expired) return yield* invalidGrant("the refresh token has expired")
      const requested = parseScope(request.scope)
      if (requested === undefined) return yield* oauthFailure("invalid_scope", "scope is malformed")
      if (!isSubset(requested, token.scopes)) {
        return yield* oauthFailure("invalid_scope", "scope may narrow the original grant, never widen it")
      }
      const scopes = request.scope === undefined ? token.scopes : requested
      const user = yield* liveUser(token.user_id)
      const successor = randomToken()
      const won = yield* grants.rotate(tokenHash, sha256Hex(successor))
      if (!won) {
        // Lost a race with another use of the same token: that is reuse too.
        yield* grants.revokeFamily(token.family_id, "refresh_reuse")
        return yield* invalidGrant("the refresh token was already used; its family is revoked")
      }
      return yield* respond({
        client,
        user,
        scopes,
        familyId: token.family_id,
        refreshToken: successor,
        authTime: token.auth_time,
        nonce: null
      })
    })

    /** One token request, from the decoded body and the `Authorization` header. */
    const exchange = Effect.fn("TokenService.exchange")(
      function*(request: TokenRequest, authorization: string | undefined): Effect.fn.Return<Wire, OAuthFailure> {
        const presented = yield* presentedClient(authorization, request)
        if (Option.isNone(presented)) {
          return yield* oauthFailure("invalid_client", "client authentication is required", {
            status: 401,
            headers: { "www-authenticate": `Basic realm="shiori", charset="UTF-8"` }
          })
        }
        const client = yield* findClient(clients, presented.value)
        const retryAfter = yield* rateLimit(client.clientId)
        if (retryAfter > 0) {
          return yield* oauthFailure("temporarily_unavailable", "too many token requests for this client", {
            status: 429,
            headers: { "retry-after": String(retryAfter) }
          })
        }
        yield* checkSecret(client, presented.value)
        switch (request.grant_type) {
          case "authorization_code":
            return yield* authorizationCode(client, request)
          case "refresh_token":
            return yield* refresh(client, request)
          case undefined:
            return yield* oauthFailure("invalid_request", "grant_type is required")
          default:
            return yield* oauthFailure(
              "unsupported_grant_type",
              "grant_type must be authorization_code or refresh_token"
            )
        }
      }
    )

    return { exchange } as const
  })
}) {}
