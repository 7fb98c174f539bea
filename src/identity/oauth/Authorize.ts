/**
 * The authorization endpoint (RFC 6749 section 4.1.1; docs/decisions.md, "Identity: protocol") and
 * the consent decision behind it.
 *
 * Order of checks (RFC 6749 section 4.1.2.1): the client and its exact `redirect_uri` first; until
 * both are known good nothing redirects (error page). Every later failure goes back to the
 * `redirect_uri` with `error`, `error_description`, `state` and `iss` (RFC 9207, advertised in
 * discovery). Then the user: a sign-in Bearer token or the session cookie, else the sign-in page
 * (`prompt=login` always goes there; `select_account` unless `login_hint` names the signed-in user).
 * Then consent, once per client and scope set unless the client is auto-consent. Then a code:
 * 64 hex characters, stored hashed, bound to client, redirect URI, scopes, nonce, PKCE challenge and
 * method, the session and its auth_time; single use, 10 minutes.
 *
 * Scopes: only those the client is allowed (src/identity/clients/Clients.ts), else `invalid_scope`.
 * An empty scope is handled as the scopes it releases (`effectiveScopes`: userinfo answers name,
 * picture and email for it), so the consent page shows them, consent given for fewer does not cover
 * it, and the code and tokens carry them explicitly. Request objects (`request`, `request_uri`) are
 * refused (OpenID Connect Core sections 6.1, 6.2), as discovery says.
 *
 * Sign-in freshness (`max_age`, `prompt=login`): `sessions.auth_time` is written by the database's
 * clock, so every comparison with it uses that clock too; this process's clock plays no part. When
 * a request sends the browser to sign in, the way back carries `auth_after`, the database's time at
 * that moment, signed (key derived from `SHIORI_SECRET`) and bound to the client, redirect URI and
 * state. A sign-in at or after it satisfies both `max_age` (even `max_age=0`) and `prompt=login`, so
 * the fresh sign-in is never judged too old and the browser never loops back to the sign-in page.
 */
import { Context, Effect, Layer, Option, Result, Schema } from "effect"
import type { HttpServerRequest } from "effect/http"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { type AuthorizeParams, AuthorizeParams as AuthorizeParamsSchema } from "../../../schema/Identity/Authorize.js"
import type { EnvelopeCodeName } from "../../../schema/Identity/Envelope.js"
import type { OAuthErrorCode } from "../../../schema/Identity/OAuthError.js"
import { AppSecret } from "../../platform/Config.js"
import { hmacKeys, matchesAny } from "../../platform/KeyRing.js"
import type { EndUser } from "../auth/EndUsers.js"
import { EndUsers } from "../auth/EndUsers.js"
import type { Client } from "../clients/Clients.js"
import { Clients, isPublicClient, isRegisteredRedirect, scopesNotAllowed } from "../clients/Clients.js"
import type { PkceMethod } from "../crypto/Secrets.js"
import { constantTimeEquals, isValidCodeChallenge, randomAuthorizationCode, sha256Hex } from "../crypto/Secrets.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import { AUTHORIZATION_CODE_TTL_SECONDS } from "../shared/Lifetimes.js"
import { effectiveScopes, isSubset, isSupportedScope, parseScope } from "../shared/Scopes.js"
import { Grants } from "./Grants.js"

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
  /** The database time (ms) a correctly signed `auth_after` names, not yet checked against the window. */
  readonly authAfter: number | null
}

/**
 * How long after the provider sent the browser to sign in a sign-in still answers that request.
 * Longer than anyone takes on the sign-in page; an `auth_after` older than this is ignored (the
 * browser is asked to sign in again), so an old resumed URL cannot vouch for a later session.
 */
const SIGN_IN_WINDOW_MILLIS = 15 * 60 * 1000

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

const decodeAuthorizeParams = Schema.decodeUnknownOption(AuthorizeParamsSchema)

/**
 * Decodes a serialised request (the consent form's copy, which the browser may have altered) back
 * into parameters, with the schema the authorization endpoint decodes its query with: an unknown
 * parameter is dropped, as that endpoint ignores it (RFC 6749 section 3.1), so it never travels on in
 * the redirect that resumes the request; none when a parameter is repeated or out of its bounds.
 */
export const parseAuthorizeQuery = (query: string): Option.Option<AuthorizeParams> => {
  const search = new URLSearchParams(query)
  const out: Record<string, string> = {}
  for (const [key, value] of search) {
    if (Object.hasOwn(out, key)) return Option.none()
    out[key] = value
  }
  return decodeAuthorizeParams(out)
}

const PROMPTS = new Set(["none", "login", "consent", "select_account"])

