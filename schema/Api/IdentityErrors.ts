/**
 * How identity failures are documented on the endpoints: bare RFC 6749 errors on protocol endpoints, the
 * envelope elsewhere (docs/api-contract.md, "Errors: identity (OAuth errors and the envelope)"), and HTML
 * for the pages. The handlers answer these themselves (with `Cache-Control`, `WWW-Authenticate` and
 * `Retry-After` headers), so the declarations only describe them.
 */
import { Schema } from "effect"
import { HttpApiSchema } from "effect/http-api"
import { EnvelopeFailure } from "../Identity/Envelope.js"
import { OAuthError } from "../Identity/OAuthError.js"

/**
 * One schema per status (`OAuthError401`, `EnvelopeError400`, ...), described by the first declaration
 * of that status, under which each endpoint describes its own response: the OpenAPI document has one
 * component per status, and every response its own description (the description of the outer, identity
 * step; the document shows the encoded side, the shared schema).
 */
const perStatus = <const Fields extends Schema.Struct.Fields>(name: string, fields: Fields) => {
  const shared = new Map<number, Schema.Struct<Fields>>()
  return (status: number, description: string) => {
    let schema = shared.get(status)
    if (schema === undefined) {
      schema = Schema.Struct(fields).annotate({ identifier: `${name}${status}`, description })
      shared.set(status, schema)
    }
    return schema.pipe(Schema.decodeTo(Schema.toType(schema)), HttpApiSchema.status(status)).annotate({ description })
  }
}

export const oauthError = perStatus("OAuthError", OAuthError.fields)

export const envelopeError = perStatus("EnvelopeError", EnvelopeFailure.fields)

export const HtmlPage = Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" })).annotate({
  description: "Server-rendered HTML page."
})

export const htmlError = (status: number, description: string) =>
  Schema.String.pipe(HttpApiSchema.asText({ contentType: "text/html" }), HttpApiSchema.status(status)).annotate({
    description
  })

export const Redirect = (status: 302 | 303, description: string) =>
  HttpApiSchema.Empty(status).annotate({ description })
