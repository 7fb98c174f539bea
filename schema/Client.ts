/**
 * Typed clients of the catalog API and of the identity provider, built from the same declarations as
 * the servers (schema/Api/CatalogApi.ts, schema/Api/IdentityApi.ts): each method encodes its path,
 * query and body from the endpoint's schemas and decodes the answer into the endpoint's success type,
 * or fails with the declared error of the answer's status (a catalog problem document from
 * schema/Problem.ts, an identity envelope or RFC 6749 error from schema/Api/IdentityErrors.ts).
 *
 * ```ts
 * const catalog = yield* makeCatalogClient({ baseUrl: "http://localhost:8080", credential: apiKey })
 * const page = yield* catalog.works.listWorks({ query: { limit: 10 } })
 * ```
 *
 * Both are Effects that need an `HttpClient` (`FetchHttpClient.layer` from `effect/http`, or the Node
 * one). `credential` is sent on every request as `Authorization: Bearer <credential>` (RFC 6750 2.1):
 * for the catalog an API key (`sk_...`) or an identity access token (schema/Api/Security.ts); for the
 * identity provider the access token of `POST /api/v1/auth/login`, which its self-service endpoints
 * read from that header. A client is cheap: make one per credential. To read a success's headers
 * too, call a method with `responseMode: "decoded-and-response"`.
 *
 * `baseUrl` is the server's origin: the declared paths already start with `/v2` and `/api/v1`.
 * The catalog client is built from `CatalogApi`, not `CatalogApiDocumented`: its problem transform
 * rewrites only the OpenAPI document.
 * A body declared as a `Schema.Class` (`LoginRequest`, most identity requests) is passed as an instance
 * (`new LoginRequest({ email, password })`): its encoder checks the class, though a plain object type-checks.
 */
import { Effect, type Redacted } from "effect"
import { HttpClient, HttpClientRequest } from "effect/http"
import { HttpApiClient } from "effect/http-api"
import { CatalogApi } from "./Api/CatalogApi.js"
import { IdentityApi } from "./Api/IdentityApi.js"

export interface ClientOptions {
  /** The server's origin, e.g. `https://catalog.example`. */
  readonly baseUrl: string | URL
  /** Sent as `Authorization: Bearer <credential>` on every request. */
  readonly credential?: string | Redacted.Redacted<string> | undefined
}

export type CatalogClient = HttpApiClient.ForApi<typeof CatalogApi>
export type IdentityClient = HttpApiClient.ForApi<typeof IdentityApi>

const options = ({ baseUrl, credential }: ClientOptions) => ({
  baseUrl,
  transformClient: credential === undefined
    ? undefined
    : HttpClient.mapRequest(HttpClientRequest.bearerToken(credential))
})

/** The catalog API (`/v2`) as typed methods, grouped as the OpenAPI document's tags are. */
export const makeCatalogClient = (
  client: ClientOptions
): Effect.Effect<CatalogClient, never, HttpClient.HttpClient> => HttpApiClient.make(CatalogApi, options(client))

/** The identity provider's JSON endpoints (`/api/v1`) as typed methods. */
export const makeIdentityClient = (
  client: ClientOptions
): Effect.Effect<IdentityClient, never, HttpClient.HttpClient> => HttpApiClient.make(IdentityApi, options(client))
