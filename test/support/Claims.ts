/**
 * Real servers over a seeded catalog with the people and credentials the claim tests need: users
 * of two sites (one a creator), a moderator, and API keys of every kind a write can meet.
 */
import { Context, Effect, Layer, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Http from "node:http"
import type * as Net from "node:net"
import type { Scope } from "../../schema/Annotations.js"
import type { ContentLimit } from "../../schema/Api/Security.js"
import { ApiKeys } from "../../src/catalog/auth/ApiKeys.js"
import { seedCatalog } from "../../src/demo/Seed.js"
import { DEFAULT_CATALOG_AUDIENCE, DEFAULT_ISSUER } from "../../src/identity/shared/IdentityConfig.js"
import { signWithProviderKey } from "./IdentityKeys.js"
import { testConfig, TestServers, TestServersLive } from "./TestServers.js"

export interface Person {
  readonly id: number
  /** An API key of the person's site with every scope the claim routes use. */
  readonly key: string
}

export interface ClaimsFixtureShape {
  readonly base: string
  /** A user of `site_a` without roles. */
  readonly siteUser: Person
  /** Another user of `site_a`. */
  readonly siteUser2: Person
  /** A user of `site_b`. */
  readonly otherSiteUser: Person
  /** A `site_a` user with the `creator` role. */
  readonly creator: Person
  /** A moderator (key of `mod_site`, with `moderation`). */
  readonly moderator: Person
  /** A second moderator. */
  readonly moderator2: Person
  /** Keys without a user, or without the write scopes. */
  readonly keys: { readonly readOnly: string; readonly noUser: string; readonly noUserModeration: string }
  /** Ids of live works of the seeded catalog, not nsfw. */
  readonly works: ReadonlyArray<string>
  /** A key for `site` with `scopes`, for `userId` (null: none). */
  readonly makeKey: (site: string, scopes: ReadonlyArray<Scope>, userId: number | null) => Effect.Effect<string>
  /** A key like `makeKey`'s with another content limit (`makeKey`'s are `sfw`). */
  readonly makeKeyWithLimit: (
    site: string,
    scopes: ReadonlyArray<Scope>,
    userId: number | null,
    contentLimit: ContentLimit
  ) => Effect.Effect<string>
  /** A user with `roles`; answers the id. */
  readonly makeUser: (roles: ReadonlyArray<string>) => Effect.Effect<number>
  /** JSON request on the catalog. */
  readonly call: (
    method: string,
    path: string,
    options?: { readonly key?: string; readonly body?: unknown; readonly headers?: Record<string, string> }
  ) => Effect.Effect<{ readonly status: number; readonly headers: Headers; readonly body: any }>
}

export class ClaimsFixture extends Context.Service<ClaimsFixture, ClaimsFixtureShape>()("test/ClaimsFixture") {}

export const writeScopes: ReadonlyArray<Scope> = ["catalog:read", "claims:write", "moderation"]

export const ClaimsFixtureLive = (
  options: { readonly works?: number; readonly config?: Record<string, string> } = {}
) =>
  Layer.effect(
    ClaimsFixture,
    Effect.gen(function*() {
      const { catalog } = yield* TestServers
      const sql = yield* SqlClient.SqlClient
      const seeded = yield* seedCatalog({ works: options.works ?? 60, seed: 11, workers: 0 }).pipe(Effect.orDie)
      if (seeded.status !== "seeded") return yield* Effect.die(`catalog not seeded: ${seeded.reason}`)
      const apiKeys = yield* ApiKeys
      let n = 0
      const makeUser = (roles: ReadonlyArray<string>) =>
        Effect.map(
          sql<{ id: string }>`
            INSERT INTO users (sub, email, password_hash, roles)
            VALUES (gen_random_uuid(), ${`claims-user-${++n}-${Date.now()}@example.test`}, 'unused', ${roles}::text[])
            RETURNING id::text AS id`,
          (rows) => Number(rows[0]!.id)
        ).pipe(Effect.orDie)
      const makeKeyWithLimit = (
        site: string,
        scopes: ReadonlyArray<Scope>,
        userId: number | null,
        contentLimit: ContentLimit
      ) =>
        Effect.map(
          apiKeys.create({ site, scopes: [...scopes], contentLimit, userId }),
          ({ key }) => Redacted.value(key)
        ).pipe(Effect.orDie)
      const makeKey = (site: string, scopes: ReadonlyArray<Scope>, userId: number | null) =>
        makeKeyWithLimit(site, scopes, userId, "sfw")
      const person = (site: string, roles: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const id = yield* makeUser(roles)
          return { id, key: yield* makeKey(site, writeScopes, id) }
        })
      const works = yield* sql<{ id: string }>`
        SELECT id::text AS id FROM works WHERE live AND NOT nsfw ORDER BY id`.pipe(Effect.orDie)
      const call: ClaimsFixtureShape["call"] = (method, path, opts = {}) =>
        Effect.promise(async () => {
          const headers: Record<string, string> = { ...opts.headers }
          if (opts.key !== undefined) headers.authorization = `Bearer ${opts.key}`
          if (opts.body !== undefined) headers["content-type"] = "application/json"
          const res = await fetch(`${catalog}${path}`, {
            method,
            headers,
            ...(opts.body === undefined ? {} : { body: JSON.stringify(opts.body) })
          })
          const text = await res.text()
          return { status: res.status, headers: res.headers, body: text === "" ? null : JSON.parse(text) }
        })
      return {
        base: catalog,
        siteUser: yield* person("site_a", []),
        siteUser2: yield* person("site_a", []),
        otherSiteUser: yield* person("site_b", []),
        creator: yield* person("site_a", ["creator"]),
        moderator: yield* person("mod_site", ["moderator"]),
        moderator2: yield* person("mod_site", ["admin"]),
        keys: {
          readOnly: yield* makeKey("site_a", ["catalog:read"], yield* makeUser([])),
          noUser: yield* makeKey("site_a", writeScopes, null),
          noUserModeration: yield* makeKey("mod_site", writeScopes, null)
        },
        works: works.map((w) => w.id),
        makeKey,
        makeKeyWithLimit,
        makeUser,
        call
      }
    })
  ).pipe(
    Layer.provideMerge(ApiKeys.layer),
    Layer.provideMerge(TestServersLive),
    Layer.provide(testConfig(options.config))
  )

