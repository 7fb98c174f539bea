/**
 * The authorization endpoint (SPEC 4.2, DECISIONS 2-4) and the consent decision behind it.
 *
 * Order of checks (RFC 6749 section 4.1.2.1): the client and its exact `redirect_uri` first; until
 * both are known good nothing redirects (error page). Every later failure goes back to the
 * `redirect_uri` with `error`, `error_description`, `state` and `iss` (RFC 9207, advertised in
 * discovery). Then the user: a sign-in Bearer token or the session cookie, else the sign-in page
 * (`prompt=login` always goes there; `select_account` unless `login_hint` names the signed-in user).
 * Then consent, once per client and scope set unless the client is auto-consent. Then a code:
 * 64 hex characters, stored hashed, bound to client, redirect URI, scopes, nonce, PKCE challenge and
 * method, the session and its auth_time; single use, 10 minutes.
 */
import type { HttpServerRequest } from "@effect/platform"
import { Clock, Effect, Option } from "effect"
import type { AuthorizeParams } from "../../../schema/Identity/Authorize.js"
import type { EnvelopeCodeName } from "../../../schema/Identity/Envelope.js"
import type { OAuthErrorCode } from "../../../schema/Identity/OAuthError.js"
import type { EndUser } from "../auth/EndUsers.js"
import { EndUsers } from "../auth/EndUsers.js"
import type { Client } from "../clients/Clients.js"
import { Clients, isPublicClient, isRegisteredRedirect } from "../clients/Clients.js"
import type { PkceMethod } from "../crypto/Secrets.js"
import { isValidCodeChallenge, randomAuthorizationCode, sha256Hex } from "../crypto/Secrets.js"
import { IdentityConfig } from "../IdentityConfig.js"
import { AUTHORIZATION_CODE_TTL_SECONDS } from "../tokens/Lifetimes.js"
import { Grants } from "./Grants.js"
import { isSubset, isSupportedScope, parseScope } from "./Scopes.js"

/** What the endpoint answers: a page that must not redirect, or a redirect (to the client or a page). */
export type AuthorizeOutcome =
  | { readonly _tag: "ErrorPage"; readonly code: EnvelopeCodeName; readonly message: string }
  | { readonly _tag: "Redirect"; readonly location: string }

export interface ValidRequest {
  readonly client: Client
  readonly redirectUri: string
  readonly state: string
  readonly scopes: ReadonlyArray<string>
  readonly nonce: string | null
  readonly challenge: { readonly challenge: string; readonly method: PkceMethod } | null
  readonly prompts: ReadonlySet<string>
  readonly loginHint: string | null
  readonly maxAge: number | null
}

const errorPage = (code: EnvelopeCodeName, message: string): AuthorizeOutcome => ({ _tag: "ErrorPage", code, message })
const redirect = (location: string): AuthorizeOutcome => ({ _tag: "Redirect", location })

/** Appends query parameters to a registered redirect URI without re-serialising it. */
export const withQuery = (uri: string, params: Record<string, string | undefined>): string => {
  const query = new URLSearchParams()
  for (const [key, value] of Object.entries(params)) if (value !== undefined) query.append(key, value)
  return `${uri}${uri.includes("?") ? "&" : "?"}${query.toString()}`
}

/** The parameters of an authorization request, re-serialised (for return_to and the consent form). */
export const authorizeQuery = (
  params: AuthorizeParams,
  changes: Partial<Record<keyof AuthorizeParams, string | undefined>> = {}
) => {
  const query = new URLSearchParams()
  const merged: Record<string, string | undefined> = { ...params, ...changes }
  for (const [key, value] of Object.entries(merged)) if (value !== undefined) query.append(key, value)
  return query.toString()
}

/** Decodes a serialised request back into parameters; none when a parameter is repeated. */
export const parseAuthorizeQuery = (query: string): Option.Option<AuthorizeParams> => {
  const search = new URLSearchParams(query)
  const out: Record<string, string> = {}
  for (const [key, value] of search) {
    if (key in out) return Option.none()
    out[key] = value
  }
  return Option.some(out as AuthorizeParams)
}

const PROMPTS = new Set(["none", "login", "consent", "select_account"])

