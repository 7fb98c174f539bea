/**
 * The typed clients of schema/Client.ts over `fetch`, for the happy paths of the HTTP tests: answers
 * come back decoded by the endpoint's success schema, so each call also checks the server against the
 * declared contract (docs/api-contract.md). Raw `fetch` stays for bytes, headers of refusals, problem
 * documents and hostile input.
 */
import { Effect } from "effect"
import { FetchHttpClient } from "effect/http"
import { makeCatalogClient, makeIdentityClient } from "../../schema/Client.js"
import { Catalog } from "./Catalog.js"

/** The catalog client at `catalog` (the server's origin) with a credential (API key or access token). */
export const catalogClientAt = (catalog: string, credential?: string) =>
  makeCatalogClient({ baseUrl: catalog, credential }).pipe(Effect.provide(FetchHttpClient.layer))

/** The catalog client with one of the seeded catalog's keys (default: nsfw), or none. */
export const catalogClient = (key: "sfw" | "nsfw" | "none" = "nsfw") =>
  Effect.gen(function*() {
    const c = yield* Catalog
    return yield* catalogClientAt(c.base, key === "none" ? undefined : key === "sfw" ? c.sfwKey : c.nsfwKey)
  })

/** The identity client at `identity` (the server's origin), with a user's access token when given. */
export const identityClient = (identity: string, accessToken?: string) =>
  makeIdentityClient({ baseUrl: identity, credential: accessToken }).pipe(Effect.provide(FetchHttpClient.layer))

/**
 * The messages the development mailbox holds for `to`, oldest first (schema/Api/IdentityDevApi.ts).
 * `identity` is the server's origin or its issuer (`{origin}/api/v1`).
 */
export const mailTo = (identity: string, to: string) =>
  Effect.flatMap(identityClient(new URL(identity).origin), (client) => client.dev.mailbox({ query: { to } })).pipe(
    Effect.map((answer) => answer.data.items),
    Effect.orDie
  )

const sixDigits = /\b([0-9]{6})\b/

/** Every 6-digit code mailed to `to`, oldest first. */
export const codesMailedTo = (identity: string, to: string) =>
  Effect.map(mailTo(identity, to), (items) =>
    items.flatMap((mail) => {
      const match = sixDigits.exec(mail.text)
      return match === null ? [] : [match[1]!]
    }))

/** The code of the newest message to `to`; dies when that message has none. */
export const lastCode = (identity: string, to: string) =>
  Effect.map(mailTo(identity, to), (items) => {
    const match = sixDigits.exec(items.at(-1)?.text ?? "")
    if (match === null) throw new Error(`no code mailed to ${to}`)
    return match[1]!
  })

/**
 * The body of a read that may answer 304: the typed client decodes a 304 to `undefined`, which a
 * read sent without `If-None-Match` must never get (docs/api-contract.md, "Caching, ETags and freshness").
 */
export const fresh = <A>(answer: A | void): A => {
  if (answer === undefined) throw new Error("304 Not Modified to a read without If-None-Match")
  return answer
}

/**
 * Every item of a cursor list read through a typed client, following `next_cursor` until it is absent
 * (docs/api-contract.md, "Cursors and pages"); `page` reads one page from a cursor (none: the first).
 */
export const walkPages = <A, E, R>(
  page: (
    cursor: string | undefined
  ) => Effect.Effect<{ readonly items: ReadonlyArray<A>; readonly next_cursor?: string | undefined }, E, R>
) =>
  Effect.gen(function*() {
    const items: Array<A> = []
    let cursor: string | undefined
    for (let pages = 0; pages < 1000; pages++) {
      const answer = yield* page(cursor)
      items.push(...answer.items)
      cursor = answer.next_cursor
      if (cursor === undefined) return items
    }
    throw new Error("no end")
  })

/** A raw answer of the identity API: status, parsed body (null when empty) and headers. */
export interface RawAnswer {
  readonly status: number
  readonly body: any
  readonly headers: Headers
}

/**
 * A raw JSON request to the identity API (`path` under `/api/v1`), for what the typed client does not
 * show: refusals with their envelope codes and headers, malformed bodies, races. `token` is sent as
 * `Authorization: Bearer`; a `body` as `application/json`.
 */
export const identityCall = (
  identity: string,
  method: string,
  path: string,
  options: { readonly token?: string; readonly body?: unknown; readonly headers?: Record<string, string> } = {}
) =>
  Effect.promise(async (): Promise<RawAnswer> => {
    const res = await fetch(`${identity}/api/v1${path}`, {
      method,
      headers: {
        ...(options.body === undefined ? {} : { "content-type": "application/json" }),
        ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
        ...options.headers
      },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) })
    })
    const text = await res.text()
    return { status: res.status, body: text === "" ? null : JSON.parse(text), headers: res.headers }
  })
