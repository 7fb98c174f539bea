/**
 * What a route needs beyond its scope (docs/writing.md, "Who may write"), declared once on the
 * endpoint. The declaration is the single source of three things: the checks the credential
 * middleware and the write runner make, the problems and headers the OpenAPI document lists for the
 * operation, and the credential matrix test that drives every declared route.
 */
import { Context, Schema, SchemaAST } from "effect"
import type { HttpMethod } from "effect/http"
import type { HttpApiEndpoint } from "effect/http-api"
import type { Scope } from "../Annotations.js"
import { RequiredScope } from "../Annotations.js"
import { CursorParam, Limit } from "../Catalog/Query.js"
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
import { isStorable } from "../Text.js"

/** Every failing path parameter of a write group's route is reported (a path has no room for unknown ones). */
export const strictParams = { errors: "all", onExcessProperty: "error" } as const

/**
 * Every failing query parameter is reported; unknown ones are ignored, as on every route
 * (docs/api-contract.md, "Records and lists").
 */
export const lenientQuery = { errors: "all" } as const

/**
 * Every failing field of a body is reported, and a member the body's schema does not name is refused
 * (422 `UNKNOWN_VALUE` at its pointer), as the document's `additionalProperties: false` says.
 */
export const strictBody = { errors: "all", onExcessProperty: "error" } as const

/** `limit` and `cursor` of a cursor-paged list. */
export const paging = {
  limit: Schema.optional(Limit),
  cursor: Schema.optional(CursorParam)
}

/** Management roles, nesting: a role satisfies every role before it. */
export const ManagementRoles = ["moderator", "admin", "ren"] as const
export type ManagementRole = (typeof ManagementRoles)[number]

/** True when `roles` hold `role` or a management role above it. */
export const holdsRole = (roles: ReadonlyArray<string>, role: ManagementRole): boolean =>
  ManagementRoles.slice(ManagementRoles.indexOf(role)).some((r) => roles.includes(r))

/** Daily per-site write quotas, by kind. */
export const QuotaKinds = ["claims", "decisions", "proposals", "votes", "news", "playtimes", "media"] as const
export type QuotaKind = (typeof QuotaKinds)[number]

/**
 * What each quota counts: a write counts one, except an image upload, which counts the bytes of its
 * body (what it costs the service to read and decode).
 */
export const QuotaUnits: Readonly<Record<QuotaKind, "writes" | "bytes">> = {
  claims: "writes",
  decisions: "writes",
  proposals: "writes",
  votes: "writes",
  news: "writes",
  playtimes: "writes",
  media: "bytes"
}