export class Authorize extends Effect.Service<Authorize>()("identity/Authorize", {
  effect: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const clients = yield* Clients
    const grants = yield* Grants
    const endUsers = yield* EndUsers

    const errorLocation = (
      redirectUri: string,
      error: OAuthErrorCode,
      description: string,
      state: string | undefined
    ) => withQuery(redirectUri, { error, error_description: description, state, iss: config.issuer })

    /** Validates everything but the user. Fails with the outcome that ends the request. */
    const validate = Effect.fn("Authorize.validate")(function*(params: AuthorizeParams) {
      if (params.client_id === undefined || params.client_id === "") {
        return yield* Effect.fail(errorPage("INVALID_AUTHORIZATION_REQUEST", "The request names no client_id."))
      }
      const found = yield* clients.find(params.client_id)
      if (Option.isNone(found)) {
        return yield* Effect.fail(errorPage("UNKNOWN_CLIENT", "The application that sent you here is not registered."))
      }
      const client = found.value
      if (params.redirect_uri === undefined || !isRegisteredRedirect(client, params.redirect_uri)) {
        return yield* Effect.fail(
          errorPage(
            "REDIRECT_URI_MISMATCH",
            "The return address of this request is not registered for the application."
          )
        )
      }
      const redirectUri = params.redirect_uri
      const back = (error: OAuthErrorCode, description: string) =>
        Effect.fail(redirect(errorLocation(redirectUri, error, description, params.state)))

      if (params.response_type === undefined) return yield* back("invalid_request", "response_type is required")
      if (params.response_type !== "code") {
        return yield* back("unsupported_response_type", "only response_type=code is supported")
      }
      if (params.response_mode !== undefined && params.response_mode !== "query") {
        return yield* back("invalid_request", "only response_mode=query is supported")
      }
      if (params.state === undefined || params.state === "") return yield* back("invalid_request", "state is required")
      if (params.state.length > 2048) return yield* back("invalid_request", "state is too long")
      const scopes = parseScope(params.scope)
      if (scopes === undefined) return yield* back("invalid_scope", "scope is malformed")
      const unknown = scopes.filter((scope) => !isSupportedScope(scope))
      if (unknown.length > 0) return yield* back("invalid_scope", `unknown scope: ${unknown.join(" ")}`)

      let challenge: ValidRequest["challenge"] = null
      if (params.code_challenge !== undefined) {
        const method = params.code_challenge_method ?? "S256"
        if (method !== "S256" && method !== "plain") {
          return yield* back("invalid_request", "code_challenge_method must be S256 or plain")
        }
        if (!isValidCodeChallenge(params.code_challenge, method)) {
          return yield* back("invalid_request", "code_challenge is malformed")
        }
        challenge = { challenge: params.code_challenge, method }
      } else if (params.code_challenge_method !== undefined) {
        return yield* back("invalid_request", "code_challenge_method without code_challenge")
      }
      if (challenge === null && isPublicClient(client)) {
        return yield* back("invalid_request", "public clients must use PKCE (code_challenge)")
      }

      const prompts = new Set((params.prompt ?? "").split(" ").filter((p) => p !== "" && PROMPTS.has(p)))
      if (prompts.has("none") && prompts.size > 1) {
        return yield* back("invalid_request", "prompt=none cannot be combined with other values")
      }
      let maxAge: number | null = null
      if (params.max_age !== undefined) {
        if (!/^[0-9]{1,9}$/.test(params.max_age)) return yield* back("invalid_request", "max_age must be seconds")
        maxAge = Number(params.max_age)
      }
      if (params.nonce !== undefined && params.nonce.length > 512) {
        return yield* back("invalid_request", "nonce is too long")
      }
      return {
        client,
        redirectUri,
        state: params.state,
        scopes,
        nonce: params.nonce ?? null,
        challenge,
        prompts,
        loginHint: params.login_hint ?? null,
        maxAge
      } satisfies ValidRequest
    })

    const pageUrl = (page: string, query: string) => `${config.issuer}/ui/${page}?${query}`
    const authorizePath = (query: string) => `${config.basePath}/oauth/authorize?${query}`

    const issueCode = Effect.fn("Authorize.issueCode")(function*(request: ValidRequest, endUser: EndUser) {
      const code = randomAuthorizationCode()
      yield* grants.insertCode({
        codeHash: sha256Hex(code),
        clientId: request.client.clientId,
        userId: endUser.user.id,
        sessionId: endUser.session.id,
        redirectUri: request.redirectUri,
        scopes: request.scopes,
        nonce: request.nonce,
        challenge: request.challenge,
        authTime: endUser.session.authTime,
        ttlSeconds: AUTHORIZATION_CODE_TTL_SECONDS
      })
      return redirect(withQuery(request.redirectUri, { code, state: request.state, iss: config.issuer }))
    })

    const hintMatches = (hint: string | null, endUser: EndUser) =>
      hint !== null && (hint.trim().toLowerCase() === endUser.user.email.toLowerCase() || hint === endUser.user.sub)

    /** GET /oauth/authorize. Fails only when a Bearer token was sent and is unacceptable. */
    const authorize = Effect.fn("Authorize.authorize")(
      function*(params: AuthorizeParams, httpRequest: HttpServerRequest.HttpServerRequest) {
        const valid = yield* Effect.either(validate(params))
        if (valid._tag === "Left") return valid.left
        const request = valid.right
        const back = (error: OAuthErrorCode, description: string) =>
          redirect(errorLocation(request.redirectUri, error, description, request.state))

        const endUser = yield* endUsers.resolve(httpRequest)
        const now = yield* Clock.currentTimeMillis
        const tooOld = (user: EndUser) =>
          request.maxAge !== null && now - user.session.authTime.getTime() > request.maxAge * 1000
        const needsLogin = Option.isNone(endUser) || request.prompts.has("login") || tooOld(endUser.value) ||
          (request.prompts.has("select_account") && !hintMatches(request.loginHint, endUser.value))
        if (needsLogin) {
          if (request.prompts.has("none")) return back("login_required", "the user is not signed in")
          // After signing in, the request resumes without the prompt; prompt=login instead demands a
          // sign-in within the last two minutes, which the fresh session satisfies.
          const resume = authorizeQuery(params, {
            prompt: undefined,
            max_age: request.prompts.has("login") ? String(Math.min(request.maxAge ?? 120, 120)) : params.max_age
          })
          const query = new URLSearchParams({ return_to: authorizePath(resume) })
          if (request.loginHint !== null) query.set("login_hint", request.loginHint)
          if (request.prompts.has("select_account")) query.set("select_account", "1")
          return redirect(pageUrl("login", query.toString()))
        }
        const user = endUser.value

        if (!request.client.autoConsent) {
          const granted = yield* grants.consentedScopes(user.user.id, request.client.clientId)
          const covered = Option.isSome(granted) && isSubset(request.scopes, granted.value)
          if (!covered || request.prompts.has("consent")) {
            if (request.prompts.has("none")) return back("consent_required", "the user has not approved this client")
            return redirect(pageUrl("consent", authorizeQuery(params, { prompt: undefined })))
          }
        }
        return yield* issueCode(request, user)
      }
    )

    /** The consent page's view of a request, or the outcome that ends it. */
    const consentView = Effect.fn("Authorize.consentView")(function*(params: AuthorizeParams) {
      return yield* validate(params)
    })

    /** POST of the consent form: approve records consent and resumes authorize; deny goes back. */
    const decideConsent = Effect.fn("Authorize.decideConsent")(
      function*(query: string, endUser: EndUser, approve: boolean) {
        const params = parseAuthorizeQuery(query)
        if (Option.isNone(params)) return errorPage("INVALID_AUTHORIZATION_REQUEST", "A parameter is repeated.")
        const valid = yield* Effect.either(validate(params.value))
        if (valid._tag === "Left") return valid.left
        const request = valid.right
        if (!approve) {
          return redirect(
            errorLocation(request.redirectUri, "access_denied", "the user denied the request", request.state)
          )
        }
        yield* grants.recordConsent(endUser.user.id, request.client.clientId, request.scopes)
        return redirect(`${config.origin}${authorizePath(authorizeQuery(params.value, { prompt: undefined }))}`)
      }
    )

    return { authorize, consentView, decideConsent, validate } as const
  })
}) {}
