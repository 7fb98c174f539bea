/**
 * The real servers over a freshly seeded demo catalog, with an `sfw` and an `nsfw` API key
 * (docs/api-contract.md, "Credentials, scopes and the content limit"), for catalog read tests.
 */
import { expect } from "@effect/vitest"
import { Context, Effect, Layer, Redacted } from "effect"
import { ApiKeys } from "../../src/catalog/auth/ApiKeys.js"
import { seedCatalog } from "../../src/demo/Seed.js"
import { expectProblem, type ProblemBody } from "./Problems.js"
import { testConfig, TestServers, TestServersLive } from "./TestServers.js"

export interface CatalogFixture {
  readonly base: string
  readonly sfwKey: string
  readonly nsfwKey: string
  /** GET `path` on the catalog with a key (default: nsfw); returns status, headers and parsed body. */
  readonly get: (
    path: string,
    options?: { readonly key?: "sfw" | "nsfw" | "none"; readonly headers?: Record<string, string> }
  ) => Effect.Effect<{ readonly status: number; readonly headers: Headers; readonly body: any }>
}

export class Catalog extends Context.Service<Catalog, CatalogFixture>()("test/Catalog") {}

export const SeededCatalogLive = (options: { readonly works?: number; readonly seed?: number } = {}) =>
  Layer.effect(
    Catalog,
    Effect.gen(function*() {
      const { catalog } = yield* TestServers
      const seeded = yield* seedCatalog({ works: options.works ?? 300, seed: options.seed ?? 7, workers: 0 }).pipe(
        Effect.orDie
      )
      if (seeded.status !== "seeded") return yield* Effect.die(`catalog not seeded: ${seeded.reason}`)
      const keys = yield* ApiKeys
      const make = (contentLimit: "sfw" | "nsfw") =>
        Effect.map(
          keys.create({ site: "test_site", scopes: ["catalog:read"], contentLimit, userId: null }),
          ({ key }) => Redacted.value(key)
        )
      const sfwKey = yield* make("sfw").pipe(Effect.orDie)
      const nsfwKey = yield* make("nsfw").pipe(Effect.orDie)
      const get: CatalogFixture["get"] = (path, opts = {}) =>
        Effect.promise(async () => {
          const key = opts.key ?? "nsfw"
          const headers: Record<string, string> = { ...opts.headers }
          if (key !== "none") headers.authorization = `Bearer ${key === "sfw" ? sfwKey : nsfwKey}`
          const res = await fetch(`${catalog}${path}`, { headers })
          const text = await res.text()
          return { status: res.status, headers: res.headers, body: text === "" ? null : JSON.parse(text) }
        })
      return { base: catalog, sfwKey, nsfwKey, get }
    })
  ).pipe(
    Layer.provideMerge(ApiKeys.layer),
    Layer.provideMerge(TestServersLive),
    Layer.provide(testConfig())
  )

// Helpers shared by the catalog read tests.

/** A raw fetch Response, for header and problem checks. */
export const raw = (path: string, key: "sfw" | "nsfw" = "nsfw", headers: Record<string, string> = {}) =>
  Effect.gen(function*() {
    const c = yield* Catalog
    const token = key === "sfw" ? c.sfwKey : c.nsfwKey
    return yield* Effect.promise(() =>
      fetch(`${c.base}${path}`, { headers: { authorization: `Bearer ${token}`, ...headers } })
    )
  })

/**
 * Asserts the problem document at `path` member by member
 * (RFC 9457; docs/api-contract.md, "Errors: catalog problem documents").
 */
export const problem = (
  path: string,
  code: Parameters<typeof expectProblem>[1],
  key: "sfw" | "nsfw" = "nsfw"
): Effect.Effect<ProblemBody, never, Catalog> =>
  Effect.flatMap(raw(path, key), (res) => Effect.promise(() => expectProblem(res, code, path)))

/** The first row, asserting there is one. */
export const one = <A>(rows: ReadonlyArray<A>) => {
  expect(rows.length).toBeGreaterThan(0)
  return rows[0]!
}

/** Every item of a cursor list, following `next_cursor` (docs/api-contract.md, "Cursors and pages"). */
export const walk = (path: string, key: "sfw" | "nsfw") =>
  Effect.gen(function*() {
    const c = yield* Catalog
    const items: Array<any> = []
    let cursor: string | undefined
    for (let page = 0; page < 100; page++) {
      const sep = path.includes("?") ? "&" : "?"
      const res = yield* c.get(`${path}${cursor === undefined ? "" : `${sep}cursor=${cursor}`}`, { key })
      expect(res.status).toBe(200)
      items.push(...res.body.items)
      cursor = res.body.next_cursor
      if (cursor === undefined) return items
    }
    throw new Error("too many pages")
  })
