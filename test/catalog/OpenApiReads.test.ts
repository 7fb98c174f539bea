/**
 * The OpenAPI document lists every catalog read (README, "Reading the catalog"; paths as in
 * docs/decisions.md, "Catalog reads") and documents, for each read that takes `include=`, every token
 * it accepts (docs/api-contract.md, "Records and lists"); the works collection documents its sorts
 * and facets (README, "Reading the catalog").
 */
import { describe, expect, it } from "@effect/vitest"
import { SchemaAST } from "effect"
import { HttpApi, OpenApi } from "effect/http-api"
import { CatalogApiDocumented } from "../../schema/Api/CatalogApi.js"
import { workFacets, workIncludes, workSorts } from "../../schema/Api/WorksApi.js"

const spec = OpenApi.fromApi(CatalogApiDocumented) as any

/** The catalog reads (GET) that must be documented. */
const reads = [
  "/v2/catalog/works",
  "/v2/catalog/search",
  "/v2/catalog/works/{id}",
  "/v2/catalog/works/{id}/characters",
  "/v2/catalog/works/{id}/credits",
  "/v2/catalog/works/{id}/covers",
  "/v2/catalog/works/{id}/intros",
  "/v2/catalog/changes",
  "/v2/catalog/redirects",
  "/v2/catalog/releases",
  "/v2/catalog/releases/{id}",
  "/v2/catalog/characters",
  "/v2/catalog/characters/{id}",
  "/v2/catalog/characters/{id}/appearances",
  "/v2/catalog/credit-names",
  "/v2/catalog/credit-names/{id}",
  "/v2/catalog/persons",
  "/v2/catalog/persons/{id}",
  "/v2/catalog/companies",
  "/v2/catalog/companies/{id}",
  "/v2/catalog/companies/{id}/graph",
  "/v2/catalog/engines",
  "/v2/catalog/engines/{id}",
  "/v2/catalog/tags",
  "/v2/catalog/tags/{id}",
  "/v2/catalog/calendar",
  "/v2/catalog/stats"
]

/**
 * The literal tokens a query parameter's schema accepts (e.g. the members of a `tokenList`). A schema's
 * AST is its decoded side, with its refinements (checks) and its transformation (encoding) on the node
 * itself, so only literals, unions and arrays need walking.
 */
const literals = (ast: SchemaAST.AST, out: Set<string> = new Set()): Set<string> => {
  switch (ast._tag) {
    case "Literal":
      out.add(String(ast.literal))
      break
    case "Union":
      for (const member of ast.types) literals(member, out)
      break
    case "Arrays":
      for (const element of ast.elements) literals(element, out)
      for (const rest of ast.rest) literals(rest, out)
      break
    default:
      break
  }
  return out
}

/** Per `METHOD path` (OpenAPI spelling), the tokens its `include` parameter accepts. */
const includeTokens = () => {
  const out = new Map<string, ReadonlyArray<string>>()
  HttpApi.reflect(CatalogApiDocumented, {
    onGroup() {},
    onEndpoint({ endpoint }) {
      if (endpoint.query === undefined) return
      const struct = endpoint.query.ast
      const type = struct._tag === "Objects"
        ? struct.propertySignatures.find((p) => p.name === "include")?.type
        : undefined
      if (type === undefined) return
      const path = endpoint.path.replace(/:(\w+)/g, "{$1}")
      out.set(`${endpoint.method} ${path}`, [...literals(type)].filter((t) => t !== "undefined"))
    }
  })
  return out
}

const parameter = (path: string, name: string) =>
  (spec.paths[path]?.get?.parameters ?? []).find((p: any) => p.name === name && p.in === "query")

describe("OpenAPI document: catalog reads", () => {
  it("every catalog read is documented, with summary, description and the bearer scheme (docs/decisions.md, \"Catalog reads\")", () => {
    const missing = reads.filter((path) => spec.paths[path]?.get === undefined)
    expect(missing).toEqual([])
    for (const path of reads) {
      const op = spec.paths[path].get
      expect(op.summary, path).toBeTruthy()
      expect(op.description, path).toBeTruthy()
      expect(op.security, path).toEqual([{ bearer: [] }])
      expect(op.responses["200"], path).toBeDefined()
    }
  })

  it("every read that takes include= documents each token it accepts (docs/api-contract.md, \"Records and lists\")", () => {
    const tokens = includeTokens()
    expect(tokens.size).toBeGreaterThan(0)
    for (const [key, allowed] of tokens) {
      const [method, path] = key.split(" ") as [string, string]
      expect(method).toBe("GET")
      const include = parameter(path, "include")
      expect(include, key).toBeDefined()
      expect(allowed.length, key).toBeGreaterThan(0)
      for (const token of allowed) expect(include.description, `${key}: ${token}`).toContain(`\`${token}\``)
    }
    // The works reads take exactly the eight tokens of README, "Reading the catalog".
    for (const path of ["/v2/catalog/works", "/v2/catalog/search", "/v2/catalog/works/{id}"]) {
      expect([...tokens.get(`GET ${path}`)!].sort(), path).toEqual([...workIncludes].sort())
      expect(parameter(path, "include").description).toContain("UNKNOWN_INCLUDE")
    }
  })

  it("the works collection documents its parameters, sorts and facets (docs/api-contract.md, \"Records and lists\", \"Cursors and pages\")", () => {
    for (const path of ["/v2/catalog/works", "/v2/catalog/search"]) {
      for (
        const name of [
          "limit",
          "cursor",
          "page",
          "ids",
          "refs",
          "q",
          "facets",
          "sort",
          "include",
          "include_total",
          "owner_uid",
          "site",
          "platform",
          "view"
        ]
      ) {
        const p = parameter(path, name)
        expect(p, `${path} ${name}`).toBeDefined()
        expect(p.description, `${path} ${name}`).toBeTruthy()
      }
      for (const sort of workSorts) expect(parameter(path, "sort").description).toContain(`\`${sort}\``)
      for (const facet of workFacets) expect(parameter(path, "facets").description).toContain(`\`${facet}\``)
      const responses = JSON.stringify(spec.paths[path].get.responses["400"])
      for (const problem of ["LimitTooLarge", "InvalidCursor", "TooManyIds", "UnknownInclude", "UnknownSort"]) {
        expect(responses, `${path} ${problem}`).toContain(`${problem}Problem`)
      }
      expect(responses).toContain("UnknownFacetProblem")
    }
    const detail = JSON.stringify(spec.paths["/v2/catalog/works/{id}"].get.responses["404"])
    expect(detail).toContain("EntityMergedProblem")
    expect(detail).toContain("NotFoundProblem")
  })

  it("every single-record read that sends an ETag declares its 304 (no body) (docs/api-contract.md, \"Caching, ETags and freshness\")", () => {
    const conditional = [
      "/v2/catalog/works/{id}",
      "/v2/catalog/releases/{id}",
      "/v2/catalog/characters/{id}",
      "/v2/catalog/credit-names/{id}",
      "/v2/catalog/persons/{id}",
      "/v2/catalog/companies/{id}",
      "/v2/catalog/companies/{id}/graph",
      "/v2/catalog/engines/{id}",
      "/v2/catalog/tags/{id}",
      "/v2/catalog/stats"
    ]
    for (const path of conditional) {
      const responses = spec.paths[path].get.responses
      expect(responses["200"], path).toBeDefined()
      expect(responses["304"], path).toBeDefined()
      expect(responses["304"].content, path).toBeUndefined()
    }
    // Lists send no ETag and declare no 304.
    expect(spec.paths["/v2/catalog/works"].get.responses["304"]).toBeUndefined()
  })
})