export interface RouteRule {
  /** The operation acts for a person: a credential without a user is 403 `USER_IDENTITY_REQUIRED`. */
  readonly user: boolean
  /** The user needs this management role or one above it: else 403 `PERMISSION_REQUIRED`. */
  readonly role?: ManagementRole | undefined
  /**
   * The operation acts on a site's resource: another site's credential is 403 `TENANT_MISMATCH`.
   * Every write (any method but GET) refuses a credential of no site with it too, whatever this says.
   */
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
export const IdempotencyKey = Schema.String.check(
  Schema.isPattern(/^(?:"[\x21\x23-\x7e]{1,255}"|[\x21\x23-\x7e]{1,255})$/u)
).annotate({
  description: "1 to 255 visible ASCII characters, bare or quoted. The same key with the same body replays the " +
    "first answer (`Idempotent-Replayed: true`) for 24 hours; keys are scoped to the credential."
})

/** The key without its optional quotes. */
export const idempotencyKeyValue = (header: string): string =>
  header.startsWith("\"") && header.endsWith("\"") ? header.slice(1, -1) : header

export const IfMatch = Schema.String.check(Schema.isMaxLength(1024), isStorable).annotate({
  description: "The `ETag` of the resource as last read (strong comparison, RFC 9110 13.1.1)."
})

const idempotencyKeyHeader = { "idempotency-key": Schema.optional(IdempotencyKey) }
const ifMatchHeader = { "if-match": Schema.optional(IfMatch) }

/** The request headers a rule reads: `Idempotency-Key` when idempotent, `If-Match` when it has an `ifMatch`. */
export type RuleHeaderFields<R extends RouteRule> =
  & (R extends { readonly idempotent: true } ? typeof idempotencyKeyHeader : {})
  & (R extends { readonly ifMatch: "required" | "optional" } ? typeof ifMatchHeader : {})

const ruleHeaderFields = <R extends RouteRule>(rule: R): RuleHeaderFields<R> =>
  // The type mirrors these two tests; TypeScript does not narrow a conditional type by a runtime test.
  ({
    ...(rule.idempotent ? idempotencyKeyHeader : {}),
    ...(rule.ifMatch !== undefined ? ifMatchHeader : {})
  }) as RuleHeaderFields<R>

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
 * Exactly the problems `rule` implies on an endpoint that writes (`write`: any method but GET) or
 * reads, in the order the OpenAPI document lists them. Every write also implies `TENANT_MISMATCH`:
 * a credential that belongs to no site (an access token of a client without one) may not write.
 */
const ruleProblems = (rule: RouteRule, write: boolean) => [
  ...(rule.user ? [problem(UserIdentityRequired)] : []),
  ...(rule.role !== undefined ? [problem(PermissionRequired)] : []),
  ...(rule.tenant || write ? [problem(TenantMismatch)] : []),
  ...(rule.idempotent ? [problem(IdempotencyKeyReused), problem(IdempotencyRequestInProgress)] : []),
  ...(rule.ifMatch !== undefined ? [problem(PreconditionFailed)] : []),
  ...(rule.ifMatch === "required" ? [problem(PreconditionRequired)] : []),
  ...(rule.quota !== undefined ? [problem(QuotaExceeded)] : [])
]

/** What a rule adds to its endpoint's declaration: the request headers it reads and the problems it implies. */
export interface RuleParts<R extends RouteRule> {
  /** The endpoint's `headers` (an empty record when the rule reads none). */
  readonly headers: RuleHeaderFields<R>
  /** To be appended to the endpoint's own `error` list. */
  readonly problems: ReturnType<typeof ruleProblems>
}

/**
 * Declares `rule` (and `scope`) on the endpoint `build` makes from the rule's parts: the endpoint's
 * options take `headers` and the `problems` (after its own errors), so the OpenAPI document lists
 * exactly the problems and request headers the rule implies; the annotations are for the server.
 * Endpoints take their errors and headers at construction in Effect 4, hence the callback (called
 * twice for a write: the problems depend on the method, which only the endpoint knows); a
 * declaration that leaves the parts out fails when the module loads.
 */
export const declare = <
  const R extends RouteRule,
  Name extends string,
  Method extends HttpMethod.HttpMethod,
  Path extends string,
  Params extends Schema.Top,
  Query extends Schema.Top,
  Payload extends Schema.Top,
  Headers extends Schema.Top,
  Success extends Schema.Top,
  Error extends Schema.Top,
  Middleware,
  MiddlewareServices
>(
  scope: Scope,
  rule: R,
  build: (parts: RuleParts<R>) => HttpApiEndpoint.HttpApiEndpoint<
    Name,
    Method,
    Path,
    Params,
    Query,
    Payload,
    Headers,
    Success,
    Error,
    Middleware,
    MiddlewareServices
  >
): HttpApiEndpoint.HttpApiEndpoint<
  Name,
  Method,
  Path,
  Params,
  Query,
  Payload,
  Headers,
  Success,
  Error,
  Middleware,
  MiddlewareServices
> => {
  const headers = ruleHeaderFields(rule)
  // The method is the endpoint's own: a write is built again with the problems every write implies.
  const read = build({ headers, problems: ruleProblems(rule, false) })
  const problems = ruleProblems(rule, read.method !== "GET")
  const endpoint = read.method === "GET" ? read : build({ headers, problems })
  // The endpoint holds its errors as response codecs; each still decodes to its problem's type.
  const declared = new Set(Array.from(endpoint.error, (schema) => SchemaAST.toType(schema.ast)))
  const missing = problems.filter((schema) => !declared.has(SchemaAST.toType(schema.ast)))
  if (missing.length > 0 || (Object.keys(headers).length > 0 && endpoint.headers === undefined)) {
    throw new globalThis.Error(
      `${endpoint.method} ${endpoint.path}: the declaration leaves out its rule's ${
        missing.length > 0
          ? `problems (${missing.map((schema) => SchemaAST.resolveIdentifier(schema.ast)).join(", ")})`
          : "headers"
      }`
    )
  }
  return endpoint.annotate(RequiredScope, scope).annotate(RouteRules, rule)
}
