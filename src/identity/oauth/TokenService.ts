/**
 * The token endpoint (RFC 6749 sections 4.1.3, 5 and 6, RFC 7636; docs/decisions.md,
 * "Identity: protocol" and "Identity: tokens and sessions").
 *
 * Order: client id known -> failed-authentication bucket of (client_id, address) -> secret ->
 * per-client token bucket -> grant.
 *
 * The per-client bucket counts only requests whose client authenticated, so knowing a client's
 * public id is not enough to exhaust it and lock out its users. Failed authentications (RFC 6749
 * section 5.2 `invalid_client`) are counted in a bucket per (client_id, address) instead, the address
 * being the one the sign-in limit uses (src/platform/ClientAddress.ts): a guesser is
 * refused (429) at its own address only, while the client's servers elsewhere keep getting tokens.
 * Each failure is debited from the shared bucket; once it refuses, the pair is refused from this
 * process's memory until the bucket refills, before the secret is hashed, so a flood of wrong
 * secrets costs neither hashing nor database work.
 *
 * The per-client bucket keeps its machinery: an in-process bucket in front of the shared one, a few
 * of the shared bucket's tokens leased at a time, and a refused client refused from memory until its
 * bucket refills, so a flood costs almost no database work and cannot slow other clients.
 *
 * `authorization_code`: two statements, no transaction. The first consumes the code (committed at
 * once, so a consumed code stays consumed even when a later check fails: a stolen code cannot be
 * tried twice) and reads its user; the second creates the refresh family unless a replay marked the
 * code meanwhile. A replay marks the code and revokes what it produced (RFC 6749 section 4.1.2).
 *
 * `refresh_token`: rotation is one conditional statement (exactly one winner among concurrent
 * uses) that also checks the client binding, the family, the user and that `scope` only narrows
 * the grant (RFC 6749 section 6); the successor keeps the original grant. Only when it refuses is
 * the token read again to say why; any use of an already-rotated token revokes the whole family
 * (RFC 9700 section 4.14.2), including concurrent duplicates, which cannot be told from a replay.
 * A `scope` naming a scope the client is not allowed (src/identity/clients/Clients.ts) is
 * `invalid_scope` before anything rotates; an empty `scope` counts as omitted (RFC 6749 section
 * 3.1), never as the empty scope that userinfo answers in full.
 *
 * Every token carries at most the client's allowed scopes at the time it is issued, so an operator
 * narrowing a client (`client update --scope`) narrows its next refresh too. Access tokens name the
 * catalog as `aud` (RFC 9068 section 3) and the client as `client_id`.
 */
import { Clock, Context, Effect, Layer, Option, Result } from "effect"
import type { TokenRequest } from "../../../schema/Identity/Token.js"
import { TokenResponse } from "../../../schema/Identity/Token.js"
import { makeLeasedBuckets, RateLimiter } from "../../platform/RateLimiter.js"
import type { Client } from "../clients/Clients.js"
import { isPublicClient, scopesNotAllowed } from "../clients/Clients.js"
import { Clients } from "../clients/Clients.js"
import { checkPkce, randomToken, sha256Hex } from "../crypto/Secrets.js"
import { catalogAudienceConfig, IdentityConfig } from "../shared/IdentityConfig.js"
import { REFRESH_TOKEN_TTL_SECONDS } from "../shared/Lifetimes.js"
import { formatScope, isSubset, parseScope } from "../shared/Scopes.js"
import { Tokens } from "../tokens/Tokens.js"
import type { User } from "../users/Users.js"
import { Users } from "../users/Users.js"
import type { PresentedClient } from "./ClientAuthentication.js"
import { checkSecret, findClient, presentedClient } from "./ClientAuthentication.js"
import { Grants } from "./Grants.js"
import type { OAuthFailure } from "./OAuthFailure.js"
import { oauthFailure } from "./OAuthFailure.js"

/** The token response's members, filled in as the grant allows. */
type Wire = { -readonly [K in keyof TokenResponse]: TokenResponse[K] }

const invalidGrant = (description: string) => oauthFailure("invalid_grant", description)

