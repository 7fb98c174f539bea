/**
 * A protocol failure on its way to the wire as bare `{error, error_description}`
 * (docs/api-contract.md, "Errors: identity (OAuth errors and the envelope)"):
 * the status of RFC 6749 section 5.2 / RFC 6750 section 3.1 unless given, plus any headers the
 * failure needs (`WWW-Authenticate`, `Retry-After`). A handler fails with it as the error its
 * endpoint declares (`oauthRefusal`, src/identity/http/Responses.ts; the declaration of each status
 * takes the codes answered with it, `oauthErrorStatuses` in schema/Api/IdentityErrors.ts);
 * `oauthFailureResponse` writes it where no endpoint does (the error middleware).
 */
import { Data, Schema } from "effect"
import { HttpServerResponse } from "effect/http"
import type { OAuthErrorCode } from "../../../schema/Identity/OAuthError.js"
import { OAuthError, oauthErrorStatus } from "../../../schema/Identity/OAuthError.js"

export class OAuthFailure extends Data.TaggedError("OAuthFailure")<{
  readonly error: OAuthErrorCode
  readonly description: string
  readonly status?: number
  readonly headers?: Readonly<Record<string, string>>
}> {}

export const oauthFailure = (error: OAuthErrorCode, description: string, extra?: {
  readonly status?: number
  readonly headers?: Readonly<Record<string, string>>
}) => new OAuthFailure({ error, description, ...extra })

/** RFC 6749 section 5.1: token responses and their errors are never cached. */
export const NO_STORE = { "cache-control": "no-store", pragma: "no-cache" } as const

/** The body as the protocol endpoints declare their errors (`OAuthError`, schema/Api/IdentityErrors.ts). */
const encodeOAuthError = Schema.encodeSync(Schema.toCodecJson(OAuthError))

export const oauthFailureResponse = (failure: OAuthFailure): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.jsonUnsafe(
    encodeOAuthError(new OAuthError({ error: failure.error, error_description: failure.description })),
    { status: failure.status ?? oauthErrorStatus(failure.error), headers: { ...NO_STORE, ...failure.headers } }
  )

/** RFC 6750 section 3: the challenge of a refused Bearer token (no error code when none was sent). */
export const bearerChallenge = (error?: { readonly code: string; readonly description: string }) =>
  error === undefined
    ? `Bearer realm="shiori"`
    : `Bearer realm="shiori", error="${error.code}", error_description="${error.description.replace(/["\\]/g, "")}"`
