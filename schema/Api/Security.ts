/**
 * Catalog credentials (docs/api-contract.md, "Credentials, scopes and the content limit"):
 * `Authorization: Bearer <token>` where the token is an API key (`sk_...`) or an identity access token.
 * The middleware proves the credential, checks the endpoint's `RequiredScope`, and hands the handlers a
 * `Principal`.
 */
import { Context } from "effect"
import type { Option } from "effect"
import { HttpApiMiddleware, HttpApiSecurity, OpenApi } from "effect/http-api"
import type { Scope } from "../Annotations.js"
import {
  InvalidCredential,
  MissingCredential,
  PermissionRequired,
  problem,
  RateLimited,
  ScopeRequired,
  UserIdentityRequired
} from "../Problem.js"

export type ContentLimit = "sfw" | "nsfw"

export interface PrincipalUser {
  readonly id: number
  readonly sub: string
  readonly roles: ReadonlyArray<string>
  readonly siteRoles: ReadonlyArray<string>
}

export interface PrincipalShape {
  readonly credential: "api_key" | "access_token"
  /** API key id or token `jti`; never the secret. */
  readonly credentialId: string
  /**
   * What request budgets and idempotency keys belong to: the API key, or for access tokens the
   * client and user (stable across refreshes, unlike `jti`).
   */
  readonly owner: string
  readonly site: string
  readonly scopes: ReadonlySet<Scope>
  readonly contentLimit: ContentLimit
  readonly user: Option.Option<PrincipalUser>
}

export class Principal extends Context.Service<Principal, PrincipalShape>()("catalog/Principal") {}

/** RFC 6750 bearer credentials; the scheme is written as OpenAPI's own examples write it (RFC 9110 11.1: case-insensitive). */
const bearer = HttpApiSecurity.http({ scheme: "bearer" }).pipe(
  HttpApiSecurity.annotate(
    OpenApi.Description,
    "An API key (`sk_...`, issued by an operator: `npm run cli -- api-key create`) or an access token of the " +
      "identity provider. Each operation names the scope it needs."
  )
)

/**
 * The credential middleware of read routes: proves the credential, checks the scope and the request budget.
 * Each problem schema carries its status and the `application/problem+json` media type.
 */
export class Authorization extends HttpApiMiddleware.Service<Authorization, {
  provides: Principal
}>()("catalog/Authorization", {
  error: [
    problem(MissingCredential),
    problem(InvalidCredential),
    problem(ScopeRequired),
    problem(RateLimited)
  ],
  security: { bearer }
}) {}

/**
 * The same middleware for routes with a rule (schema/Api/Writes.ts): it also checks the rule's user
 * and role, so it can answer `USER_IDENTITY_REQUIRED` and `PERMISSION_REQUIRED`, and on a write that
 * the credential belongs to a site: that `TENANT_MISMATCH` is declared on each write by `declare`
 * (not here, where every ruled route, reads too, would list it).
 */
export class WriteAuthorization extends HttpApiMiddleware.Service<WriteAuthorization, {
  provides: Principal
}>()("catalog/WriteAuthorization", {
  error: [
    problem(MissingCredential),
    problem(InvalidCredential),
    problem(ScopeRequired),
    problem(RateLimited),
    problem(UserIdentityRequired),
    problem(PermissionRequired)
  ],
  security: { bearer }
}) {}

/**
 * The credential middleware for routes whose rule acts for a site, not a person (`user: false`, no
 * role: a site's bot may post news): it checks the rule like `WriteAuthorization` but can never answer
 * `USER_IDENTITY_REQUIRED` or `PERMISSION_REQUIRED`, so the routes it guards do not list them.
 */
export class SiteWriteAuthorization extends HttpApiMiddleware.Service<SiteWriteAuthorization, {
  provides: Principal
}>()("catalog/SiteWriteAuthorization", {
  error: [
    problem(MissingCredential),
    problem(InvalidCredential),
    problem(ScopeRequired),
    problem(RateLimited)
  ],
  security: { bearer }
}) {}
