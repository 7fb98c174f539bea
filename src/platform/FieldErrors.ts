/**
 * Turns Schema parse issues into field errors (docs/api-contract.md,
 * "Errors: catalog problem documents"): one entry per bad field, with the reason of the closed
 * registry and the params the reason carries (read from the failing refinement's JSON-Schema
 * annotation, so a `maxLength(512)` in a schema becomes `TOO_LONG {max_length: 512}`).
 */
import { ParseResult, SchemaAST } from "effect"
import * as Option from "effect/Option"
import { ProblemCodeAnnotationId } from "../../schema/Annotations.js"
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
    case "Refinement":
      return literalsOf(ast.from)
    case "Transformation":
      return literalsOf(ast.to)
    default:
      return undefined
  }
}

const fromRefinement = (ast: SchemaAST.Refinement): { reason: Reason; params?: Params } => {
  const json = Option.getOrUndefined(SchemaAST.getJSONSchemaAnnotation(ast)) as Record<string, unknown> | undefined
  if (json) {
    if (typeof json.maxLength === "number") return { reason: "TOO_LONG", params: { max_length: json.maxLength } }
    if (typeof json.minLength === "number") return { reason: "TOO_SHORT", params: { min_length: json.minLength } }
    if (typeof json.maxItems === "number") return { reason: "TOO_MANY_ITEMS", params: { max_items: json.maxItems } }
    if (typeof json.minItems === "number") return { reason: "TOO_FEW_ITEMS", params: { min_items: json.minItems } }
    const min = json.minimum ?? json.exclusiveMinimum
    const max = json.maximum ?? json.exclusiveMaximum
    if (typeof min === "number" || typeof max === "number") {
      return {
        reason: "OUT_OF_RANGE",
        params: {
          ...(typeof min === "number" ? { minimum: min } : {}),
          ...(typeof max === "number" ? { maximum: max } : {})
        }
      }
    }
  }
  return { reason: "INVALID_FORMAT" }
}

const codeAnnotation = (ast: SchemaAST.AST): ProblemCode | undefined =>
  ast.annotations[ProblemCodeAnnotationId] as ProblemCode | undefined

export const collectFieldErrors = (
  issue: ParseResult.ParseIssue,
  location: Location,
  out: Collected,
  basePath: ReadonlyArray<PropertyKey> = []
): void => {
  const push = (path: ReadonlyArray<PropertyKey>, reason: Reason, params?: Params, ast?: SchemaAST.AST) => {
    if (ast && out.code === undefined) out.code = codeAnnotation(ast)
    const name = location === "pointer"
      ? "/" + path.map((p) => String(p).replaceAll("~", "~0").replaceAll("/", "~1")).join("/")
      : String(path[0] ?? "")
    if (location !== "pointer" && name === "") return
    const subject = location === "pointer" ? `\`${name}\`` : `\`${name}\``
    out.errors.push({
      reason,
      detail: `${subject} ${describe(reason, params)}.`,
      [location]: name,
      ...(params !== undefined ? { params } : {})
    } as FieldError)
  }
  const walk = (issue: ParseResult.ParseIssue, path: ReadonlyArray<PropertyKey>): void => {
    switch (issue._tag) {
      case "Pointer":
        return walk(issue.issue, [...path, ...(Array.isArray(issue.path) ? issue.path : [issue.path as PropertyKey])])
      case "Composite": {
        const inner: ReadonlyArray<ParseResult.ParseIssue> = Array.isArray(issue.issues)
          ? issue.issues
          : [issue.issues as ParseResult.ParseIssue]
        if (issue.ast._tag !== "Union") {
          for (const i of inner) walk(i, path)
          return
        }
        // A union reports one issue per member. A member that matched the value's type and then
        // failed deeper (a refinement, a nested field) is the one to report; when every member
        // merely had another type, the value gets one entry for the whole union.
        const deep = inner.filter((i) => i._tag !== "Type")
        if (deep.length > 0) {
          for (const i of deep) walk(i, path)
          return
        }
        const members = issue.ast.types.filter((t) => t._tag !== "UndefinedKeyword")
        const perMember = members.map(literalsOf)
        const allowed = perMember.every((l) => l !== undefined) ? perMember.flatMap((l) => l!) : undefined
        if (allowed !== undefined) return push(path, "UNKNOWN_VALUE", { allowed }, issue.ast)
        return push(path, "INVALID_FORMAT", undefined, issue.ast)
      }
      case "Refinement": {
        if (issue.kind === "From") return walk(issue.issue, path)
        const { params, reason } = fromRefinement(issue.ast)
        return push(path, reason, params, issue.ast)
      }
      case "Transformation":
        if (issue.kind === "Transformation") {
          return push(path, "INVALID_FORMAT", undefined, issue.ast)
        }
        return walk(issue.issue, path)
      case "Missing":
        return push(path, "REQUIRED", undefined, issue.ast as unknown as SchemaAST.AST)
      case "Unexpected":
        return push(path, "NOT_ALLOWED_VALUE")
      case "Forbidden":
        return push(path, "INVALID_FORMAT", undefined, issue.ast)
      case "Type": {
        const allowed = literalsOf(issue.ast)
        if (allowed !== undefined) return push(path, "UNKNOWN_VALUE", { allowed }, issue.ast)
        return push(path, "INVALID_FORMAT", undefined, issue.ast)
      }
    }
  }
  walk(issue, basePath)
}
