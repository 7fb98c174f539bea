/**
 * What a route needs beyond its scope (docs/writing.md, "Who may write"), declared once on the
 * endpoint. The declaration is the single source of three things: the checks the credential
 * middleware and the write runner make, the problems and headers the OpenAPI document lists for the
 * operation, and the credential matrix test that drives every declared route.
 */
import type { HttpApiEndpoint } from "effect/http-api"
import type { HttpMethod } from "effect/http"
import { Context, Schema } from "effect"
import type { Scope } from "../Annotations.js"
import { RequiredScope } from "../Annotations.js"
import {
  IdempotencyKeyReused,
  IdempotencyRequestInProgress,
  PermissionRequired,
  PreconditionFailed,
  PreconditionRequired,
  problem,
  QuotaExceeded,
  TenantMismatch,
  UserIdentityRequired
} from "../Problem.js"

/** Management roles, nesting: a role satisfies every role before it. */
export const ManagementRoles = ["moderator", "admin", "ren"] as const
export type ManagementRole = (typeof ManagementRoles)[number]

/** True when `roles` hold `role` or a management role above it. */
export const holdsRole = (roles: ReadonlyArray<string>, role: ManagementRole): boolean =>
  ManagementRoles.slice(ManagementRoles.indexOf(role)).some((r) => roles.includes(r))

/** Daily per-site write quotas, by kind. */
export const QuotaKinds = ["claims", "decisions"] as const
export type QuotaKind = (typeof QuotaKinds)[number]

export interface RouteRule {
  /** The operation acts for a person: a credential without a user is 403 `USER_IDENTITY_REQUIRED`. */
  readonly user: boolean
  /** The user needs this management role or one above it: else 403 `PERMISSION_REQUIRED`. */
  readonly role?: ManagementRole | undefined
  /** The operation acts on a site's resource: another site's credential is 403 `TENANT_MISMATCH`. */
  readonly tenant: boolean
  /** A POST that creates or decides: accepts `Idempotency-Key`. */
  readonly idempotent: boolean
  /** `If-Match`: `required` (absent: 428), `optional` (honoured when sent), or not read. */
  readonly ifMatch?: "required" | "optional" | undefined
  /** The site's daily quota this write counts against. */
  readonly quota?: QuotaKind | undefined
}

/** Endpoint annotation: the route's rule. Routes without one need only their scope. */
export class RouteRules extends Context.Service<RouteRules, RouteRule>()("shiori/RouteRule") {}

/** `Idempotency-Key`: 1 to 255 visible ASCII characters, bare or in double quotes. */
export const IdempotencyKey = Schema.String.pipe(
  Schema.pattern(/^(?:"[\x21\x23-\x7e]{1,255}"|[\x21\x23-\x7e]{1,255})$/)
).annotate({
  description: "1 to 255 visible ASCII characters, bare or quoted. The same key with the same body replays the " +
    "first answer (`Idempotent-Replayed: true`) for 24 hours; keys are scoped to the credential."
})

/** The key without its optional quotes. */
export const idempotencyKeyValue = (header: string): string =>
  header.startsWith("\"") && header.endsWith("\"") ? header.slice(1, -1) : header

export const IfMatch = Schema.String.pipe(Schema.maxLength(1024)).annotate({
  description: "The `ETag` of the resource as last read (strong comparison, RFC 9110 13.1.1)."
})

const headerFields = (rule: RouteRule) => ({
  ...(rule.idempotent ? { "idempotency-key": Schema.optional(IdempotencyKey) } : {}),
  ...(rule.ifMatch !== undefined ? { "if-match": Schema.optional(IfMatch) } : {})
})

/** The headers a rule reads, as the handler receives them. */
export interface RuleHeaders {
  readonly "idempotency-key"?: string | undefined
  readonly "if-match"?: string | undefined
}

export type RuleProblem =
  | UserIdentityRequired
  | PermissionRequired
  | TenantMismatch
  | IdempotencyKeyReused
  | IdempotencyRequestInProgress
  | PreconditionFailed
  | PreconditionRequired
  | QuotaExceeded

/**
 * Declares `rule` (and `scope`) on `endpoint`: annotations for the server, and exactly the problems
 * and request headers the rule implies for the OpenAPI document.
 */
export const declare = <
  Name extends string,
  Method extends HttpMethod.HttpMethod,
  Path,
  UrlParams,
  Payload,
  Success,
  Error,
  R,
  RE
>(
  endpoint: HttpApiEndpoint.HttpApiEndpoint<Name, Method, Path, UrlParams, Payload, never, Success, Error, R, RE>,
  scope: Scope,
  rule: RouteRule
): HttpApiEndpoint.HttpApiEndpoint<
  Name,
  Method,
  Path,
  UrlParams,
  Payload,
  RuleHeaders,
  Success,
  Error | RuleProblem,
  R,
  RE
> => {
  let e: any = endpoint.annotate(RequiredScope, scope).annotate(RouteRules, rule)
  if (rule.user) e = e.addError(problem(UserIdentityRequired))
  if (rule.role !== undefined) e = e.addError(problem(PermissionRequired))
  if (rule.tenant) e = e.addError(problem(TenantMismatch))
  if (rule.idempotent) e = e.addError(problem(IdempotencyKeyReused)).addError(problem(IdempotencyRequestInProgress))
  if (rule.ifMatch !== undefined) e = e.addError(problem(PreconditionFailed))
  if (rule.ifMatch === "required") e = e.addError(problem(PreconditionRequired))
  if (rule.quota !== undefined) e = e.addError(problem(QuotaExceeded))
  const headers = headerFields(rule)
  if (Object.keys(headers).length > 0) e = e.setHeaders(Schema.Struct(headers))
  return e
}
