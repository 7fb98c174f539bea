/**
 * `GET /oauth/userinfo` (OpenID Connect Core section 5.3): the Bearer access token is verified with
 * the provider's keys (RS256, `typ: at+jwt`, our issuer), must belong to a live family or session,
 * and its user must not be banned. Failures are RFC 6750 section 3 errors with a
 * `WWW-Authenticate: Bearer` challenge.
 */
import { Context, Effect, Layer, Option } from "effect"
import type { HttpServerRequest } from "effect/http"
import type { UserInfo } from "../../../schema/Identity/UserInfo.js"
import { bearerToken } from "../auth/EndUsers.js"
import { userInfoFor } from "../shared/Scopes.js"
import { TokenLiveness } from "../tokens/Liveness.js"
import { Tokens } from "../tokens/Tokens.js"
import type { OAuthFailure } from "./OAuthFailure.js"
import { bearerChallenge, oauthFailure } from "./OAuthFailure.js"

const invalidToken = (description: string) =>
  oauthFailure("invalid_token", description, {
    status: 401,
    headers: { "www-authenticate": bearerChallenge({ code: "invalid_token", description }) }
  })

export class UserInfoService extends Context.Service<UserInfoService>()("identity/UserInfoService", {
  make: Effect.gen(function*() {
    const tokens = yield* Tokens
    const liveness = yield* TokenLiveness

    const userinfo = Effect.fn("UserInfoService.userinfo")(
      function*(request: HttpServerRequest.HttpServerRequest): Effect.fn.Return<UserInfo, OAuthFailure> {
        const token = bearerToken(request)
        if (Option.isNone(token)) {
          return yield* oauthFailure("invalid_token", "no access token was sent", {
            status: 401,
            headers: { "www-authenticate": bearerChallenge() }
          })
        }
        if (token.value === "") {
          const description = "the Authorization header is not a Bearer credential"
          return yield* oauthFailure("invalid_request", description, {
            status: 400,
            headers: { "www-authenticate": bearerChallenge({ code: "invalid_request", description }) }
          })
        }
        const claims = yield* tokens.verifyAccessToken(token.value).pipe(
          Effect.mapError((rejected) =>
            invalidToken(rejected.reason === "expired" ? "the access token has expired" : "the access token is invalid")
          )
        )
        const live = yield* liveness.liveUser(claims, claims.site)
        if (Option.isNone(live)) return yield* invalidToken("the access token was revoked")
        const { siteRoles, user } = live.value
        if (user.id !== claims.uid || user.sub !== claims.sub) {
          return yield* invalidToken("the access token's user is not active")
        }
        return userInfoFor(user, claims.scopes, siteRoles)
      }
    )
    return { userinfo } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
