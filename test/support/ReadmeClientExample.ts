/**
 * The README's "Typed client" example, verbatim between the markers (test/platform/ReadmeClient.test.ts
 * checks that the README shows this text and runs it against the real servers), so it type-checks
 * and cannot rot.
 */
// README:begin
import { Effect } from "effect"
import { FetchHttpClient } from "effect/http"
import { makeCatalogClient, makeIdentityClient } from "../../schema/Client.js"
import { LoginRequest } from "../../schema/Identity/Login.js"

export const newestWorksAndMe = (apiKey: string, email: string, password: string) =>
  Effect.gen(function*() {
    const catalog = yield* makeCatalogClient({ baseUrl: "http://127.0.0.1:8080", credential: apiKey })
    const works = yield* catalog.works.listWorks({ query: { sort: "released_desc", limit: 5 } })
    // works.items: ReadonlyArray<ListWork>, decoded; a refusal fails with its problem, e.g. "LimitTooLarge"

    const identity = yield* makeIdentityClient({ baseUrl: "http://127.0.0.1:8081" })
    const login = yield* identity.auth.login({ payload: new LoginRequest({ email, password }) })
    const account = yield* makeIdentityClient({ baseUrl: "http://127.0.0.1:8081", credential: login.data.access_token })
    const me = yield* account.account.me()
    return { titles: works.items.map((work) => work.display_name), name: me.data.name }
  }).pipe(Effect.provide(FetchHttpClient.layer))
// README:end
