/**
 * Annotations the contract carries for the server: which problem code a failing parameter
 * maps to, and which scope an endpoint needs.
 */
import { Context, Schema } from "effect"
import type { ProblemCode } from "./Problem.js"

/**
 * On a schema of a query parameter, or on one of its checks (`Schema.isMaxLength(512,
 * problemCodeOnFailure(...))`): when this schema or check fails to decode, the problem's top-level
 * `code` is this one instead of `INVALID_PARAMETER` (`LIMIT_TOO_LARGE`, `UNKNOWN_SORT`, ...).
 * Schema annotations are string-keyed, so the key is declared on `Schema.Annotations.Annotations`
 * below and read back typed (`ast.annotations?.[ProblemCodeAnnotationId]`, `filter.annotations?.[...]`).
 */
export const ProblemCodeAnnotationId = "shiori/ProblemCode"

declare module "effect/Schema" {
  namespace Annotations {
    interface Annotations {
      readonly "shiori/ProblemCode"?: ProblemCode | undefined
    }
  }
}

export const problemCodeOnFailure = (code: ProblemCode) => ({ [ProblemCodeAnnotationId]: code })

/** Catalog scopes (docs/api-contract.md, "Credentials, scopes and the content limit"). */
export const Scopes = [
  "catalog:read",
  "catalog:write",
  "claims:write",
  "moderation",
  "media:write",
  "votes:write",
  "news:write",
  "playtimes:write"
] as const
export type Scope = (typeof Scopes)[number]

/**
 * Endpoint or group annotation: the scope a credential needs for it; `"any"` when any valid
 * credential will do. Every endpoint behind the credential middleware must carry one.
 */
export class RequiredScope extends Context.Service<RequiredScope, Scope | "any">()("shiori/RequiredScope") {}

/**
 * What a stored answer of a read may depend on (docs/life-of-a-request.md, "Stored answers"): the
 * credential's content limit, its scope set, its tenant (the site it belongs to), and the URL (the
 * path and the decoded query, so parameter order and ignored unknown parameters do not split it).
 */
export type CacheKeyPart = "content_limit" | "scopes" | "tenant" | "url"

/** The parts an endpoint's stored answer is keyed by; `P` names them for the handler's types. */
export interface CacheDeclaration<P extends CacheKeyPart = CacheKeyPart> {
  readonly parts: ReadonlyArray<P>
}

/**
 * Endpoint annotation: the endpoint's answer is stored and replayed inside the request stack,
 * keyed by exactly these parts (src/catalog/shared/Replay.ts). The handler passes the same
 * declaration to `Replay.respond`, whose computation receives only these parts.
 */
export class CachedBy extends Context.Service<CachedBy, CacheDeclaration>()("shiori/CachedBy") {}

/** A declaration for `CachedBy`, typed by its parts. */
export const cachedBy = <const P extends CacheKeyPart>(parts: ReadonlyArray<P>): CacheDeclaration<P> => ({ parts })

/** Endpoint or group annotation: the endpoint is public (no credential needed). */
export class Public extends Context.Service<Public, boolean>()("shiori/Public") {}

/**
 * The 304 of a single-record read (docs/api-contract.md, "Caching, ETags and freshness"): declared
 * on every endpoint that sends a strong `ETag`, so the OpenAPI document and the typed client know a
 * current `If-None-Match` gets no body.
 */
export const NotModified = Schema.Void.annotate({
  description: "Not Modified: the `ETag` named in `If-None-Match` is current (RFC 9110 15.4.5); no body."
})

/**
 * The field-error reason a check of our own reports (src/platform/FieldErrors.ts reads it): a check
 * that is not one of Schema's built-ins is otherwise `INVALID_FORMAT`.
 */
export const ReasonAnnotationId = "shiori/Reason"