export class TokenService extends Context.Service<TokenService>()("identity/TokenService", {
  make: Effect.gen(function*() {
    const config = yield* IdentityConfig
    // The resource server client tokens are for (RFC 9068 section 3); the catalog requires it.
    const catalogAudience = yield* catalogAudienceConfig
    const grants = yield* Grants
    const clients = yield* Clients
    const users = yield* Users
    const tokens = yield* Tokens
    const limiter = yield* RateLimiter
    // The per-client bucket: an in-process bucket in front of the shared one, and a few of the
    // shared bucket's tokens leased at a time (RateLimiter.ts `makeLeasedBuckets`).
    const clientBucket = yield* makeLeasedBuckets(limiter, config.rateLimits.tokenEndpoint)
    const failurePolicy = config.rateLimits.tokenAuthFailures
    // (client_id, address) pairs whose failure bucket the shared limiter refused, refused again from
    // memory until this instant.
    const failuresBlockedUntil = new Map<string, number>()

    const secondsUntil = (until: number | undefined, now: number) =>
      until !== undefined && until > now ? Math.max(1, Math.ceil((until - now) / 1000)) : undefined

    /** The in-process bucket first (a burst is cut here), then the shared one. 0 = admitted. */
    const rateLimit = Effect.fn("TokenService.rateLimit")((clientId: string) => clientBucket(`token:${clientId}`))

    const tooManyFailures = (retryAfter: number) =>
      oauthFailure("temporarily_unavailable", "too many failed client authentications from this address", {
        status: 429,
        headers: { "retry-after": String(retryAfter) }
      })

    /**
     * The secret (or, for a public client, its absence), behind the failure bucket of (client,
     * address): refused from memory before hashing once that bucket is empty; each failure debited.
     */
    const authenticate = Effect.fn("TokenService.authenticate")(
      function*(client: Client, presented: PresentedClient, address: string) {
        // Client ids cannot contain ":" (migrations/0003), so the key names one pair only.
        const key = `token-auth:${client.clientId}:${address}`
        const wait = secondsUntil(failuresBlockedUntil.get(key), yield* Clock.currentTimeMillis)
        if (wait !== undefined) return yield* tooManyFailures(wait)
        const checked = yield* Effect.result(checkSecret(client, presented))
        if (Result.isSuccess(checked)) return
        const taken = yield* limiter.take(key, failurePolicy)
        if (!taken.allowed) {
          if (failuresBlockedUntil.size > 10_000) failuresBlockedUntil.clear()
          failuresBlockedUntil.set(key, (yield* Clock.currentTimeMillis) + taken.retryAfterSeconds * 1000)
          return yield* tooManyFailures(taken.retryAfterSeconds)
        }
        return yield* checked.failure
      }
    )

    /** Tokens for `user` with `scopes`, in the family `familyId`. */
    const respond = Effect.fn("TokenService.respond")(function*(input: {
      readonly client: Client
      readonly user: User
      readonly siteRoles: ReadonlyArray<string>
      readonly scopes: ReadonlyArray<string>
      readonly familyId: string
      readonly refreshToken: string
      readonly authTime: Date
      readonly amr: ReadonlyArray<string>
      readonly nonce: string | null
    }) {
      const authTime = Math.floor(input.authTime.getTime() / 1000)
      // A grant made before an operator narrowed the client releases only what is still allowed.
      // A grant of the empty scope stays empty: what it releases was consented to as such.
      const scopes = input.scopes.filter((scope) => input.client.allowedScopes.includes(scope))
      const access = yield* tokens.issueAccessToken({
        sub: input.user.sub,
        uid: input.user.id,
        clientId: input.client.clientId,
        audience: catalogAudience,
        scopes,
        roles: input.user.roles,
        siteRoles: input.siteRoles,
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
      if (scopes.length > 0) body.scope = formatScope(scopes)
      if (scopes.includes("openid")) {
        body.id_token = yield* tokens.issueIdToken({
          sub: input.user.sub,
          clientId: input.client.clientId,
          authTime,
          amr: input.amr,
          nonce: input.nonce ?? undefined,
          accessToken: access.token,
          claims: {
            ...(scopes.includes("profile") ? { name: input.user.name, picture: input.user.picture } : {}),
            ...(scopes.includes("email")
              ? { email: input.user.email, email_verified: input.user.emailVerified }
              : {})
          }
        })
      }
      return new TokenResponse(body)
    })

    const authorizationCode = Effect.fn("TokenService.authorizationCode")(
      function*(client: Client, request: TokenRequest) {
        if (request.code === undefined || request.code === "") {
          return yield* oauthFailure("invalid_request", "code is required")
        }
        if (request.redirect_uri === undefined) {
          return yield* oauthFailure("invalid_request", "redirect_uri is required")
        }
        const codeHash = sha256Hex(request.code)
        // Committed at once: the code is spent whatever the checks below decide.
        const redeemed = yield* grants.redeemCode(codeHash, client.site)
        if (Option.isNone(redeemed)) {
          const replayed = yield* grants.revokeCodeReplay(codeHash)
          return yield* invalidGrant(replayed ? "the code was already used" : "unknown code")
        }
        const { code, siteRoles, user } = redeemed.value
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
        if (user.banned) return yield* invalidGrant("the user is not active")
        const refreshToken = randomToken()
        const familyId = yield* grants.createFamily({
          clientId: client.clientId,
          userId: user.id,
          codeHash,
          sessionId: code.session_id,
          authTime: code.auth_time,
          amr: code.amr,
          ttlSeconds: client.refreshTtlSeconds ?? REFRESH_TOKEN_TTL_SECONDS,
          scopes: code.scopes,
          refreshHash: sha256Hex(refreshToken)
        })
        // A replay of this code marked it between the two statements: it produced nothing.
        if (Option.isNone(familyId)) return yield* invalidGrant("the code was already used")
        return yield* respond({
          client,
          user,
          siteRoles,
          scopes: code.scopes,
          familyId: familyId.value,
          refreshToken,
          authTime: code.auth_time,
          amr: code.amr,
          nonce: code.nonce
        })
      }
    )

    /**
     * Why a refresh token cannot be rotated, in the order a client should hear it. Reached only when
     * the one-statement rotation refused, so a token that looks usable here lost a race with another
     * use of itself, and that is reuse too.
     */
    const refusal = Effect.fn("TokenService.refusal")(
      function*(client: Client, tokenHash: string, requested: ReadonlyArray<string> | undefined) {
        const found = yield* grants.findRefreshToken(tokenHash, config.refreshIdleTimeoutSeconds)
        if (Option.isNone(found)) return yield* invalidGrant("unknown refresh token")
        const token = found.value
        if (token.client_id !== client.clientId) {
          return yield* invalidGrant("the refresh token belongs to another client")
        }
        if (token.family_revoked || token.revoked) return yield* invalidGrant("the refresh token was revoked")
        if (token.rotated) {
          yield* grants.revokeFamily(token.family_id, "refresh_reuse")
          return yield* invalidGrant("the refresh token was already used; its family is revoked")
        }
        if (token.expired) return yield* invalidGrant("the refresh token has expired")
        if (token.idle) return yield* invalidGrant("the refresh token has expired unused")
        if (requested === undefined) return yield* oauthFailure("invalid_scope", "scope is malformed")
        if (!isSubset(requested, token.scopes)) {
          return yield* oauthFailure("invalid_scope", "scope may narrow the original grant, never widen it")
        }
        const user = yield* users.findById(token.user_id)
        if (Option.isNone(user) || user.value.banned) return yield* invalidGrant("the user is not active")
        yield* grants.revokeFamily(token.family_id, "refresh_reuse")
        return yield* invalidGrant("the refresh token was already used; its family is revoked")
      }
    )

    const refresh = Effect.fn("TokenService.refresh")(function*(client: Client, request: TokenRequest) {
      if (request.refresh_token === undefined || request.refresh_token === "") {
        return yield* oauthFailure("invalid_request", "refresh_token is required")
      }
      const tokenHash = sha256Hex(request.refresh_token)
      const requested = parseScope(request.scope)
      if (requested === undefined) return yield* refusal(client, tokenHash, requested)
      const notAllowed = scopesNotAllowed(client, requested)
      if (notAllowed.length > 0) {
        return yield* oauthFailure("invalid_scope", `scope not allowed for this client: ${notAllowed.join(" ")}`)
      }
      const successor = randomToken()
      const rotated = yield* grants.rotate({
        tokenHash,
        successorHash: sha256Hex(successor),
        clientId: client.clientId,
        requested,
        site: client.site,
        idleTimeoutSeconds: config.refreshIdleTimeoutSeconds
      })
      if (Option.isNone(rotated)) return yield* refusal(client, tokenHash, requested)
      const { siteRoles, token, user } = rotated.value
      return yield* respond({
        client,
        user,
        siteRoles,
        scopes: requested.length === 0 ? token.scopes : requested,
        familyId: token.family_id,
        refreshToken: successor,
        authTime: token.auth_time,
        amr: token.amr,
        nonce: null
      })
    })

    /**
     * One token request, from the decoded body, the `Authorization` header and the caller's address
     * (`clientAddress` of the request).
     */
    const exchange = Effect.fn("TokenService.exchange")(
      function*(
        request: TokenRequest,
        authorization: string | undefined,
        address: string
      ): Effect.fn.Return<TokenResponse, OAuthFailure> {
        const presented = yield* presentedClient(authorization, request)
        if (Option.isNone(presented)) {
          return yield* oauthFailure("invalid_client", "client authentication is required", {
            status: 401,
            headers: { "www-authenticate": `Basic realm="shiori", charset="UTF-8"` }
          })
        }
        // An unknown id is refused before any bucket, so made-up ids create none.
        const client = yield* findClient(clients, presented.value)
        yield* authenticate(client, presented.value, address)
        // Only authenticated requests reach the per-client bucket. A public client (RFC 6749 section
        // 2.1) authenticates by its id alone, so anyone can spend its bucket: its requests still count
        // here, per client_id as before, because nothing tells its users' requests apart from a
        // flood's and this bucket is what keeps such a flood from reaching the grant tables. Keying it by
        // address instead would let a flood from many addresses through. Its PKCE proof is checked
        // with the grant (RFC 7636 section 4.6), after this bucket.
        const retryAfter = yield* rateLimit(client.clientId)
        if (retryAfter > 0) {
          return yield* oauthFailure("temporarily_unavailable", "too many token requests for this client", {
            status: 429,
            headers: { "retry-after": String(retryAfter) }
          })
        }
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
}) {
  static readonly layer = Layer.effect(this, this.make)
}