export class Authorize extends Context.Service<Authorize>()("identity/Authorize", {
  make: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const clients = yield* Clients
    const grants = yield* Grants
    const endUsers = yield* EndUsers
    const sql = yield* SqlClient.SqlClient
    const { ring } = yield* AppSecret
    // Signed with the current key; a marker signed before a rotation still reads (src/platform/KeyRing.ts).
    const markerKeys = hmacKeys(ring, "shiori/auth-after/v1")

    /** The database's clock, the one `sessions.auth_time` comes from. */
    const databaseNow = sql<{ now: Date }>`SELECT now() AS now`.pipe(
      Effect.map((rows) => rows[0]!.now.getTime()),
      Effect.orDie
    )

    const markerMac = (params: AuthorizeParams, millis: number, markerKey: Buffer = markerKeys[0]!) =>
      Crypto.createHmac("sha256", markerKey)
        .update(`${params.client_id ?? ""}\n${params.redirect_uri ?? ""}\n${params.state ?? ""}\n${millis}`)
        .digest("base64url")
    const signMarker = (params: AuthorizeParams, millis: number) => `${millis}.${markerMac(params, millis)}`
    /** The instant of a genuine `auth_after` of this request, or null. */
    const readMarker = (params: AuthorizeParams): number | null => {
      const match = params.auth_after === undefined
        ? null
        : /^([0-9]{1,15})\.([A-Za-z0-9_-]{43})$/.exec(params.auth_after)
      if (match === null) return null
      const millis = Number(match[1])
      return matchesAny(markerKeys, (key) => constantTimeEquals(match[2]!, markerMac(params, millis, key)))
        ? millis
        : null
    }

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

      // OpenID Connect Core 6.1 / 6.2: the parameters may be inside a request object, which this
      // provider does not read; going on without them would silently drop what the client asked.
      if (params.request !== undefined) return yield* back("request_not_supported", "request objects are not supported")
      if (params.request_uri !== undefined) {
        return yield* back("request_uri_not_supported", "request_uri is not supported")
      }

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
      const effective = effectiveScopes(scopes)
      const notAllowed = scopesNotAllowed(client, effective)
      if (notAllowed.length > 0) {
        return yield* back(
          "invalid_scope",
          scopes.length === 0
            ? `an empty scope releases ${effective.join(" ")}, which this client may not request`
            : `scope not allowed for this client: ${notAllowed.join(" ")}`
        )
      }

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
        scopes: effective,
        nonce: params.nonce ?? null,
        challenge,
        prompts,
        loginHint: params.login_hint ?? null,
        maxAge,
        authAfter: readMarker(params)
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
        amr: endUser.session.amr,
        ttlSeconds: AUTHORIZATION_CODE_TTL_SECONDS
      })
      return redirect(withQuery(request.redirectUri, { code, state: request.state, iss: config.issuer }))
    })

    const hintMatches = (hint: string | null, endUser: EndUser) =>
      hint !== null && (hint.trim().toLowerCase() === endUser.user.email.toLowerCase() || hint === endUser.user.sub)

    /** GET /oauth/authorize. Fails only when a Bearer token was sent and is unacceptable. */
    const authorize = Effect.fn("Authorize.authorize")(
      function*(params: AuthorizeParams, httpRequest: HttpServerRequest.HttpServerRequest) {
        const valid = yield* Effect.result(validate(params))
        if (Result.isFailure(valid)) return valid.failure
        const request = valid.success
        const back = (error: OAuthErrorCode, description: string) =>
          redirect(errorLocation(request.redirectUri, error, description, request.state))

        const endUser = yield* endUsers.resolve(httpRequest)
        // Freshness is judged on the database's clock only (see the header).
        const judgesFreshness = request.maxAge !== null || request.prompts.has("login") || request.authAfter !== null
        const now = judgesFreshness ? yield* databaseNow : 0
        const authAfter = request.authAfter !== null && request.authAfter <= now &&
            now - request.authAfter <= SIGN_IN_WINDOW_MILLIS
          ? request.authAfter
          : null
        const signedInSince = (user: EndUser) => authAfter !== null && user.session.authTime.getTime() >= authAfter
        const tooOld = (user: EndUser) =>
          request.maxAge !== null && now - user.session.authTime.getTime() > request.maxAge * 1000
        const needsLogin = Option.isNone(endUser) ||
          (!signedInSince(endUser.value) && (request.prompts.has("login") || tooOld(endUser.value))) ||
          (request.prompts.has("select_account") && !hintMatches(request.loginHint, endUser.value))
        if (needsLogin) {
          if (request.prompts.has("none")) return back("login_required", "the user is not signed in")
          // After signing in, the request resumes without the prompt; prompt=login instead demands a
          // sign-in within the last two minutes. A sign-in after `auth_after` (now, on the database's
          // clock) satisfies both that and max_age.
          const resume = authorizeQuery(params, {
            prompt: undefined,
            max_age: request.prompts.has("login") ? String(Math.min(request.maxAge ?? 120, 120)) : params.max_age,
            auth_after: judgesFreshness ? signMarker(params, now) : undefined
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
        if (Option.isNone(params)) {
          return errorPage("INVALID_AUTHORIZATION_REQUEST", "A parameter is repeated or malformed.")
        }
        const valid = yield* Effect.result(validate(params.value))
        if (Result.isFailure(valid)) return valid.failure
        const request = valid.success
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
}) {
  static readonly layer = Layer.effect(this, this.make)
}
