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