/**
 * The catalog fetches the provider's JWKS from `IDENTITY_JWKS_URL`, fixed before the test servers
 * (and their ports) exist: this relay answers it with the JWKS of the identity server the fixture
 * started, once a token has been minted through it. Give `url` to `ClaimsFixtureLive`'s config.
 */
export const startJwksRelay = async () => {
  let identityUrl: string | undefined
  const relay = Http.createServer((_req, res) => {
    if (identityUrl === undefined) {
      res.writeHead(503).end()
      return
    }
    fetch(`${identityUrl}/api/v1/oauth/jwks`).then(async (answer) => {
      res.writeHead(answer.status, { "content-type": "application/json" }).end(await answer.text())
    }, () => res.writeHead(502).end())
  })
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve))
  const url = `http://127.0.0.1:${(relay.address() as Net.AddressInfo).port}/jwks`

  /**
   * A live sign-in session for `userId` and an access token bound to it, of a client of `site`
   * (none: a client without a site) with the content limit given (none: the default, `sfw`),
   * signed with the provider's own key as the provider issues them.
   */
  const accessToken = (options: {
    readonly userId: number
    readonly scope: string
    readonly site?: string | undefined
    readonly contentLimit?: ContentLimit | undefined
    /** The token's `client_id`; by default `portal` for a site, `siteless` without one. */
    readonly clientId?: string | undefined
  }) =>
    Effect.gen(function*() {
      identityUrl = (yield* TestServers).identity
      const sql = yield* SqlClient.SqlClient
      const [session] = yield* sql<{ sid: string }>`
        INSERT INTO sessions (id, user_id, auth_time, expires_at)
        VALUES (${`s-${crypto.randomUUID()}`}, ${options.userId}, now(), now() + interval '1 day')
        RETURNING sid::text AS sid`.pipe(Effect.orDie)
      const now = Math.floor(Date.now() / 1000)
      return yield* signWithProviderKey({
        iss: DEFAULT_ISSUER,
        sub: crypto.randomUUID(),
        aud: DEFAULT_CATALOG_AUDIENCE,
        client_id: options.clientId ?? (options.site === undefined ? "siteless" : "portal"),
        scope: options.scope,
        jti: crypto.randomUUID(),
        iat: now,
        exp: now + 900,
        uid: options.userId,
        roles: [],
        site_roles: [],
        ...(options.site === undefined ? {} : { site: options.site }),
        ...(options.contentLimit === undefined ? {} : { content_limit: options.contentLimit }),
        sid: session!.sid
      })
    })

  return { url, accessToken, close: () => relay.close() } as const
}
