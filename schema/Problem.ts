/**
 * Problem documents of the catalog API (RFC 9457; docs/api-contract.md, "Errors: catalog problem documents").
 *
 * Two closed registries live here and nowhere else: the top-level `code`s (each with its HTTP
 * status, fixed title and type-URI slug) and the field-level `reason`s (each with the `params`
 * keys it may carry). Every problem class, the OpenAPI document, the `/v2/problems/reasons`
 * endpoint and the problem type pages are derived from them.
 */
import { Effect, Schema, SchemaTransformation } from "effect"
import { HttpApiMiddleware, HttpApiSchema } from "effect/http-api"

// ---------------------------------------------------------------------------------------------
// Code registry
// ---------------------------------------------------------------------------------------------

interface CodeEntry {
  readonly status: number
  readonly title: string
  readonly domain: string
  readonly description: string
}

const entry = (status: number, domain: string, title: string, description: string): CodeEntry => ({
  status,
  domain,
  title,
  description
})

/** The closed registry of problem codes, each with its HTTP status. */
export const ProblemCodes = {
  INVALID_PARAMETER: entry(
    400,
    "request",
    "Invalid request parameter",
    "A query, path or header parameter is malformed or out of range; `errors[]` names each one."
  ),
  UNKNOWN_INCLUDE: entry(
    400,
    "request",
    "Unknown include token",
    "`include=` names a token this collection does not offer; `errors[0].params.allowed` lists the valid ones."
  ),
  UNKNOWN_SORT: entry(
    400,
    "request",
    "Unknown sort",
    "`sort=` is not in the closed sort set; `errors[0].params.allowed` lists it."
  ),
  UNKNOWN_FACET: entry(
    400,
    "request",
    "Unknown facet",
    "`facets=` names a facet that does not exist; `errors[0].params.allowed` lists them."
  ),
  LIMIT_TOO_LARGE: entry(
    400,
    "request",
    "Limit too large",
    "`limit` is above the maximum page size; it is never clamped."
  ),
  TOO_MANY_IDS: entry(400, "request", "Too many ids", "The `ids=` / `refs=` batch lane takes at most 100 values."),
  INVALID_CURSOR: entry(
    400,
    "request",
    "Invalid cursor",
    "The cursor is malformed, forged, truncated or was issued for different filters. Restart from the first page."
  ),
  MISSING_CREDENTIAL: entry(
    401,
    "auth",
    "Missing credential",
    "The request carries no `Authorization: Bearer` credential."
  ),
  INVALID_CREDENTIAL: entry(
    401,
    "auth",
    "Invalid credential",
    "The credential is unknown, revoked, expired or malformed. A user token may be refreshed once, then retried."
  ),
  SCOPE_REQUIRED: entry(403, "auth", "Scope required", "The credential lacks the scope this operation needs."),
  USER_IDENTITY_REQUIRED: entry(
    403,
    "auth",
    "User identity required",
    "The operation acts for a person; the credential carries no user."
  ),
  PERMISSION_REQUIRED: entry(403, "auth", "Permission required", "The user's roles do not permit this operation."),
  TENANT_MISMATCH: entry(403, "auth", "Tenant mismatch", "The credential belongs to another site than the resource."),
  NOT_FOUND: entry(404, "resource", "Not found", "No resource at this URL (or it is not visible to this credential)."),
  ENTITY_MERGED: entry(
    404,
    "resource",
    "Entity merged",
    "The entity was merged into another; `current_id` names the survivor and the `Link` header its canonical URL."
  ),
  METHOD_NOT_ALLOWED: entry(
    405,
    "request",
    "Method not allowed",
    "The path exists but does not accept this method; the `Allow` header lists the ones it does."
  ),
  ALREADY_EXISTS: entry(409, "resource", "Already exists", "A resource with the same identity already exists."),
  IDEMPOTENCY_KEY_REUSED: entry(
    409,
    "idempotency",
    "Idempotency key reused",
    "The `Idempotency-Key` was already used with a different request body."
  ),
  INVALID_STATE_TRANSITION: entry(
    409,
    "resource",
    "Invalid state transition",
    "The resource's current state does not allow this change. Read it first."
  ),
  IDEMPOTENCY_REQUEST_IN_PROGRESS: entry(
    409,
    "idempotency",
    "Idempotent request in progress",
    "A request with this `Idempotency-Key` is still running; retry after `Retry-After` seconds with the same body."
  ),
  GONE: entry(410, "request", "Gone", "This URL was permanently retired (API v1). Use the /v2 API."),
  PRECONDITION_FAILED: entry(
    412,
    "concurrency",
    "Precondition failed",
    "`If-Match` does not match the current ETag; re-read the resource."
  ),
  PRECONDITION_REQUIRED: entry(428, "concurrency", "Precondition required", "This operation requires `If-Match`."),
  PAYLOAD_TOO_LARGE: entry(
    413,
    "request",
    "Payload too large",
    "The request body exceeds the limit (`max_bytes`); shrink or split it."
  ),
  VALIDATION_FAILED: entry(
    422,
    "request",
    "Validation failed",
    "The request body is well-formed JSON but violates the schema; `errors[]` has a JSON Pointer per field."
  ),
  RATE_LIMITED: entry(
    429,
    "limits",
    "Rate limited",
    "Too many requests for this credential; wait `Retry-After` seconds."
  ),
  QUOTA_EXCEEDED: entry(
    429,
    "limits",
    "Quota exceeded",
    "The site's daily quota is used up; wait `Retry-After` seconds."
  ),
  INTERNAL_ERROR: entry(
    500,
    "server",
    "Internal error",
    "An unexpected failure. Retry with exponential backoff; report the `request_id` if it persists."
  ),
  SERVICE_UNAVAILABLE: entry(
    503,
    "server",
    "Service unavailable",
    "A dependency (the database) is unreachable; retry after `Retry-After` seconds."
  )
} as const satisfies Record<string, CodeEntry>

