/**
 * The media types the identity server takes a request body in, judged with the `Content-Type` parser
 * both servers share (src/platform/MediaType.ts, RFC 9110 section 8.3.1), never by looking for a
 * substring: `text/plain;charset=application/json` is `text/plain`, a type a cross-site HTML form may
 * send without a CORS preflight, so an endpoint that took it as JSON could be driven from any page.
 *
 * - JSON: `application/json`, with no parameter but `charset=utf-8` (`jsonBodyType`);
 * - a form: `application/x-www-form-urlencoded`, the same way (its registration defines no
 *   parameter; `charset=utf-8`, which some OAuth clients add, names the only encoding read anyway);
 * - an upload: `multipart/form-data` (its `boundary` is the multipart parser's business).
 */
import type { HttpApiEndpoint } from "effect/http-api"
import { jsonBodyType, parseMediaType } from "../../platform/MediaType.js"

export type BodyKind = "json" | "form" | "multipart"

/** The kinds of body an endpoint declares, from its payload's encodings. */
export const declaredBodyKinds = (endpoint: HttpApiEndpoint.Top): ReadonlySet<BodyKind> => {
  const kinds = new Set<BodyKind>()
  for (const { encoding } of endpoint.payload.values()) {
    if (encoding._tag === "Json") kinds.add("json")
    else if (encoding._tag === "FormUrlEncoded") kinds.add("form")
    else if (encoding._tag === "Multipart") kinds.add("multipart")
  }
  return kinds
}

/** The kind of body a `Content-Type` declares; undefined for any other, a malformed or a missing one. */
export const bodyKindOf = (header: string | undefined): BodyKind | undefined => {
  if (header === undefined) return undefined
  if (jsonBodyType(header)._tag === "Json") return "json"
  const mediaType = parseMediaType(header)
  if (mediaType === undefined) return undefined
  if (mediaType.type === "multipart" && mediaType.subtype === "form-data") return "multipart"
  const form = mediaType.type === "application" && mediaType.subtype === "x-www-form-urlencoded" &&
    mediaType.parameters.length <= 1 &&
    mediaType.parameters.every(([name, value]) => name === "charset" && value.toLowerCase() === "utf-8")
  return form ? "form" : undefined
}
