/**
 * Text the database can store, and names that show something. Every text field of every request
 * schema of both interfaces carries `isStorable` (test/platform/StorableText.test.ts walks them all),
 * so a value PostgreSQL would refuse is refused where the route refuses any bad field (422 in the
 * catalog, the route's own error style in the identity server) and never becomes a 500:
 *
 * - U+0000: PostgreSQL `text` cannot hold it, and `jsonb` refuses its `\u0000` escape.
 * - A UTF-16 surrogate without its pair (`"\ud800"`, also in the middle of a string): not a Unicode
 *   scalar value, so it has no UTF-8 form (RFC 3629 section 3); `jsonb` refuses its escape and a text
 *   parameter would silently store U+FFFD instead.
 *
 * The test is a `u`-mode regular expression: there a pair is one code point, so the surrogate range
 * matches only a surrogate without its pair. It has no JSON Schema form (a `pattern` read without
 * the `u` flag would refuse every character outside the BMP), so the OpenAPI document does not show it.
 * The checks here say so (`toJsonSchema` adds nothing): a filter without that would take the
 * description of the schema it ends with out of the document along with itself.
 */
import { Schema } from "effect"

const undocumented = { toJsonSchema: () => ({}) }

const unstorable = /[\u0000\ud800-\udfff]/u

/** True when PostgreSQL can store `text` as it is. */
export const isStorableString = (text: string): boolean => !unstorable.test(text)

/** The storable-text check. */
export const isStorable = Schema.makeFilter((text: string) => isStorableString(text), {
  ...undocumented,
  expected: "text without NUL (U+0000) or an unpaired UTF-16 surrogate",
  message: "must not contain NUL (U+0000) or an unpaired UTF-16 surrogate"
})

/**
 * True when every string in a JSON value, object keys included and at any depth, is storable. The
 * walk keeps its own stack: a body nested thousands deep must be refused, not overflow the call stack.
 */
export const isStorableJsonValue = (value: unknown): boolean => {
  const pending: Array<unknown> = [value]
  while (pending.length > 0) {
    const next = pending.pop()
    if (typeof next === "string") {
      if (!isStorableString(next)) return false
    } else if (Array.isArray(next)) {
      // One by one: spreading a long array into `push` would overflow the call stack just the same.
      for (const item of next) pending.push(item)
    } else if (typeof next === "object" && next !== null) {
      for (const [key, inner] of Object.entries(next)) {
        if (!isStorableString(key)) return false
        pending.push(inner)
      }
    }
  }
  return true
}

/** The storable-text check of a JSON value of any shape (a `field_values` entry). */
export const isStorableJson = Schema.makeFilter((value: unknown) => isStorableJsonValue(value), {
  ...undocumented,
  expected: "a value whose texts have no NUL (U+0000) or unpaired UTF-16 surrogate",
  message: "must not contain NUL (U+0000) or an unpaired UTF-16 surrogate in any text"
})

/** Any string PostgreSQL can store. */
export const StorableText = Schema.String.check(isStorable)

/** Whitespace (`\s`, which includes U+FEFF) and the zero-width characters U+200B..U+200D and U+2060. */
const blank = /^[\s\u200b-\u200d\u2060\ufeff]*$/u

/** True when `name` shows nothing: only whitespace or zero-width characters (or nothing at all). */
export const isBlankName = (name: string): boolean => blank.test(name)

/**
 * A name must show something. The empty string passes this check: the schema's minimum length
 * refuses it (`TOO_SHORT`), so an empty name is not reported twice.
 */
export const isNotBlank = Schema.makeFilter((name: string) => name === "" || !isBlankName(name), {
  ...undocumented,
  expected: "a name with at least one visible character",
  message: "must contain a visible character, not only whitespace or zero-width characters"
})
