/**
 * Handlers of the `oauth` group (schema/Api/IdentityOAuthApi.ts). Each calls one service and answers
 * its outcome: the protocol endpoints (token, userinfo, revocation, JWKS) the value their endpoint
 * declares, or fail with the bare RFC error it declares, never cached (`Cache-Control: no-store`,
 * `Pragma: no-cache`, RFC 6749 section 5.1); the browser endpoints (authorize, logout) a redirect or
 * the error page, which stay responses.
 *
 * Authorize, userinfo and revocation are limited per client address first (AddressLimits.ts), each
 * refusal in its endpoint's style with `Retry-After`: the error page (the envelope for a JSON caller)
 * at authorize, bare `temporarily_unavailable` JSON at the others, as at the token endpoint.
 */
import { Effect } from "effect"
import { HttpServerRequest } from "effect/http"
import { HttpApiBuilder } from "effect/http-api"
import { IdentityApi } from "../../../schema/Api/IdentityApi.js"
import { EnvelopeCodes } from "../../../schema/Identity/Envelope.js"
import { addressBucket, clientAddress } from "../../platform/ClientAddress.js"
import { runToCompletion } from "../../platform/HttpListener.js"
import { SigningKeys } from "../keys/SigningKeys.js"
import type { AuthorizeOutcome } from "../oauth/Authorize.js"
import { Authorize } from "../oauth/Authorize.js"
import { Logout } from "../oauth/Logout.js"
import { bearerChallenge, NO_STORE, oauthFailure } from "../oauth/OAuthFailure.js"
import { Revocation } from "../oauth/Revocation.js"
import { TokenService } from "../oauth/TokenService.js"
import { UserInfoService } from "../oauth/UserInfoService.js"
import { errorPage } from "../pages/shared/Layout.js"
import type { AddressLimitedEndpoint } from "../ratelimit/AddressLimits.js"
import { AddressLimits } from "../ratelimit/AddressLimits.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import { bodyKindOf } from "./BodyTypes.js"
import {
  answer,
  BASE_PATH,
  envelopeError,
  envelopeRefusal,
  oauthRefusal,
  page,
  prefersJson,
  redirectTo
} from "./Responses.js"

/** The error page (or, for an API caller, the envelope) of a request that must not redirect. */
export const outcomeResponse = (request: HttpServerRequest.HttpServerRequest, outcome: AuthorizeOutcome) => {
  if (outcome._tag === "Redirect") return redirectTo(outcome.location)
  const entry = EnvelopeCodes[outcome.code]
  if (prefersJson(request)) return envelopeError(outcome.code)
  return page(
    errorPage({ basePath: BASE_PATH }, { title: entry.message, message: outcome.message, code: entry.code }),
    {
      status: entry.status
    }
  )
}

/** RFC 6749 section 4.1.3 (a form) or JSON, each judged by its parsed media type (BodyTypes.ts). */
const isJsonOrForm = (request: HttpServerRequest.HttpServerRequest) => {
  const kind = bodyKindOf(request.headers["content-type"])
  return kind === "json" || kind === "form"
}

/** 429 of the authorization endpoint: a page for a browser, the envelope for a JSON caller. */
const authorizeLimited = (request: HttpServerRequest.HttpServerRequest, retryAfter: number) => {
  const headers = { "retry-after": String(retryAfter) }
  if (prefersJson(request)) return envelopeError("RATE_LIMITED", headers)
  const entry = EnvelopeCodes.RATE_LIMITED
  const message = "Too many requests came from your network. Wait a little, then try again."
  return page(errorPage({ basePath: BASE_PATH }, { title: entry.message, message, code: entry.code }), {
    status: entry.status,
    headers
  })
}

/** 429 of a protocol endpoint, as the token endpoint answers it. */
const protocolLimited = (retryAfter: number) =>
  oauthRefusal(oauthFailure("temporarily_unavailable", "too many requests from this address", {
    status: 429,
    headers: { "retry-after": String(retryAfter) }
  }))

const unsupportedBody = oauthRefusal(
  oauthFailure("invalid_request", "send the parameters as application/x-www-form-urlencoded or application/json")
)

export const HttpOAuthLive = HttpApiBuilder.group(IdentityApi, "oauth", (handlers) =>
  Effect.gen(function*() {
    const authorize = yield* Authorize
    const tokenService = yield* TokenService
    const userinfo = yield* UserInfoService
    const revocation = yield* Revocation
    const logout = yield* Logout
    const keys = yield* SigningKeys
    const config = yield* IdentityConfig
    const limits = yield* AddressLimits

    const addressOf = (request: HttpServerRequest.HttpServerRequest) => clientAddress(request, config.trustedProxies)
    /** 0 when the caller's address may go on, else the `Retry-After` seconds. */
    const limited = (endpoint: AddressLimitedEndpoint, request: HttpServerRequest.HttpServerRequest) =>
      limits.check(endpoint, addressOf(request))

    const userinfoHandler = () =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const wait = yield* limited("userinfo", request)
        if (wait > 0) return yield* protocolLimited(wait)
        return yield* userinfo.userinfo(request).pipe(
          Effect.flatMap((info) => answer(info, NO_STORE)),
          Effect.catchTag("OAuthFailure", oauthRefusal)
        )
      })

    return handlers
      .handle("authorize", ({ query }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const wait = yield* limited("authorize", request)
          if (wait > 0) return authorizeLimited(request, wait)
          return yield* authorize.authorize(query, request).pipe(
            Effect.map((outcome) => outcomeResponse(request, outcome)),
            Effect.catchTag("BearerRejected", (rejected) => {
              const description = rejected.reason === "expired"
                ? "the access token has expired"
                : "the Bearer token is not a valid sign-in token"
              return oauthRefusal(oauthFailure("invalid_token", description, {
                status: 401,
                headers: { "www-authenticate": bearerChallenge({ code: "invalid_token", description }) }
              }))
            })
          )
        }), runToCompletion)
      .handle("token", ({ payload }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          if (!isJsonOrForm(request)) return yield* unsupportedBody
          const address = addressBucket(addressOf(request))
          return yield* tokenService.exchange(payload, request.headers.authorization, address).pipe(
            Effect.flatMap((body) => answer(body, NO_STORE)),
            Effect.catchTag("OAuthFailure", oauthRefusal)
          )
        }), runToCompletion)
      .handle("userinfo", userinfoHandler, runToCompletion)
      .handle("userinfoPost", userinfoHandler, runToCompletion)
      .handle("revoke", ({ payload }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          if (!isJsonOrForm(request)) return yield* unsupportedBody
          const wait = yield* limited("revoke", request)
          if (wait > 0) return yield* protocolLimited(wait)
          return yield* revocation.revoke(payload, request.headers.authorization).pipe(
            Effect.andThen(answer(undefined, NO_STORE)),
            Effect.catchTag("OAuthFailure", oauthRefusal)
          )
        }), runToCompletion)
      .handle("logout", ({ query }) => Effect.succeed(redirectTo(logout.entryLocation(query))), runToCompletion)
      .handle("postLogoutRedirect", ({ query }) =>
        Effect.flatMap(logout.postLogoutRedirect(query), (outcome) =>
          outcome._tag === "Redirect"
            ? Effect.succeed(redirectTo(outcome.location))
            : envelopeRefusal(outcome.code)), runToCompletion)
      .handle("jwks", () =>
        Effect.flatMap(keys.jwks, (jwks) =>
          // Short enough that a rotated-in key (published two reload intervals before it signs) is seen.
          answer(jwks, { "cache-control": "public, max-age=60" })), runToCompletion)
  }))
