/**
 * The answers a route declares, read from its HttpApi declaration (`HttpApi.reflect`, as
 * src/platform/RouteTable.ts reads it), and the check of a real answer against them: its status is
 * declared, its body decodes with the schema declared for that status, an object member the schema
 * does not name is an error (the documents' `additionalProperties: false`), and the body is what the
 * schema writes for the decoded value (docs/api-contract.md, "Records and lists").
 */
import { Cause, Exit, Schema, SchemaAST } from "effect"
import type { HttpApiGroup } from "effect/http-api"
import { HttpApi, HttpApiSchema, OpenApi } from "effect/http-api"

// ---------------------------------------------------------------------------------------------
// Declared answers
// ---------------------------------------------------------------------------------------------

/** How a declared answer goes on the wire. */
export type Body =
  | { readonly _tag: "Json"; readonly contentType: string }
  | { readonly _tag: "Text"; readonly contentType: string }
  | { readonly _tag: "Bytes"; readonly contentType: string }
  | { readonly _tag: "None" }

export interface Declared {
  /** The schema as the endpoint declares it (what the platform encodes a value with). */
  readonly schema: Schema.Top
  readonly body: Body
  readonly identifier: string
}

export interface ContractRoute {
  /** `group.endpoint`, the key of the tests' request tables. */
  readonly key: string
  readonly method: string
  readonly path: string
  readonly successes: ReadonlyMap<number, ReadonlyArray<Declared>>
  readonly errors: ReadonlyMap<number, ReadonlyArray<Declared>>
  /** The statuses the OpenAPI document lists for the operation. */
  readonly documented: ReadonlySet<number>
}

const resolveEncoding = SchemaAST.resolveAt<{ readonly _tag: string; readonly contentType: string }>(
  "~httpApiEncoding"
)

const isNoBody = (ast: SchemaAST.AST) =>
  SchemaAST.isVoid(ast) || SchemaAST.isVoid(SchemaAST.toEncoded(ast)) ||
  (ast.encoding !== undefined && SchemaAST.isVoid(ast.encoding[0].to))

const declared = (schema: Schema.Top): Declared => {
  const inner: Schema.Top = HttpApiSchema.isWithHeaders(schema) ? (schema as any).schema : schema
  const encoding = resolveEncoding(schema.ast) ?? resolveEncoding(inner.ast) ??
    { _tag: "Json", contentType: "application/json" }
  const identifier = SchemaAST.resolveIdentifier(inner.ast) ?? inner.ast._tag
  if (isNoBody(inner.ast)) return { schema: inner, body: { _tag: "None" }, identifier }
  const body: Body = encoding._tag === "Json"
    ? { _tag: "Json", contentType: encoding.contentType }
    : encoding._tag === "Text"
    ? { _tag: "Text", contentType: encoding.contentType }
    : { _tag: "Bytes", contentType: encoding.contentType }
  return { schema: inner, body, identifier }
}

/** Every endpoint of `api`, with the answers it declares and the statuses its document lists. */
export const contractRoutes = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>
): ReadonlyArray<ContractRoute> => {
  const spec: any = OpenApi.fromApi(api)
  const routes: Array<ContractRoute> = []
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint, errors, group, successes }) => {
      const toMap = (m: ReadonlyMap<number, ReadonlyArray<Schema.Top>>) =>
        new Map([...m].map(([status, schemas]) => [status, schemas.map(declared)] as const))
      const operation = spec.paths[endpoint.path.replace(/:(\w+)\??/g, "{$1}")]?.[endpoint.method.toLowerCase()]
      routes.push({
        key: `${group.identifier}.${endpoint.identifier}`,
        method: endpoint.method,
        path: endpoint.path,
        successes: toMap(successes),
        errors: toMap(errors),
        documented: new Set(Object.keys(operation?.responses ?? {}).map(Number))
      })
    }
  })
  return routes
}

// ---------------------------------------------------------------------------------------------
// Answers
// ---------------------------------------------------------------------------------------------

export interface ContractRequest {
  readonly method: string
  /** Path and query, percent-encoded. */
  readonly path: string
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string | FormData | Uint8Array
}

export interface ContractAnswer {
  readonly status: number
  readonly headers: Headers
  readonly bytes: Uint8Array
  readonly text: string
}

/** Sends a request as it is, never following a redirect. */
export const send = async (base: string, request: ContractRequest): Promise<ContractAnswer> => {
  const res = await fetch(`${base}${request.path}`, {
    method: request.method,
    redirect: "manual",
    headers: { ...request.headers },
    ...(request.body === undefined ? {} : { body: request.body as any })
  })
  const bytes = new Uint8Array(await res.arrayBuffer())
  return { status: res.status, headers: res.headers, bytes, text: new TextDecoder().decode(bytes) }
}

const mediaType = (value: string | null) => (value ?? "").split(";")[0]!.trim().toLowerCase()

/** Parse options of the check: an undeclared member fails, and every failure is reported. */
const strict = { onExcessProperty: "error", errors: "all" } as const

/** How the body compares with what the schema writes for the decoded value. */
export type Canonical =
  /** Byte for byte what `JSON.stringify(Schema.encodeSync(schema)(decoded))` writes. */
  | { readonly _tag: "Bytes" }
  /**
   * The same JSON value, written otherwise: `spacing` (the members in the schema's order, other
   * whitespace) or `order` (the members in another order).
   */
  | {
    readonly _tag: "Structure"
    readonly expected: string
    readonly how: "spacing" | "order"
    /** The body without its whitespace. */
    readonly compact: string
  }
  /** Another JSON value: the schema would write something else. */
  | { readonly _tag: "Differs"; readonly expected: string }
  /** Not JSON, or no body. */
  | { readonly _tag: "NotJson" }