export type ProblemCode = keyof typeof ProblemCodes
export const problemCodeList = Object.keys(ProblemCodes) as ReadonlyArray<ProblemCode>

/** `INVALID_PARAMETER` -> `invalid-parameter` */
export const problemSlug = (code: ProblemCode): string =>
  `${ProblemCodes[code].domain}/${code.toLowerCase().replaceAll("_", "-")}`

/** `{docs_url}/problems/<domain>/<slug>`: the catalog serves a page there, so every `type` dereferences. */
export const problemTypeUri = (docsUrl: string, code: ProblemCode): string => `${docsUrl}/problems/${problemSlug(code)}`

// ---------------------------------------------------------------------------------------------
// Reason registry
// ---------------------------------------------------------------------------------------------

/** The closed registry of field-level reasons with the `params` keys each may carry. */
export const Reasons = {
  REQUIRED: { params: [], description: "The field is required and was not given." },
  INVALID_FORMAT: { params: [], description: "The value does not have the expected type or format." },
  OUT_OF_RANGE: { params: ["minimum", "maximum"], description: "The number is outside its bounds." },
  TOO_LONG: { params: ["max_length"], description: "The string is longer than allowed." },
  TOO_SHORT: { params: ["min_length"], description: "The string is shorter than allowed." },
  TOO_MANY_ITEMS: { params: ["max_items"], description: "The array has more items than allowed." },
  TOO_FEW_ITEMS: { params: ["min_items"], description: "The array has fewer items than required." },
  DUPLICATE_ITEM: { params: [], description: "The array repeats an item that must be unique." },
  UNKNOWN_VALUE: { params: ["allowed"], description: "The value is not in the closed vocabulary." },
  NOT_ALLOWED_VALUE: { params: [], description: "The value is valid but not allowed here." },
  UNKNOWN_REFERENCE: { params: [], description: "The value refers to something that does not exist." },
  IMMUTABLE: { params: [], description: "The field cannot be changed." },
  INCONSISTENT_WITH: { params: [], description: "The value contradicts another field of the request." },
  NOT_PERMITTED: { params: [], description: "The caller may not set this field." }
} as const satisfies Record<string, { readonly params: ReadonlyArray<string>; readonly description: string }>

export type Reason = keyof typeof Reasons
export const reasonList = Object.keys(Reasons) as ReadonlyArray<Reason>

// ---------------------------------------------------------------------------------------------
// Field errors
// ---------------------------------------------------------------------------------------------

