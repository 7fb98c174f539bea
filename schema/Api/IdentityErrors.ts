/**
 * How identity failures are documented on the endpoints: bare RFC 6749 errors on protocol endpoints, the
 * envelope elsewhere (docs/api-contract.md, "Errors: identity (OAuth errors and the envelope)"), and HTML
 * for the pages. The handlers answer these themselves (with `Cache-Control`, `WWW-Authenticate` and
 * `Retry-After` headers), so the declarations only describe them.
 */
import { HttpApiSchema } from "effect/http-api"
import { Schema } from "effect"
import { EnvelopeFailure } from "../Identity/Envelope.js"
import { OAuthError } from "../Identity/OAuthError.js"

export const oauthError = (status: number, description: string) =>
  Schema.Struct(OAuthError.fields).annotate({
    ...HttpApiSchema.annotations({ status }),
    identifier: `OAuthError${status}`,
    description
  })

export const envelopeError = (status: number, description: string) =>
  Schema.Struct(EnvelopeFailure.fields).annotate({
    ...HttpApiSchema.annotations({ status }),
    identifier: `EnvelopeError${status}`,
    description
  })

export const HtmlPage = HttpApiSchema.Text({ contentType: "text/html" }).annotate({
  description: "Server-rendered HTML page."
})

export const htmlError = (status: number, description: string) =>
  HttpApiSchema.Text({ contentType: "text/html" }).annotate({
    ...HttpApiSchema.annotations({ status }),
    description
  })

export const Redirect = (status: 302 | 303, description: string) =>
  HttpApiSchema.Empty(status).annotate({ description })