export interface Verdict {
  /** What is wrong with the answer against the declaration (empty: nothing). */
  readonly mismatches: ReadonlyArray<string>
  /** Whether the status is one of the route's successes. */
  readonly success: boolean
  readonly canonical: Canonical
  /** The declared schema the body decoded with. */
  readonly matched: string | undefined
}

const clip = (s: string, n = 400) => (s.length > n ? `${s.slice(0, n)}... (${s.length} chars)` : s)

const sameJson = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  const ka = Object.keys(a)
  const kb = Object.keys(b)
  if (ka.length !== kb.length) return false
  return ka.every((k) => Object.prototype.hasOwnProperty.call(b, k) && sameJson((a as any)[k], (b as any)[k]))
}

/**
 * Checks `answer` against what `route` declares for its status. `extra` holds schemas a status is
 * documented with outside the declaration (the identity document's 415, added by its transform).
 */
export const check = (
  route: ContractRoute,
  answer: ContractAnswer,
  extra: ReadonlyMap<number, ReadonlyArray<Declared>> = new Map()
): Verdict => {
  const success = route.successes.has(answer.status)
  const candidates = route.successes.get(answer.status) ?? route.errors.get(answer.status) ??
    (route.documented.has(answer.status) ? extra.get(answer.status) : undefined)
  const contentType = answer.headers.get("content-type")
  const notJson: Canonical = { _tag: "NotJson" }
  if (candidates === undefined || candidates.length === 0) {
    return {
      mismatches: [
        `status ${answer.status} is not declared (${contentType ?? "no content type"}: ${clip(answer.text)})`
      ],
      success,
      canonical: notJson,
      matched: undefined
    }
  }
  if (!route.documented.has(answer.status)) {
    return {
      mismatches: [`status ${answer.status} is declared, but the OpenAPI document does not list it`],
      success,
      canonical: notJson,
      matched: undefined
    }
  }
  const failures: Array<string> = []
  for (const candidate of candidates) {
    const { body } = candidate
    switch (body._tag) {
      case "None": {
        // No body (304, a redirect): none is sent, and a redirect names where to go (RFC 9110 section 15.4).
        const problems: Array<string> = []
        if (answer.bytes.length > 0) problems.push(`a body where none is declared: ${clip(answer.text)}`)
        if (answer.status >= 300 && answer.status < 400 && answer.status !== 304 && !answer.headers.get("location")) {
          problems.push("a redirect without Location")
        }
        if (problems.length === 0) return { mismatches: [], success, canonical: notJson, matched: candidate.identifier }
        failures.push(`${candidate.identifier}: ${problems.join("; ")}`)
        continue
      }
      case "Text":
      case "Bytes": {
        if (mediaType(contentType) !== body.contentType) {
          failures.push(`${candidate.identifier}: content type ${contentType}, declared ${body.contentType}`)
          continue
        }
        if (body._tag === "Bytes" && answer.bytes.length === 0) {
          failures.push(`${candidate.identifier}: an empty ${body.contentType} body`)
          continue
        }
        return { mismatches: [], success, canonical: notJson, matched: candidate.identifier }
      }
      case "Json": {
        if (mediaType(contentType) !== body.contentType) {
          failures.push(`${candidate.identifier}: content type ${contentType}, declared ${body.contentType}`)
          continue
        }
        let parsed: unknown
        try {
          parsed = JSON.parse(answer.text)
        } catch {
          failures.push(`${candidate.identifier}: not JSON: ${clip(answer.text)}`)
          continue
        }
        const exit = Schema.decodeUnknownExit(candidate.schema as Schema.Codec<unknown, unknown>, strict)(parsed)
        if (Exit.isFailure(exit)) {
          failures.push(`${candidate.identifier}: ${Cause.pretty(exit.cause)}`)
          continue
        }
        let expected: string
        try {
          expected = JSON.stringify(
            Schema.encodeUnknownSync(candidate.schema as Schema.Codec<unknown, unknown>)(exit.value)
          )
        } catch (error) {
          failures.push(`${candidate.identifier}: decoded, but does not encode back: ${String(error)}`)
          continue
        }
        const canonical: Canonical = expected === answer.text
          ? { _tag: "Bytes" }
          : sameJson(JSON.parse(expected), parsed)
          ? {
            _tag: "Structure",
            expected,
            how: JSON.stringify(parsed) === expected ? "spacing" : "order",
            compact: JSON.stringify(parsed)
          }
          : { _tag: "Differs", expected }
        return { mismatches: [], success, canonical, matched: candidate.identifier }
      }
    }
  }
  return {
    mismatches: [`status ${answer.status}: the body decodes with none of its declared schemas\n${failures.join("\n")}`],
    success,
    canonical: notJson,
    matched: undefined
  }
}

/** The first place two JSON texts differ, for a report. */
export const firstDifference = (a: string, b: string): string => {
  let i = 0
  while (i < a.length && i < b.length && a[i] === b[i]) i++
  const from = Math.max(0, i - 60)
  return `at ${i}: received ...${a.slice(from, i + 60)}... / schema writes ...${b.slice(from, i + 60)}...`
}
