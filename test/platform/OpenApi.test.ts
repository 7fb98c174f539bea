/**
 * The OpenAPI documents are generated from the HttpApi declarations (docs/decisions.md, "Catalog
 * reads", "The contract is code"): every catalog error response is a problem document
 * (docs/api-contract.md, "Errors: catalog problem documents"), no operation has an undeclared 500,
 * and every operation has a summary and a description.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { OpenApi } from "effect/http-api"
import { CatalogApiDocumented } from "../../schema/Api/CatalogApi.js"
import { IdentityApi } from "../../schema/Api/IdentityApi.js"
import { serverLayerOptions, testConfig, TestServers, TestServersLive } from "../support/TestServers.js"

const catalogSpec = OpenApi.fromApi(CatalogApiDocumented) as any
const identitySpec = OpenApi.fromApi(IdentityApi as any) as any

const operations = (spec: any) =>
  Object.entries<any>(spec.paths).flatMap(([path, item]) =>
    Object.entries<any>(item)
      .filter(([method]) => ["get", "post", "put", "patch", "delete"].includes(method))
      .map(([method, op]) => ({ path, method, op }))
  )

describe("OpenAPI documents", () => {
  it("catalog: every 4xx/5xx response is application/problem+json (docs/api-contract.md, \"Errors: catalog problem documents\")", () => {
    const offenders: Array<string> = []
    for (const { method, op, path } of operations(catalogSpec)) {
      for (const [status, response] of Object.entries<any>(op.responses)) {
        if (Number(status) < 400) continue
        const types = Object.keys(response.content ?? {})
        if (types.length !== 1 || types[0] !== "application/problem+json") {
          offenders.push(`${method.toUpperCase()} ${path} ${status}: ${types.join(",") || "no body"}`)
        }
      }
    }
    expect(offenders).toEqual([])
  })

  it("catalog: every operation declares its 500 (INTERNAL_ERROR) and 503", () => {
    for (const { method, op, path } of operations(catalogSpec)) {
      expect(op.responses["500"], `${method} ${path}`).toBeDefined()
      expect(JSON.stringify(op.responses["500"])).toContain("InternalErrorProblem")
      expect(op.responses["503"], `${method} ${path}`).toBeDefined()
    }
  })

  it("catalog: decode failures are documented as our problems, not the platform's decode error", () => {
    const text = JSON.stringify(catalogSpec)
    expect(text).not.toContain("HttpApiDecodeError")
    for (const { method, op, path } of operations(catalogSpec)) {
      const bad = op.responses["400"]
      if (bad === undefined) continue
      expect(JSON.stringify(bad), `${method} ${path}`).toContain("InvalidParameterProblem")
      if (op.requestBody === undefined) expect(op.responses["422"], `${method} ${path}`).toBeUndefined()
    }
  })

  it("catalog: operations behind credentials document the bearer scheme and 401/403", () => {
    expect(catalogSpec.components.securitySchemes.bearer).toMatchObject({ type: "http", scheme: "bearer" })
    const credential = catalogSpec.paths["/v2/credential"].get
    expect(credential.security).toEqual([{ bearer: [] }])
    expect(JSON.stringify(credential.responses["401"])).toContain("MissingCredentialProblem")
    expect(JSON.stringify(credential.responses["401"])).toContain("InvalidCredentialProblem")
  })

  it("both documents: every operation has a summary and a description", () => {
    for (const spec of [catalogSpec, identitySpec]) {
      for (const { method, op, path } of operations(spec)) {
        expect(op.summary, `${method} ${path}`).toBeTruthy()
        expect(op.description, `${method} ${path}`).toBeTruthy()
      }
    }
  })

  it("problem schemas carry the fixed code, status and title of the registry", () => {
    const schema = catalogSpec.components.schemas.NotFoundProblem
    expect(schema.properties.code.enum).toEqual(["NOT_FOUND"])
    expect(schema.properties.status.enum).toEqual([404])
    expect(schema.properties.title.enum).toEqual(["Not found"])
    expect(schema.required).toEqual(
      expect.arrayContaining(["type", "title", "status", "code", "detail", "instance", "request_id", "errors"])
    )
  })

  it.layer(TestServersLive.pipe(Layer.provide(testConfig())), serverLayerOptions("60 seconds"))(
    (it) => {
      it.effect("the servers serve the same documents and the docs UIs", () =>
        Effect.gen(function*() {
          const { catalog, identity } = yield* TestServers
          const served = yield* Effect.promise(() => fetch(`${catalog}/v2/openapi.json`).then((r) => r.json()))
          expect(served).toEqual(JSON.parse(JSON.stringify(catalogSpec)))
          expect((served as any).openapi).toMatch(/^3\.1/)
          const servedIdentity = yield* Effect.promise(() =>
            fetch(`${identity}/api/v1/openapi.json`).then((r) => r.json())
          )
          expect(servedIdentity).toEqual(JSON.parse(JSON.stringify(identitySpec)))
          for (const url of [`${catalog}/v2/docs`, `${identity}/api/v1/docs`]) {
            const res = yield* Effect.promise(() => fetch(url))
            expect(res.status).toBe(200)
            expect(res.headers.get("content-type")).toMatch(/text\/html/)
          }
        }))
    }
  )
})
