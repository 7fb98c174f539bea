/**
 * The README's "Typed client" example (test/support/ReadmeClientExample.ts) is the README's text and
 * works: run against the real servers, it lists works with an API key and reads the account of a user
 * who signed in (README, "Typed client"; docs/api-contract.md).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { FetchHttpClient } from "effect/http"
import * as Fs from "node:fs"
import { Passwords } from "../../src/identity/crypto/Passwords.js"
import { Users } from "../../src/identity/users/Users.js"
import { Catalog, SeededCatalogLive } from "../support/Catalog.js"
import { createUser } from "../support/IdentityServers.js"
import { newestWorksAndMe } from "../support/ReadmeClientExample.js"
import { serverLayerOptions, TestServers } from "../support/TestServers.js"

const Env = Users.layerWithoutDependencies.pipe(
  Layer.provide(Passwords.layer),
  Layer.provideMerge(SeededCatalogLive({ works: 30 }))
)

const readme = Fs.readFileSync(new URL("../../README.md", import.meta.url), "utf8")
const example = Fs.readFileSync(new URL("../support/ReadmeClientExample.ts", import.meta.url), "utf8")

describe("README, \"Typed client\"", () => {
  it("shows the example as it is compiled, with the import path of a file at the repository's root", () => {
    const code = /\/\/ README:begin\n([\s\S]*?)\/\/ README:end\n/.exec(example)![1]!
    expect(readme).toContain("```ts\n" + code.replaceAll("../../schema/", "./schema/") + "```\n")
  })

  it.layer(Env, serverLayerOptions())((it) => {
    it.effect("runs: the newest works through the catalog client, the account through the identity client", () =>
      Effect.gen(function*() {
        const servers = yield* TestServers
        const { nsfwKey } = yield* Catalog
        const user = yield* createUser({ name: "Reader" })
        // The example names the default ports of `npm start`; the test servers listen elsewhere.
        const moved: Record<string, string> = {
          "http://127.0.0.1:8080": servers.catalog,
          "http://127.0.0.1:8081": servers.identity
        }
        const fetchMoved: typeof fetch = (input, init) => {
          const url = new URL(input instanceof Request ? input.url : input)
          return fetch(`${moved[url.origin] ?? url.origin}${url.pathname}${url.search}`, init)
        }
        const answer = yield* newestWorksAndMe(nsfwKey, user.email, user.password).pipe(
          Effect.provideService(FetchHttpClient.Fetch, fetchMoved)
        )
        expect(answer.name).toBe("Reader")
        expect(answer.titles.length).toBe(5)
      }))
  })
})
