/**
 * Turns Schema parse issues into field errors (docs/api-contract.md,
 * "Errors: catalog problem documents"): one entry per bad field, with the reason of the closed
 * registry and the params the reason carries (read from the failing check's own
 * description of itself, so an `isMaxLength(512)` in a schema becomes `TOO_LONG {max_length: 512}`).
 */
import type { SchemaAST, SchemaIssue } from "effect"
import { ProblemCodeAnnotationId, ReasonAnnotationId } from "../../schema/Annotations.js"
import type { FieldError, ProblemCode, Reason } from "../../schema/Problem.js"

export type Location = "pointer" | "parameter" | "header"

export interface Collected {
  readonly errors: Array<FieldError>
  /** A more specific top-level code asked for by a failing schema (e.g. LIMIT_TOO_LARGE). */
  code: ProblemCode | undefined
}

type Params = NonNullable<FieldError["params"]>

const describe = (reason: Reason, params: Params | undefined): string => {
  switch (reason) {
    case "REQUIRED":
      return "is required"
    case "TOO_LONG":
      return params?.max_length !== undefined ? `must be at most ${params.max_length} characters long` : "is too long"
    case "TOO_SHORT":
      return params?.min_length !== undefined ? `must be at least ${params.min_length} characters long` : "is too short"
    case "OUT_OF_RANGE":
      if (params?.minimum !== undefined && params.maximum !== undefined) {
        return `must be between ${params.minimum} and ${params.maximum}`
      }
      if (params?.minimum !== undefined) return `must be at least ${params.minimum}`
      if (params?.maximum !== undefined) return `must be at most ${params.maximum}`
      return "is out of range"
    case "TOO_MANY_ITEMS":
      return params?.max_items !== undefined ? `must have at most ${params.max_items} items` : "has too many items"
    case "TOO_FEW_ITEMS":
      return params?.min_items !== undefined ? `must have at least ${params.min_items} items` : "has too few items"
    case "UNKNOWN_VALUE":
      return params?.allowed !== undefined ? `must be one of: ${params.allowed.join(", ")}` : "is not a known value"
    case "DUPLICATE_ITEM":
      return "repeats an item"
    case "NOT_ALLOWED_VALUE":
      return "is not allowed here"
    case "UNKNOWN_REFERENCE":
      return "refers to something that does not exist"
    case "IMMUTABLE":
      return "cannot be changed"
    case "INCONSISTENT_WITH":
      return "contradicts another field"
    case "NOT_PERMITTED":
      return "may not be set by this caller"
    case "INVALID_FORMAT":
      return "has an invalid format"
  }
}

const literalsOf = (ast: SchemaAST.AST): Array<string> | undefined => {
  switch (ast._tag) {
    case "Literal":
      return [String(ast.literal)]
    case "Union": {
      const out: Array<string> = []
      for (const member of ast.types) {
        const inner = literalsOf(member)
        if (inner === undefined) return undefined
        out.push(...inner)
      }
      return out
    }
    default:
      return undefined
  }
}

/** The member names an object schema declares; undefined for anything else (a tuple, a bare record). */
const memberNames = (ast: SchemaAST.AST): Array<string> | undefined =>
  ast._tag === "Objects" && ast.propertySignatures.length > 0
    ? ast.propertySignatures.map((p) => String(p.name))
    : undefined

/** The value a failing check saw, when the schema was run with `reportInput` (the problem middleware does). */
const inputOf = (issue: SchemaIssue.Issue): unknown => "input" in issue ? issue.input : undefined

const numberOf = (u: unknown): number | undefined =>
  typeof u === "number"
    ? u
    : typeof u === "string" && u.trim() !== "" && !Number.isNaN(Number(u))
    ? Number(u)
    : undefined

/**
 * The reason and params of a failing check, from the check's own description of itself (its
 * `representation`: which built-in filter, with which numbers). Lengths are characters for a string
 * and items for an array, so the value decides which.
 */
const fromFilter = (filter: SchemaAST.Filter<unknown>, input: unknown): { reason: Reason; params?: Params } => {
  // A check of our own names its reason (schema/Catalog/Fields.ts, `ReasonAnnotationId`).
  const named = (filter.annotations as Record<string, unknown> | undefined)?.[ReasonAnnotationId]
  if (typeof named === "string") return { reason: named as Reason }
  const representation = filter.annotations?.representation as
    | { readonly id?: string; readonly payload?: Record<string, unknown> }
    | undefined
  const payload = representation?.payload ?? {}
  const items = Array.isArray(input)
  const length = (key: "maxLength" | "minLength") => numberOf(payload[key])
  switch (representation?.id) {
    case "effect/schema/isUnique":
      return { reason: "DUPLICATE_ITEM" }
    case "effect/schema/isMaxLength": {
      const n = length("maxLength")
      if (n === undefined) break
      return items
        ? { reason: "TOO_MANY_ITEMS", params: { max_items: n } }
        : { reason: "TOO_LONG", params: { max_length: n } }
    }
    case "effect/schema/isMinLength": {
      const n = length("minLength")
      if (n === undefined) break
      return items
        ? { reason: "TOO_FEW_ITEMS", params: { min_items: n } }
        : { reason: "TOO_SHORT", params: { min_length: n } }
    }
    case "effect/schema/isBetweenLength": {
      const max = numberOf(payload.maximum)
      const min = numberOf(payload.minimum)
      const size = items || typeof input === "string" ? (input as { length: number }).length : undefined
      if (max !== undefined && (size === undefined || size > max)) {
        return items
          ? { reason: "TOO_MANY_ITEMS", params: { max_items: max } }
          : { reason: "TOO_LONG", params: { max_length: max } }
      }
      if (min !== undefined) {
        return items
          ? { reason: "TOO_FEW_ITEMS", params: { min_items: min } }
          : { reason: "TOO_SHORT", params: { min_length: min } }
      }
      break
    }
    case "effect/schema/isGreaterThan":
    case "effect/schema/isGreaterThanOrEqualTo":
    case "effect/schema/isLessThan":
    case "effect/schema/isLessThanOrEqualTo":
    case "effect/schema/isBetween": {
      const min = numberOf(payload.minimum ?? payload.exclusiveMinimum)
      const max = numberOf(payload.maximum ?? payload.exclusiveMaximum)
      if (min === undefined && max === undefined) break
      return {
        reason: "OUT_OF_RANGE",
        params: { ...(min !== undefined ? { minimum: min } : {}), ...(max !== undefined ? { maximum: max } : {}) }
      }
    }
  }
  return { reason: "INVALID_FORMAT" }
}