export const FieldErrorParams = Schema.Struct({
  max_length: Schema.optionalKey(Schema.Int),
  min_length: Schema.optionalKey(Schema.Int),
  minimum: Schema.optionalKey(Schema.Number),
  maximum: Schema.optionalKey(Schema.Number),
  max_items: Schema.optionalKey(Schema.Int),
  min_items: Schema.optionalKey(Schema.Int),
  allowed: Schema.optionalKey(Schema.Array(Schema.String))
}).annotate({
  identifier: "FieldErrorParams",
  description:
    "Numbers and vocabularies behind the reason; which keys a reason may carry is served at /v2/problems/reasons."
})

const FieldErrorStruct = Schema.Struct({
  reason: Schema.Literals(reasonList).annotate({ description: "Closed registry; see /v2/problems/reasons." }),
  detail: Schema.String.check(Schema.isMaxLength(2048)).annotate({ description: "English; for display only." }),
  pointer: Schema.optionalKey(
    Schema.String.check(Schema.isPattern(/^\//u)).annotate({ description: "JSON Pointer into the request body." })
  ),
  parameter: Schema.optionalKey(
    Schema.String.check(Schema.isPattern(/^[A-Za-z_][A-Za-z0-9_]*$/u)).annotate({
      description: "Query or path parameter name."
    })
  ),
  header: Schema.optionalKey(
    Schema.String.check(Schema.isPattern(/^[A-Za-z0-9-]+$/u)).annotate({ description: "Request header name." })
  ),
  params: Schema.optionalKey(FieldErrorParams)
})

export const FieldError = FieldErrorStruct.check(
  Schema.makeFilter((e) =>
    [e.pointer, e.parameter, e.header].filter((l) => l !== undefined).length === 1 ||
    "exactly one of pointer, parameter, header"
  )
).annotate({
  identifier: "FieldError",
  description: "One field-level failure. Exactly one of `pointer`, `parameter`, `header` locates it."
})
export type FieldError = typeof FieldError.Type

// ---------------------------------------------------------------------------------------------
// Problem classes
// ---------------------------------------------------------------------------------------------

/** A member the constructor fills when it is not given (`new NotFound({ detail })`); always on the wire. */
const withDefault = <S extends Schema.Top & Schema.WithoutConstructorDefault>(
  schema: S,
  value: S["~type.make.in"]
) => schema.pipe(Schema.withConstructorDefault<S>(Effect.succeed(value)))

/**
 * The members every problem document carries. `type`, `instance` and `request_id` depend on the
 * request and the deployment; the problem middleware stamps them, so domain code constructs a
 * problem with only what it knows (`new NotFound({ detail })`).
 */
const problemFields = <const C extends ProblemCode>(code: C) => {
  const { status, title } = ProblemCodes[code]
  return {
    type: withDefault(Schema.String.annotate({ description: "Problem type URI; dereferenceable." }), ""),
    title: withDefault(Schema.Literal(title as (typeof ProblemCodes)[C]["title"]), title),
    status: withDefault(Schema.Literal(status as (typeof ProblemCodes)[C]["status"]), status),
    code: withDefault(Schema.Literal(code), code),
    detail: withDefault(
      Schema.String.annotate({ description: "English, request-specific; empty when nothing to add." }),
      ""
    ),
    instance: withDefault(
      Schema.String.annotate({ description: "Path and query of the failing request." }),
      ""
    ),
    request_id: withDefault(
      Schema.String.annotate({ description: "Same value as the `X-Request-ID` response header." }),
      ""
    ),
    errors: withDefault(Schema.Array(FieldError), [])
  }
}

const retryAfter = {
  retry_after: Schema.Int.check(Schema.isGreaterThanOrEqualTo(0)).annotate({
    description: "Seconds to wait; also sent as the `Retry-After` header."
  })
}

export class InvalidParameter
  extends Schema.TaggedError<InvalidParameter>()("InvalidParameter", problemFields("INVALID_PARAMETER"))
{}
export class UnknownInclude
  extends Schema.TaggedError<UnknownInclude>()("UnknownInclude", problemFields("UNKNOWN_INCLUDE"))
{}
export class UnknownSort extends Schema.TaggedError<UnknownSort>()("UnknownSort", problemFields("UNKNOWN_SORT")) {}
export class UnknownFacet extends Schema.TaggedError<UnknownFacet>()("UnknownFacet", problemFields("UNKNOWN_FACET")) {}
export class LimitTooLarge
  extends Schema.TaggedError<LimitTooLarge>()("LimitTooLarge", problemFields("LIMIT_TOO_LARGE"))
{}
export class TooManyIds extends Schema.TaggedError<TooManyIds>()("TooManyIds", problemFields("TOO_MANY_IDS")) {}
export class InvalidCursor
  extends Schema.TaggedError<InvalidCursor>()("InvalidCursor", problemFields("INVALID_CURSOR"))
{}
export class MissingCredential
  extends Schema.TaggedError<MissingCredential>()("MissingCredential", problemFields("MISSING_CREDENTIAL"))
{}
export class InvalidCredential
  extends Schema.TaggedError<InvalidCredential>()("InvalidCredential", problemFields("INVALID_CREDENTIAL"))
{}
export class ScopeRequired
  extends Schema.TaggedError<ScopeRequired>()("ScopeRequired", problemFields("SCOPE_REQUIRED"))
{}
export class UserIdentityRequired
  extends Schema.TaggedError<UserIdentityRequired>()("UserIdentityRequired", problemFields("USER_IDENTITY_REQUIRED"))
{}
export class PermissionRequired
  extends Schema.TaggedError<PermissionRequired>()("PermissionRequired", problemFields("PERMISSION_REQUIRED"))
{}
export class TenantMismatch
  extends Schema.TaggedError<TenantMismatch>()("TenantMismatch", problemFields("TENANT_MISMATCH"))
{}
export class NotFound extends Schema.TaggedError<NotFound>()("NotFound", problemFields("NOT_FOUND")) {}
export class EntityMerged extends Schema.TaggedError<EntityMerged>()("EntityMerged", {
  ...problemFields("ENTITY_MERGED"),
  object: Schema.String.annotate({ description: "The entity type, e.g. `work`." }),
  current_id: Schema.String.check(Schema.isPattern(/^[0-9]{1,20}$/u)).annotate({
    description: "The id that replaced the requested one."
  })
}) {}
export class MethodNotAllowed extends Schema.TaggedError<MethodNotAllowed>()("MethodNotAllowed", {
  ...problemFields("METHOD_NOT_ALLOWED"),
  allow: Schema.Array(Schema.String).annotate({ description: "Methods the path accepts; also the `Allow` header." })
}) {}
export class AlreadyExists
  extends Schema.TaggedError<AlreadyExists>()("AlreadyExists", problemFields("ALREADY_EXISTS"))
{}
export class IdempotencyKeyReused
  extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", problemFields("IDEMPOTENCY_KEY_REUSED"))
{}
export class InvalidStateTransition extends Schema.TaggedError<InvalidStateTransition>()(
  "InvalidStateTransition",
  problemFields("INVALID_STATE_TRANSITION")
) {}
export class IdempotencyRequestInProgress
  extends Schema.TaggedError<IdempotencyRequestInProgress>()("IdempotencyRequestInProgress", {
    ...problemFields("IDEMPOTENCY_REQUEST_IN_PROGRESS"),
    ...retryAfter
  })
{}
export class Gone extends Schema.TaggedError<Gone>()("Gone", problemFields("GONE")) {}
export class PreconditionFailed
  extends Schema.TaggedError<PreconditionFailed>()("PreconditionFailed", problemFields("PRECONDITION_FAILED"))
{}
export class PreconditionRequired
  extends Schema.TaggedError<PreconditionRequired>()("PreconditionRequired", problemFields("PRECONDITION_REQUIRED"))
{}
export class PayloadTooLarge extends Schema.TaggedError<PayloadTooLarge>()("PayloadTooLarge", {
  ...problemFields("PAYLOAD_TOO_LARGE"),
  max_bytes: Schema.Int.check(Schema.isGreaterThan(0)).annotate({ description: "The body size limit in bytes." })
}) {}
export class ValidationFailed
  extends Schema.TaggedError<ValidationFailed>()("ValidationFailed", problemFields("VALIDATION_FAILED"))
{}
export class RateLimited extends Schema.TaggedError<RateLimited>()("RateLimited", {
  ...problemFields("RATE_LIMITED"),
  ...retryAfter
}) {}
export class QuotaExceeded extends Schema.TaggedError<QuotaExceeded>()("QuotaExceeded", {
  ...problemFields("QUOTA_EXCEEDED"),
  ...retryAfter,
  quota: Schema.String.annotate({ description: "The quota that is used up (`claims`, `decisions`, ...)." }),
  limit: Schema.Int.check(Schema.isGreaterThan(0)).annotate({
    description: "What the quota allows per UTC day: writes, or bytes for `media` (image uploads)."
  })
}) {}
export class InternalError
  extends Schema.TaggedError<InternalError>()("InternalError", problemFields("INTERNAL_ERROR"))
{}
export class ServiceUnavailable extends Schema.TaggedError<ServiceUnavailable>()("ServiceUnavailable", {
  ...problemFields("SERVICE_UNAVAILABLE"),
  ...retryAfter
}) {}

/** One class per code; the registry is closed, so this record is checked against it. */
export const ProblemClasses = {
  INVALID_PARAMETER: InvalidParameter,
  UNKNOWN_INCLUDE: UnknownInclude,
  UNKNOWN_SORT: UnknownSort,
  UNKNOWN_FACET: UnknownFacet,
  LIMIT_TOO_LARGE: LimitTooLarge,
  TOO_MANY_IDS: TooManyIds,
  INVALID_CURSOR: InvalidCursor,
  MISSING_CREDENTIAL: MissingCredential,
  INVALID_CREDENTIAL: InvalidCredential,
  SCOPE_REQUIRED: ScopeRequired,
  USER_IDENTITY_REQUIRED: UserIdentityRequired,
  PERMISSION_REQUIRED: PermissionRequired,
  TENANT_MISMATCH: TenantMismatch,
  NOT_FOUND: NotFound,
  ENTITY_MERGED: EntityMerged,
  METHOD_NOT_ALLOWED: MethodNotAllowed,
  ALREADY_EXISTS: AlreadyExists,
  IDEMPOTENCY_KEY_REUSED: IdempotencyKeyReused,
  INVALID_STATE_TRANSITION: InvalidStateTransition,
  IDEMPOTENCY_REQUEST_IN_PROGRESS: IdempotencyRequestInProgress,
  GONE: Gone,
  PRECONDITION_FAILED: PreconditionFailed,
  PRECONDITION_REQUIRED: PreconditionRequired,
  PAYLOAD_TOO_LARGE: PayloadTooLarge,
  VALIDATION_FAILED: ValidationFailed,
  RATE_LIMITED: RateLimited,
  QUOTA_EXCEEDED: QuotaExceeded,
  INTERNAL_ERROR: InternalError,
  SERVICE_UNAVAILABLE: ServiceUnavailable
} as const satisfies { readonly [C in ProblemCode]: Schema.Top & { readonly fields: Schema.Struct.Fields } }

export type ProblemClass = (typeof ProblemClasses)[ProblemCode]
export type Problem = InstanceType<ProblemClass>

const problemClassSet: ReadonlySet<unknown> = new Set(Object.values(ProblemClasses))
export const isProblem = (u: unknown): u is Problem =>
  typeof u === "object" && u !== null && problemClassSet.has(u.constructor)

// ---------------------------------------------------------------------------------------------
// Wire schemas: `_tag` stays off the wire, the media type is application/problem+json
// ---------------------------------------------------------------------------------------------

const wireCache = new Map<ProblemClass, Schema.Top>()
const codeOfClass = new Map<ProblemClass, ProblemCode>(
  Object.entries(ProblemClasses).map(([code, cls]) => [cls, code as ProblemCode])
)

/** `INVALID_PARAMETER` -> `InvalidParameterProblem`: the name of the schema in the OpenAPI document. */
const wireIdentifier = (code: ProblemCode) =>
  `${
    code
      .toLowerCase()
      .split("_")
      .map((w: string) => w[0]!.toUpperCase() + w.slice(1))
      .join("")
  }Problem`

const makeWire = <C extends ProblemClass>(cls: C): Schema.Codec<InstanceType<C>, ProblemWire> => {
  const { _tag, ...fields } = cls.fields as Schema.Struct.Fields
  const code = codeOfClass.get(cls)!
  const meta = ProblemCodes[code]
  const Constructor = cls as unknown as new(props: Record<string, unknown>) => Problem
  // The wire members carry the name and text of the OpenAPI component; the decoded side is the class.
  const wire = Schema.Struct(fields).annotate({
    identifier: wireIdentifier(code),
    title: meta.title,
    description: `\`${code}\` (HTTP ${meta.status}): ${meta.description}`
  }).pipe(
    Schema.decodeTo(
      Schema.toType(cls as unknown as Schema.Codec<Problem>),
      SchemaTransformation.transform<Problem, Record<string, unknown>>({
        decode: (members) => new Constructor(members),
        encode: (value) => {
          const { _tag: _, ...members } = value as unknown as Record<string, unknown>
          return members
        }
      })
    )
  ).annotate({ description: `\`${code}\` (HTTP ${meta.status}): ${meta.description}` })
  return wire.pipe(
    HttpApiSchema.status(meta.status),
    HttpApiSchema.asJson({ contentType: "application/problem+json" })
  ) as unknown as Schema.Codec<InstanceType<C>, ProblemWire>
}

/** The schema of a problem class as declared on an endpoint (`error: [problem(NotFound), ...]`). */
export const problem = <C extends ProblemClass>(cls: C): Schema.Codec<InstanceType<C>, ProblemWire> => {
  let schema = wireCache.get(cls)
  if (schema === undefined) {
    schema = makeWire(cls)
    wireCache.set(cls, schema)
  }
  return schema as unknown as Schema.Codec<InstanceType<C>, ProblemWire>
}

/**
 * Turns every problem an endpoint fails with, and every request its declared schemas refuse, into
 * the finished problem response (request-specific members and headers included) before the
 * platform's error encoder sees it. Declared on each catalog API as its last middleware, so it
 * wraps the credential middleware too; implemented by src/platform/ProblemMiddleware.ts. Its
 * errors are the failures any operation can meet (bad parameters, a bad body, a defect, the
 * database away), so the OpenAPI document lists them on every operation.
 */
export class ProblemResponses extends HttpApiMiddleware.Service<ProblemResponses>()("shiori/ProblemResponses", {
  error: [
    problem(InvalidParameter),
    problem(ValidationFailed),
    problem(PayloadTooLarge),
    problem(InternalError),
    problem(ServiceUnavailable)
  ]
}) {}

/** The encoded shape every problem shares (the extension members are optional here). */
export interface ProblemWire {
  readonly type: string
  readonly title: string
  readonly status: number
  readonly code: ProblemCode
  readonly detail: string
  readonly instance: string
  readonly request_id: string
  readonly errors: ReadonlyArray<typeof FieldError.Encoded>
  readonly object?: string
  readonly current_id?: string
  readonly allow?: ReadonlyArray<string>
  readonly retry_after?: number
  readonly max_bytes?: number
  readonly quota?: string
  readonly limit?: number
}

/** The generic problem document, for documentation of undeclared statuses. */
export const ProblemDocument = Schema.Struct({
  type: Schema.String,
  title: Schema.String,
  status: Schema.Int,
  code: Schema.Literals(problemCodeList),
  detail: Schema.String,
  instance: Schema.String,
  request_id: Schema.String.check(Schema.isPattern(/^req_[0-9A-HJKMNP-TV-Z]{26}$/)),
  errors: Schema.Array(FieldError),
  object: Schema.optionalKey(Schema.String),
  current_id: Schema.optionalKey(Schema.String)
}).annotate({
  identifier: "Problem",
  description: "RFC 9457 problem document. Branch on the HTTP status, then on `code`; never on `detail`."
})

/** `/v2/problems/reasons` entries. */
export const ReasonEntry = Schema.Struct({
  object: Schema.Literal("reason"),
  reason: Schema.Literals(reasonList),
  param_names: Schema.Array(Schema.String),
  description: Schema.String
}).annotate({ identifier: "ReasonEntry" })
