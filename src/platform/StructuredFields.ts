/**
 * Serializing Structured Field Values for HTTP (RFC 9651, which obsoletes RFC 8941): the one place
 * structured header fields are written, such as the IETF RateLimit fields (RateLimiter.ts,
 * `rateLimitFields`).
 *
 * What the fields need and no more: Items (section 3.3) with Parameters (section 3.1.2), Lists of
 * Items (section 3.1) and Dictionaries of Items (section 3.2); no Inner Lists. A bare item is given
 * as a JavaScript value:
 *
 * - an integer `number` is an sf-integer, any other finite one an sf-decimal (section 4.1.5: rounded
 *   to three decimal places);
 * - a `string` is an sf-string (section 4.1.6: `"` and `\` escaped);
 * - a `Token` is an sf-token, a `boolean` an sf-boolean, a `Uint8Array` a byte sequence.
 *
 * A value the grammar cannot carry (a non-ASCII string, an integer beyond 15 digits, a bad key) is a
 * programming error: serializing throws, as section 4.1 says serialization must fail.
 */

/** An sf-token (section 3.3.4), as opposed to an sf-string. */
export class Token {
  constructor(readonly value: string) {}
}

export type BareItem = number | string | boolean | Token | Uint8Array

/** Parameters in order; a `true` value is written as the key alone (section 4.1.1.2). */
export type Parameters = Readonly<Record<string, BareItem>>

export interface Item {
  readonly value: BareItem
  readonly params?: Parameters | undefined
}

const KEY = /^[a-z*][a-z0-9_\-.*]*$/
const TOKEN = /^[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*$/
const MAX_INTEGER = 999_999_999_999_999

const fail = (what: string): never => {
  throw new TypeError(`Cannot serialize as a structured field: ${what}`)
}

/** Section 4.1.4. */
const serializeInteger = (n: number): string =>
  Math.abs(n) > MAX_INTEGER ? fail(`integer out of range: ${n}`) : String(n)

/** Section 4.1.5: at most 12 integer digits, three fractional ones (rounded half to even), at least one. */
const serializeDecimal = (n: number): string => {
  if (!Number.isFinite(n)) return fail(`not a finite number: ${n}`)
  const thousandths = n * 1000
  const floor = Math.floor(thousandths)
  const diff = thousandths - floor
  const rounded = diff > 0.5 || (diff === 0.5 && floor % 2 !== 0) ? floor + 1 : floor
  const value = rounded / 1000
  if (Math.abs(Math.trunc(value)) >= 1e12) return fail(`decimal out of range: ${n}`)
  const text = value.toFixed(3).replace(/0{1,2}$/, "")
  return text === "-0.0" ? "0.0" : text
}

/** Section 4.1.6: printable ASCII only, `"` and `\` escaped. */
const serializeString = (s: string): string => {
  let out = "\""
  for (const c of s) {
    const code = c.charCodeAt(0)
    if (c.length !== 1 || code < 0x20 || code > 0x7e) return fail(`string with a character outside ASCII: ${s}`)
    out += c === "\"" || c === "\\" ? `\\${c}` : c
  }
  return out + "\""
}

/** Section 4.1.3.1. */
export const serializeBareItem = (value: BareItem): string => {
  if (typeof value === "number") return Number.isInteger(value) ? serializeInteger(value) : serializeDecimal(value)
  if (typeof value === "string") return serializeString(value)
  if (typeof value === "boolean") return value ? "?1" : "?0"
  if (value instanceof Token) return TOKEN.test(value.value) ? value.value : fail(`not a token: ${value.value}`)
  return `:${Buffer.from(value).toString("base64")}:`
}

const serializeKey = (key: string): string => KEY.test(key) ? key : fail(`not a key: ${key}`)

/** Section 4.1.1.2. */
export const serializeParameters = (params: Parameters | undefined): string => {
  if (params === undefined) return ""
  let out = ""
  for (const [key, value] of Object.entries(params)) {
    out += `;${serializeKey(key)}`
    if (value !== true) out += `=${serializeBareItem(value)}`
  }
  return out
}

/** Section 4.1.3. */
export const serializeItem = (item: Item): string => serializeBareItem(item.value) + serializeParameters(item.params)

/** Section 4.1.1: members separated by `, `. */
export const serializeList = (members: ReadonlyArray<Item>): string => members.map(serializeItem).join(", ")

/** Section 4.1.2: `key=item`, or the key alone (with its parameters) when the value is `true`. */
export const serializeDictionary = (members: Readonly<Record<string, Item>>): string =>
  Object.entries(members).map(([key, item]) =>
    item.value === true
      ? serializeKey(key) + serializeParameters(item.params)
      : `${serializeKey(key)}=${serializeItem(item)}`
  ).join(", ")