const codeAnnotation = (annotations: object | undefined): ProblemCode | undefined =>
  annotations === undefined
    ? undefined
    : (annotations as Record<PropertyKey, unknown>)[ProblemCodeAnnotationId] as ProblemCode | undefined

export const collectFieldErrors = (
  issue: SchemaIssue.Issue,
  location: Location,
  out: Collected,
  basePath: ReadonlyArray<PropertyKey> = []
): void => {
  const push = (
    path: ReadonlyArray<PropertyKey>,
    reason: Reason,
    params?: Params,
    annotations?: object,
    says?: string
  ) => {
    if (out.code === undefined) out.code = codeAnnotation(annotations)
    const name = location === "pointer"
      ? "/" + path.map((p) => String(p).replaceAll("~", "~0").replaceAll("/", "~1")).join("/")
      : String(path[0] ?? "")
    if (location !== "pointer" && name === "") return
    // Two checks of one value that fail alike (a hash's pattern and its length) are one entry.
    const same = (e: FieldError) =>
      e.reason === reason && (e as Record<string, unknown>)[location] === name &&
      JSON.stringify(e.params) === JSON.stringify(params)
    if (out.errors.some(same)) return
    out.errors.push({
      reason,
      detail: `\`${name}\` ${says ?? describe(reason, params)}.`,
      [location]: name,
      ...(params !== undefined ? { params } : {})
    } as FieldError)
  }
  const walk = (issue: SchemaIssue.Issue, path: ReadonlyArray<PropertyKey>): void => {
    switch (issue._tag) {
      case "Pointer":
        return walk(issue.issue, [...path, ...issue.path])
      case "Composite":
        for (const inner of issue.issues) walk(inner, path)
        return
      case "Encoding":
        // A transformation refused the value (a number that is not one, a malformed list): the
        // inner issue says how; a leaf there means the value's format is wrong.
        return walk(issue.issue, path)
      case "AnyOf": {
        // A union reports one issue per member. A member that matched the value's type and then
        // failed deeper (a check, a nested field) is the one to report; when every member
        // merely had another type, the value gets one entry for the whole union.
        const deep = issue.issues.filter((i) => i._tag !== "InvalidType")
        if (deep.length > 0) {
          for (const i of deep) walk(i, path)
          return
        }
        const members = issue.ast.types.filter((t) => t._tag !== "Undefined")
        const perMember = members.map(literalsOf)
        const allowed = perMember.every((l) => l !== undefined) ? perMember.flatMap((l) => l!) : undefined
        if (allowed !== undefined) return push(path, "UNKNOWN_VALUE", { allowed }, issue.ast.annotations)
        return push(path, "INVALID_FORMAT", undefined, issue.ast.annotations)
      }
      case "Filter": {
        const { params, reason } = fromFilter(issue.filter, inputOf(issue) ?? inputOf(issue.issue))
        return push(path, reason, params, issue.filter.annotations)
      }
      case "MissingKey":
        return push(path, "REQUIRED", undefined, issue.annotations)
      case "UnexpectedKey": {
        // A member the object's schema does not name (a body decoded with `onExcessProperty:
        // "error"`): the name is the unknown value, the names the object has are the vocabulary.
        const allowed = memberNames(issue.ast)
        return allowed === undefined
          ? push(path, "UNKNOWN_VALUE", undefined, undefined, "is not a known member")
          : push(path, "UNKNOWN_VALUE", { allowed }, undefined, `is not a known member; known: ${allowed.join(", ")}`)
      }
      case "InvalidType": {
        const allowed = literalsOf(issue.ast)
        if (allowed !== undefined) return push(path, "UNKNOWN_VALUE", { allowed }, issue.ast.annotations)
        return push(path, "INVALID_FORMAT", undefined, issue.ast.annotations)
      }
      case "InvalidValue":
      case "Forbidden":
        return push(path, "INVALID_FORMAT", undefined, issue.annotations)
      case "OneOf":
        return push(path, "INVALID_FORMAT", undefined, issue.ast.annotations)
    }
  }
  walk(issue, basePath)
}
