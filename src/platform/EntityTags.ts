/**
 * Entity tags and the lists `If-Match` and `If-None-Match` carry (RFC 9110 sections 8.8.3, 13.1.1
 * and 13.1.2), parsed in one place for conditional reads (Conditional.ts), the gzip
 * representation's tag (Compression.ts) and conditional writes (catalog/writes/Writes.ts):
 *
 *   entity-tag = [ weak ] opaque-tag        weak = %s"W/"  (case-sensitive)
 *   opaque-tag = DQUOTE *etagc DQUOTE       etagc = %x21 / %x23-7E / obs-text
 *   If-Match = "*" / #entity-tag            If-None-Match = "*" / #entity-tag
 *
 * A list (RFC 9110 section 5.6.1) separates members with commas and optional whitespace and may hold
 * empty members, which count for nothing. A comma inside the quotes belongs to the tag (`"a,b"` is
 * one tag), which is why a list is never split on commas.
 *
 * A malformed field value (a member that is not an entity-tag, `*` next to tags, an unterminated
 * quote) is treated as a whole as naming no tag: nothing matches it. Guessing at the tags of a value
 * the client got wrong is riskier than refusing it, and "matches nothing" is the safe answer both
 * ways: `If-Match` then fails (412, the write is not made) and `If-None-Match` then does not match
 * (the full answer is sent, never a 304 for something the client does not hold).
 */

export interface EntityTag {
  readonly weak: boolean
  /** The opaque-tag with its quotes (`"xyzzy"`). */
  readonly opaque: string
}

/** A parsed `If-Match` / `If-None-Match` value: `*`, or the tags listed (possibly none). */
export type EntityTagList =
  | { readonly _tag: "Any" }
  | { readonly _tag: "Tags"; readonly tags: ReadonlyArray<EntityTag> }

const isOws = (code: number) => code === 0x20 || code === 0x09

/** etagc: `!`, `#` to `~`, obs-text. */
const isEtagc = (code: number) => code === 0x21 || (code >= 0x23 && code <= 0x7e) || (code >= 0x80 && code <= 0xff)

/** Reads one entity-tag at `start`; answers it and the index after it, or undefined. */
const readTag = (value: string, start: number): { readonly tag: EntityTag; readonly end: number } | undefined => {
  let i = start
  const weak = value.startsWith("W/", i)
  if (weak) i += 2
  if (value.charCodeAt(i) !== 0x22) return undefined
  const open = i
  i++
  while (i < value.length && isEtagc(value.charCodeAt(i))) i++
  if (value.charCodeAt(i) !== 0x22) return undefined
  i++
  return { tag: { weak, opaque: value.slice(open, i) }, end: i }
}

/** One entity-tag, alone (an `ETag` field value); undefined when it is not one. */
export const parseEntityTag = (value: string): EntityTag | undefined => {
  const trimmed = value.trim()
  const read = readTag(trimmed, 0)
  return read !== undefined && read.end === trimmed.length ? read.tag : undefined
}

/**
 * An `If-Match` / `If-None-Match` field value; undefined when it is malformed (see the module
 * comment: such a value matches nothing).
 */
export const parseEntityTagList = (value: string): EntityTagList | undefined => {
  const trimmed = value.trim()
  if (trimmed === "*") return { _tag: "Any" }
  const tags: Array<EntityTag> = []
  let i = 0
  const skipOws = () => {
    while (i < trimmed.length && isOws(trimmed.charCodeAt(i))) i++
  }
  while (i < trimmed.length) {
    skipOws()
    if (trimmed.charCodeAt(i) === 0x2c) {
      // An empty member.
      i++
      continue
    }
    const read = readTag(trimmed, i)
    if (read === undefined) return undefined
    tags.push(read.tag)
    i = read.end
    skipOws()
    if (i < trimmed.length && trimmed.charCodeAt(i) !== 0x2c) return undefined
    i++
  }
  return { _tag: "Tags", tags }
}

/** Strong comparison (RFC 9110 section 8.8.3.2): neither tag is weak and the opaque-tags are equal. */
export const strongMatch = (a: EntityTag, b: EntityTag): boolean => !a.weak && !b.weak && a.opaque === b.opaque

/** Weak comparison (RFC 9110 section 8.8.3.2): the opaque-tags are equal, either tag may be weak. */
export const weakMatch = (a: EntityTag, b: EntityTag): boolean => a.opaque === b.opaque

/**
 * Whether a conditional header's value names any of `current` (the ETags of the representation
 * held, e.g. its identity and gzip tags) under `comparison`. `*` names any current representation.
 * An absent or malformed value names nothing.
 */
export const listMatches = (
  header: string | undefined,
  current: ReadonlyArray<string>,
  comparison: "strong" | "weak"
): boolean => {
  if (header === undefined) return false
  const list = parseEntityTagList(header)
  if (list === undefined) return false
  if (list._tag === "Any") return current.length > 0
  const compare = comparison === "strong" ? strongMatch : weakMatch
  const held = current.flatMap((etag) => {
    const tag = parseEntityTag(etag)
    return tag === undefined ? [] : [tag]
  })
  return list.tags.some((asked) => held.some((tag) => compare(asked, tag)))
}

/**
 * Whether a conditional header's value lists `etag` itself (weak comparison). `*` names no
 * particular tag, so it does not count here.
 */
export const namesTag = (header: string | undefined, etag: string): boolean =>
  header !== undefined && parseEntityTagList(header)?._tag === "Tags" && listMatches(header, [etag], "weak")

/**
 * `If-Match` (RFC 9110 section 13.1.1): true when the value is `*` or lists a tag strongly equal to
 * `current`.
 */
export const ifMatchPasses = (header: string, current: string): boolean => listMatches(header, [current], "strong")

/**
 * `If-None-Match` (RFC 9110 section 13.1.2): true when the value is `*` or lists a tag weakly equal to
 * one of `current`, i.e. the client holds the representation and the answer is 304.
 */
export const ifNoneMatchMatches = (header: string | undefined, current: ReadonlyArray<string>): boolean =>
  listMatches(header, current, "weak")
