/**
 * The text of the title search (docs/decisions.md, "Search and facets"), shared by whoever writes
 * `work_search` (the seed, the write side) and the search query, so both spell it the same way.
 *
 * pg_trgm only indexes characters the database's ctype calls alphanumeric: under the `C` locale that
 * is ASCII alone, so Japanese, Chinese and Korean titles would not be indexed at all, and even under a
 * UTF-8 locale a two-character CJK query has no trigram of its own. So the indexed `key` re-spells
 * the text: ASCII words stay as they are, and every other character becomes its own base-36 token
 * of 3 characters (CJK, kana, Hangul) or 4 (anything else). A one-character CJK query then has four
 * padded trigrams and can use the GIN index under any locale. `norm` is the folded text itself; the
 * query checks it with `strpos` to drop the rare false positives of the re-spelling.
 */

const CJK_BASE = 0x2e80
const CJK_SPAN = 36 ** 3

const nonWord = /[^\p{L}\p{N}\p{M}]+/gu
const asciiNonWord = /[^a-z0-9]+/g
// A separator survives only between two ASCII letters or digits.
const droppedSpace = /(?<![a-z0-9]) | (?![a-z0-9])/g
const needsDiacriticStrip = /[\u00c0-\u024f\u1e00-\u1eff]/

/**
 * Folds a name for matching: NFKC (full-width to ASCII, half-width kana to full-width), lower case,
 * Latin diacritics removed, and separators dropped except one space between two ASCII letters or
 * digits (so `ラブ・コメ` and `ラブコメ` fold alike while `fate/stay` stays two words).
 */
export const foldText = (text: string): string => {
  let base = text.toLowerCase()
  if (/^[\x00-\x7f]*$/.test(base)) return base.replace(asciiNonWord, " ").trim()
  base = base.normalize("NFKC").toLowerCase()
  if (needsDiacriticStrip.test(base)) base = base.normalize("NFD").replace(/[\u0300-\u036f]/g, "").normalize("NFC")
  return base.replace(nonWord, " ").trim().replace(droppedSpace, "")
}

const token = (char: string): string => {
  const code = char.codePointAt(0)!
  if (code < 128) return char
  if (code >= CJK_BASE && code < CJK_BASE + CJK_SPAN) return (code - CJK_BASE).toString(36).padStart(3, "0")
  return code.toString(36).padStart(4, "0")
}

/** Splits folded text into tokens: ASCII words, and one token per other character. */
const tokens = (folded: string): Array<{ readonly text: string; readonly ascii: boolean }> => {
  const out: Array<{ text: string; ascii: boolean }> = []
  let word = ""
  for (const char of folded) {
    const code = char.codePointAt(0)!
    if (code < 128 && code !== 32) {
      word += char
      continue
    }
    if (word) out.push({ text: word, ascii: true })
    word = ""
    if (code !== 32) out.push({ text: token(char), ascii: false })
  }
  if (word) out.push({ text: word, ascii: true })
  return out
}

/** The `work_search` row for a work's names (every title, romanization and alias). */
export const searchDocument = (names: ReadonlyArray<string>): { readonly norm: string; readonly key: string } => {
  const folded: Array<string> = []
  const keys: Array<string> = []
  for (const name of names) {
    const f = foldText(name)
    if (!f || folded.includes(f)) continue
    folded.push(f)
    keys.push(" " + tokens(f).map((t) => t.text).join(" ") + " ")
  }
  return { norm: folded.join("\n"), key: keys.join("|") }
}

/**
 * The query side: `needle` for `strpos(norm, needle) > 0` and `pattern` for `key LIKE pattern` (it
 * contains only `[a-z0-9 %]`, so it needs no escaping). None when the query folds to nothing.
 */
export const searchQuery = (q: string): { readonly needle: string; readonly pattern: string } | undefined => {
  const needle = foldText(q)
  const parts = tokens(needle)
  if (parts.length === 0) return undefined
  const first = parts[0]
  const last = parts[parts.length - 1]
  const body = parts.map((t) => t.text).join(" ")
  return { needle, pattern: `%${first.ascii ? "" : " "}${body}${last.ascii ? "" : " "}%` }
}

/**
 * The query side as the index likes it best: the tokens joined by `%` (`%0gh%0h8%paretto%`). Between
 * two `%` a token has no word padding, so pg_trgm looks up only its inner trigrams and not the padded
 * ones shared by every token of a script (`  0`), which makes the GIN scan several times cheaper for
 * Japanese, Chinese and Korean queries. The pattern is looser than the query (tokens in order, anything
 * between); `strpos(norm, needle) > 0` decides. None when the query folds to nothing.
 */
export const searchPattern = (q: string): { readonly needle: string; readonly pattern: string } | undefined => {
  const needle = foldText(q)
  const parts = tokens(needle)
  if (parts.length === 0) return undefined
  return { needle, pattern: `%${parts.map((t) => t.text).join("%")}%` }
}
