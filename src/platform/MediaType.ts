/**
 * Media types as `Content-Type` carries them (RFC 9110 section 8.3.1), parsed once for every server:
 *
 *   media-type = type "/" subtype parameters
 *   parameters = *( OWS ";" OWS [ parameter ] )
 *   parameter  = parameter-name "=" parameter-value
 *   parameter-value = token / quoted-string
 *
 * Type, subtype and parameter names are case-insensitive and come back in lower case; a parameter
 * value is kept as sent (a quoted one unquoted, RFC 9110 section 5.6.4: quoted or not, it is the same
 * value). Whether a value is case-sensitive depends on the parameter (`charset` is not, RFC 9110
 * section 8.3.2).
 */

export interface MediaType {
  readonly type: string
  readonly subtype: string
  /** In the order sent; a name may repeat, which callers may refuse. */
  readonly parameters: ReadonlyArray<readonly [name: string, value: string]>
}

/** tchar of RFC 9110 section 5.6.2. */
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/

const isOws = (c: string | undefined) => c === " " || c === "\t"

/**
 * Parses a `Content-Type` field value; `undefined` when it is not a media type (no `/`, a character
 * outside a token, an unterminated quoted string, a parameter without `=`).
 */
export const parseMediaType = (value: string): MediaType | undefined => {
  let i = 0
  const n = value.length
  const skipOws = () => {
    while (isOws(value[i])) i++
  }
  const token = (): string | undefined => {
    const start = i
    while (i < n && TOKEN.test(value[i]!)) i++
    return i > start ? value.slice(start, i) : undefined
  }
  skipOws()
  const type = token()
  if (type === undefined || value[i] !== "/") return undefined
  i++
  const subtype = token()
  if (subtype === undefined) return undefined
  const parameters: Array<readonly [string, string]> = []
  for (;;) {
    skipOws()
    if (i === n) break
    if (value[i] !== ";") return undefined
    i++
    skipOws()
    // `;` with nothing after it (or before the next `;`) is allowed: `[ parameter ]`.
    if (i === n || value[i] === ";") continue
    const name = token()
    if (name === undefined || value[i] !== "=") return undefined
    i++
    let parameterValue: string | undefined
    if (value[i] === "\"") {
      i++
      let out = ""
      let closed = false
      while (i < n) {
        const c = value[i]!
        if (c === "\"") {
          closed = true
          i++
          break
        }
        if (c === "\\") {
          if (i + 1 >= n) return undefined
          out += value[i + 1]
          i += 2
          continue
        }
        // qdtext: HTAB, SP, visible ASCII but `"` and `\`, obs-text.
        const code = c.charCodeAt(0)
        if (code !== 0x09 && (code < 0x20 || code === 0x7f)) return undefined
        out += c
        i++
      }
      if (!closed) return undefined
      parameterValue = out
    } else {
      parameterValue = token()
      if (parameterValue === undefined) return undefined
    }
    parameters.push([name.toLowerCase(), parameterValue])
  }
  return { type: type.toLowerCase(), subtype: subtype.toLowerCase(), parameters }
}

/** What a JSON-only endpoint makes of a request body's `Content-Type`. */
export type JsonBodyType =
  | { readonly _tag: "Json" }
  /** No `Content-Type` at all. */
  | { readonly _tag: "Missing" }
  /** Not a media type. */
  | { readonly _tag: "Malformed" }
  /** A media type, but not `application/json` with at most `charset=utf-8`. */
  | { readonly _tag: "Other"; readonly mediaType: MediaType }

/** The only media type a JSON-only endpoint takes a body in (RFC 8259 section 8.1: UTF-8). */
export const JSON_MEDIA_TYPE = "application/json"

/**
 * Whether a body sent with this `Content-Type` is JSON as a JSON-only endpoint takes it:
 * `application/json`, optionally with `charset=utf-8` (any case, quoted or not) and nothing else.
 * Another charset, another parameter, a repeated one, or a `+json` type are other media types.
 */
export const jsonBodyType = (header: string | undefined): JsonBodyType => {
  if (header === undefined) return { _tag: "Missing" }
  const mediaType = parseMediaType(header)
  if (mediaType === undefined) return { _tag: "Malformed" }
  const plain = mediaType.type === "application" && mediaType.subtype === "json" &&
    mediaType.parameters.length <= 1 &&
    mediaType.parameters.every(([name, value]) => name === "charset" && value.toLowerCase() === "utf-8")
  return plain ? { _tag: "Json" } : { _tag: "Other", mediaType }
}
