/**
 * Query parameters every collection shares (docs/api-contract.md, "Cursors and pages"), with the
 * problem code each one's failure maps to. One definition, used by every list endpoint.
 */
import { Schema, SchemaTransformation } from "effect"
import { problemCodeOnFailure } from "../Annotations.js"

// A query parameter is documented by its encoded side, the string (`Schema.annotateEncoded`); the
// description stays on the number too.
const limitDescription = "Page size, 1..100 (default 20). Above 100 is `LIMIT_TOO_LARGE`; never clamped."

/** `limit`: 1..100, default 20; above 100 is 400 LIMIT_TOO_LARGE, never clamped (rule 1). */
export const Limit = Schema.NumberFromString.check(
  Schema.isInt(),
  Schema.isGreaterThanOrEqualTo(1),
  Schema.isLessThanOrEqualTo(100, problemCodeOnFailure("LIMIT_TOO_LARGE"))
).annotate({ description: limitDescription }).pipe(Schema.annotateEncoded({ description: limitDescription }))

export const DEFAULT_LIMIT = 20
export const MAX_DEPTH = 10_000

/** `cursor`: the opaque `next_cursor` of the previous page, passed back unchanged (rule 8). */
export const CursorParam = Schema.String.check(
  Schema.isMaxLength(512, problemCodeOnFailure("INVALID_CURSOR")),
  Schema.isPattern(/^cur_[A-Za-z0-9._~-]+$/u, problemCodeOnFailure("INVALID_CURSOR"))
).annotate({
  description: "The `next_cursor` of the previous page, unchanged. A malformed, forged or foreign cursor is " +
    "`INVALID_CURSOR`."
})

const pageDescription = "Page mode: 1-based page. `page * limit` may not exceed 10000."

/** `page`: 1-based page number of page mode (rule 7). */
export const Page = Schema.NumberFromString.check(Schema.isInt(), Schema.isGreaterThanOrEqualTo(1))
  .annotate({ description: pageDescription })
  .pipe(Schema.annotateEncoded({ description: pageDescription }))

export const BooleanParam = Schema.Literals(["true", "false"]).pipe(
  Schema.decodeTo(
    Schema.Boolean,
    SchemaTransformation.transform({
      decode: (s) => s === "true",
      encode: (b) => (b ? "true" : "false")
    })
  )
)

/**
 * A comma-separated string, decoded to its items (`a,b` -> `["a", "b"]`, `""` -> `[""]`). A query
 * parameter is documented by its encoded side, so the lists below are described there
 * (`Schema.annotateEncoded`; a plain `annotate` would describe the decoded array).
 */
const CommaSeparated = Schema.String.pipe(
  Schema.decodeTo(
    Schema.Array(Schema.String),
    SchemaTransformation.transform({
      decode: (s): ReadonlyArray<string> => s.split(","),
      encode: (items) => items.join(",")
    })
  )
)

/**
 * A comma-separated list of tokens from a closed set, e.g. `include=titles,covers`. An unknown
 * token fails with `code` (UNKNOWN_INCLUDE, UNKNOWN_FACET...) and `UNKNOWN_VALUE` with `allowed`.
 */
export const tokenList = <const T extends ReadonlyArray<string>>(
  tokens: T,
  code: "UNKNOWN_INCLUDE" | "UNKNOWN_FACET",
  description: string
) =>
  CommaSeparated.pipe(
    Schema.decodeTo(Schema.Array(Schema.Literals(tokens).annotate(problemCodeOnFailure(code)))),
    Schema.annotateEncoded({ description: `${description} Comma-separated; one of: ${tokens.join(", ")}.` })
  )

/** A closed choice, e.g. `sort=`; an unknown value fails with `code` (UNKNOWN_SORT). */
export const choice = <const T extends ReadonlyArray<string>>(values: T, code: "UNKNOWN_SORT", description: string) =>
  Schema.Literals(values).annotate({ ...problemCodeOnFailure(code), description })

/** `ids=`: at most 100 comma-separated ids (rule 6); more is TOO_MANY_IDS. */
export const IdList = CommaSeparated.pipe(
  Schema.decodeTo(
    Schema.Array(Schema.String.check(Schema.isPattern(/^[0-9]{1,20}$/u))).check(
      Schema.isMinLength(1),
      Schema.isMaxLength(100, problemCodeOnFailure("TOO_MANY_IDS"))
    )
  ),
  Schema.annotateEncoded({ description: "Batch lane: up to 100 comma-separated ids." })
)
