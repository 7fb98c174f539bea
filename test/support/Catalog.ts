/**
 * The real servers over a freshly seeded demo catalog, with an `sfw` and an `nsfw` API key
 * (DECISIONS 4), for catalog read tests.
 */
import { Context, Effect, Layer, Redacted } from "effect"
import { ApiKeys } from "../../src/catalog/auth/ApiKeys.js"
import { seedCatalog } from "../../src/catalog/seed/Seed.js"
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

export class Catalog extends Context.Tag("test/Catalog")<Catalog, CatalogFixture>() {}

export const SeededCatalogLive = (options: { readonly works?: number; readonly seed?: number } = {}) =>
  Layer.scoped(
    Catalog,
    Effect.gen(function*() {
      const { catalog } = yield* TestServers
      const seeded = yield* seedCatalog({ works: options.works ?? 300, seed: options.seed ?? 7, workers: 0 }).pipe(
        Effect.orDie
      )
      if (seeded.status !== "seeded") return yield* Effect.dieMessage(`catalog not seeded: ${seeded.reason}`)
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
    Layer.provideMerge(ApiKeys.Default),
    Layer.provideMerge(TestServersLive),
    Layer.provide(testConfig())
  )
