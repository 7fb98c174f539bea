/**
 * The real catalog and identity stacks for the identity tests, over a fresh database, with the
 * issuer set to the identity server's real address (so discovery, tokens and the catalog's JWKS
 * fetch all agree: docs/decisions.md, "Identity: protocol"). Also gives the tests the account and
 * client services, and raw HTTP helpers for the flows every test needs.
 */
import { Clock, ConfigProvider, Context, Effect, Layer } from "effect"
import * as Crypto from "node:crypto"
import * as Net from "node:net"
import { CatalogHttpLive } from "../../src/catalog/CatalogServer.js"
import { Clients } from "../../src/identity/clients/Clients.js"
import { Passwords } from "../../src/identity/crypto/Passwords.js"
import { s256Challenge } from "../../src/identity/crypto/Secrets.js"
import { IdentityPortLive } from "../../src/identity/IdentityPortLive.js"
import { IdentityHttpLive } from "../../src/identity/IdentityServer.js"
import { Users } from "../../src/identity/users/Users.js"
import { AppSecret, ServerConfig } from "../../src/platform/Config.js"
import type { DatabaseUrl } from "../../src/platform/Database.js"
import { listen } from "../../src/platform/HttpListener.js"
import { MediaStore } from "../../src/platform/MediaStore.js"
import { TestSqlLive, testSqlOver } from "./TestDatabase.js"

export interface IdentityServersShape {
  /** `http://127.0.0.1:<port>` of the identity server. */
  readonly identity: string
  /** `{identity}/api/v1`, byte-identical to `iss`. */
  readonly issuer: string
  readonly catalog: string
}

export class IdentityServers extends Context.Service<IdentityServers, IdentityServersShape>()("test/IdentityServers") {}

const freePort = Effect.callback<number>((resume) => {
  const server = Net.createServer()
  server.listen(0, "127.0.0.1", () => {
    const address = server.address() as Net.AddressInfo
    server.close(() => resume(Effect.succeed(address.port)))
  })
})

/**
 * Fast password hashing, a short revocation cache, quiet logs, per-address limits no test reaches
 * unless it sets them; `overrides` win.
 */
const baseSettings = {
  LOG_LEVEL: "Warning",
  IDENTITY_SCRYPT_LOG_N: "10",
  IDENTITY_REVOCATION_CACHE_SECONDS: "1",
  IDENTITY_LOGIN_IP_BURST: "10000",
  IDENTITY_LOGIN_FAILURE_BURST: "1000",
  IDENTITY_LOGIN_ACCOUNT_FREE_FAILURES: "10000",
  IDENTITY_AUTHORIZE_RATE_BURST: "100000",
  IDENTITY_USERINFO_RATE_BURST: "100000",
  IDENTITY_REVOKE_RATE_BURST: "100000",
  IDENTITY_CODE_IP_BURST: "100000",
  IDENTITY_AVATAR_USER_BURST: "100000",
  IDENTITY_AVATAR_IP_BURST: "100000"
}

const withSettings = (settings: Record<string, string>) =>
  ConfigProvider.fromEnv({ env: settings }).pipe(ConfigProvider.orElse(ConfigProvider.fromEnv()))

/**
 * `clock`: the servers' clock instead of the real one (for a process whose clock differs from the
 * database's); the database keeps its own.
 */
export interface ServerOptions {
  readonly clock?: Clock.Clock
  /** The database, instead of a fresh copy of the migrated template (`TestDatabaseUrlLive`). */
  readonly database?: Layer.Layer<DatabaseUrl>
}

const ServersLive = (overrides: Record<string, string>, options: ServerOptions) =>
  Layer.effect(
    IdentityServers,
    Effect.gen(function*() {
      const port = yield* freePort
      const identity = `http://127.0.0.1:${port}`
      const issuer = `${identity}/api/v1`
      const provider = withSettings({ ...baseSettings, IDENTITY_ISSUER: issuer, ...overrides })
      const catalogPort = yield* Effect.gen(function*() {
        yield* Layer.build(listen(Layer.fresh(IdentityHttpLive), { port, host: "127.0.0.1", grace: "1 second" }))
        const catalogPort = yield* freePort
        yield* Layer.build(
          listen(Layer.fresh(CatalogHttpLive.pipe(Layer.provide(IdentityPortLive))), {
            port: catalogPort,
            host: "127.0.0.1",
            grace: "1 second"
          })
        )
        return catalogPort
      }).pipe(
        Effect.provideService(ConfigProvider.ConfigProvider, provider),
        (build) => options.clock === undefined ? build : Effect.provideService(build, Clock.Clock, options.clock)
      )
      return { identity, issuer, catalog: `http://127.0.0.1:${catalogPort}` }
    })
  )

/**
 * One more identity server over the database of the env (its `SqlClient`), as another process
 * started with other settings would be: `overrides` over the base settings (`SHIORI_SECRET` and
 * `SHIORI_SECRET_PREVIOUS` among them), the issuer its own address unless given. It stops with the
 * enclosing scope; a start that fails (say, signing keys that do not decrypt) fails the effect.
 */
export const startIdentityServer = (overrides: Record<string, string>) =>
  Effect.gen(function*() {
    const port = yield* freePort
    const identity = `http://127.0.0.1:${port}`
    const provider = withSettings({ ...baseSettings, IDENTITY_ISSUER: `${identity}/api/v1`, ...overrides })
    yield* Layer.build(
      listen(Layer.fresh(IdentityHttpLive), { port, host: "127.0.0.1", grace: "1 second" }).pipe(
        Layer.provide(Layer.fresh(Layer.mergeAll(ServerConfig.layer, AppSecret.layer)))
      )
    ).pipe(Effect.provideService(ConfigProvider.ConfigProvider, provider))
    return { identity, issuer: `${identity}/api/v1` }
  })

/**
 * Servers plus `Users` and `Clients` over the same database, for setting up accounts, and the
 * `MediaStore` the servers share (under `SHIORI_DATA_DIR/media`).
 */
export const IdentityTestEnv = (overrides: Record<string, string> = {}, options: ServerOptions = {}) =>
  Layer.mergeAll(ServersLive(overrides, options), Users.layerWithoutDependencies, Clients.layer).pipe(
    Layer.provide(Passwords.layer),
    Layer.provideMerge(Layer.mergeAll(ServerConfig.layer, AppSecret.layer, MediaStore.layer)),
    Layer.provideMerge(options.database === undefined ? TestSqlLive : testSqlOver(options.database)),
    Layer.provide(ConfigProvider.layer(withSettings({ ...baseSettings, ...overrides }))),
    // Layers are memoized across the builds that share a memo map: each env stands alone.
    Layer.fresh
  )

// ---------------------------------------------------------------------------------------------
// Fixtures
// ---------------------------------------------------------------------------------------------

export interface TestUser {
  readonly id: number
  readonly sub: string
  readonly email: string
  readonly password: string
}

let counter = 0
const unique = () => `${Date.now().toString(36)}${(counter++).toString(36)}${Crypto.randomBytes(2).toString("hex")}`

export const createUser = (
  input: { readonly roles?: ReadonlyArray<string>; readonly name?: string; readonly emailVerified?: boolean } = {}
) =>
  Effect.gen(function*() {
    const users = yield* Users
    const email = `user_${unique()}@example.com`
    const password = `pw-${unique()}-secret`
    // Verified unless told: like an account the operator CLI creates.
    const created = yield* users.create({
      email,
      password,
      name: input.name ?? "Test User",
      roles: input.roles ?? [],
      emailVerified: input.emailVerified ?? true
    })
    return { ...created, email, password } satisfies TestUser
  }).pipe(Effect.orDie)

export interface TestClient {
  readonly clientId: string
  readonly secret: string | null
  readonly redirectUri: string
}

export const createClient = (input: {
  readonly autoConsent?: boolean
  readonly public?: boolean
  readonly site?: string
  readonly redirectUris?: ReadonlyArray<string>
  readonly name?: string
  readonly logoUrl?: string
  readonly contentLimit?: "sfw" | "nsfw"
  readonly refreshTtlSeconds?: number
  /** The scopes it may request; the registration default unless given. */
  readonly scopes?: ReadonlyArray<string>
} = {}) =>
  Effect.gen(function*() {
    const clients = yield* Clients
    const clientId = `client_${unique()}`
    const secret = input.public === true ? null : Crypto.randomBytes(24).toString("base64url")
    const redirectUris = input.redirectUris ?? [`https://rp.example/${clientId}/callback`]
    yield* clients.create({
      clientId,
      name: input.name ?? `App ${clientId}`,
      secret,
      redirectUris,
      autoConsent: input.autoConsent ?? true,
      site: input.site ?? null,
      logoUrl: input.logoUrl ?? "",
      refreshTtlSeconds: input.refreshTtlSeconds ?? null,
      contentLimit: input.contentLimit ?? "sfw",
      allowedScopes: input.scopes
    })
    return { clientId, secret, redirectUri: redirectUris[0]! } satisfies TestClient
  }).pipe(Effect.orDie)

// ---------------------------------------------------------------------------------------------
// Raw HTTP helpers (Promise-based; wrap in Effect.promise)
// ---------------------------------------------------------------------------------------------

export const pkcePair = () => {
  const verifier = Crypto.randomBytes(32).toString("base64url")
  return { verifier, challenge: s256Challenge(verifier) }
}

export interface LoggedIn {
  readonly accessToken: string
  /** `shiori_session=...`, ready for a Cookie header. */
  readonly cookie: string
  readonly setCookie: string
}

export const login = async (identity: string, user: { email: string; password: string }): Promise<LoggedIn> => {
  const res = await fetch(`${identity}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: user.email, password: user.password })
  })
  const body = await res.json() as any
  if (res.status !== 200) throw new Error(`login failed: ${res.status} ${JSON.stringify(body)}`)
  const setCookie = res.headers.get("set-cookie") ?? ""
  return { accessToken: body.data.access_token, cookie: setCookie.split(";")[0]!, setCookie }
}

export const authorizeUrl = (identity: string, params: Record<string, string | undefined>) => {
  const query = new URLSearchParams()
  for (const [key, value] of Object.entries(params)) if (value !== undefined) query.append(key, value)
  return `${identity}/api/v1/oauth/authorize?${query.toString()}`
}

/** GET authorize without following the redirect. */
export const authorize = (
  identity: string,
  params: Record<string, string | undefined>,
  auth: { readonly bearer?: string; readonly cookie?: string } = {}
) =>
  fetch(authorizeUrl(identity, params), {
    redirect: "manual",
    headers: {
      ...(auth.bearer !== undefined ? { authorization: `Bearer ${auth.bearer}` } : {}),
      ...(auth.cookie !== undefined ? { cookie: auth.cookie } : {})
    }
  })

/** The standard authorize parameters for a client. */
export const codeParams = (client: TestClient, extra: Record<string, string | undefined> = {}) => ({
  client_id: client.clientId,
  redirect_uri: client.redirectUri,
  response_type: "code",
  state: `st_${unique()}`,
  ...extra
})

/** Runs authorize with a Bearer token and returns the code from the 302 Location. */
export const getCode = async (
  identity: string,
  client: TestClient,
  bearer: string,
  extra: Record<string, string | undefined> = {}
) => {
  const params = codeParams(client, extra)
  const res = await authorize(identity, params, { bearer })
  const location = res.headers.get("location") ?? ""
  if (res.status !== 302 || !location.startsWith(client.redirectUri)) {
    throw new Error(`authorize did not redirect to the client: ${res.status} ${location} ${await res.text()}`)
  }
  const url = new URL(location)
  const code = url.searchParams.get("code")
  if (code === null) throw new Error(`no code: ${location}`)
  return { code, state: params.state, location: url }
}

export interface TokenCall {
  readonly status: number
  readonly body: any
  readonly headers: Headers
}

/** POST /oauth/token, form-encoded by default, client_secret_post unless `basic`. */
export const tokenRequest = async (
  identity: string,
  params: Record<string, string | undefined>,
  options: { readonly json?: boolean; readonly basic?: { readonly id: string; readonly secret: string } } = {}
): Promise<TokenCall> => {
  const clean: Record<string, string> = {}
  for (const [key, value] of Object.entries(params)) if (value !== undefined) clean[key] = value
  const headers: Record<string, string> = {
    "content-type": options.json === true ? "application/json" : "application/x-www-form-urlencoded"
  }
  if (options.basic !== undefined) {
    const encode = (s: string) => encodeURIComponent(s)
    headers.authorization = `Basic ${
      Buffer.from(`${encode(options.basic.id)}:${encode(options.basic.secret)}`).toString("base64")
    }`
  }
  const res = await fetch(`${identity}/api/v1/oauth/token`, {
    method: "POST",
    headers,
    body: options.json === true ? JSON.stringify(clean) : new URLSearchParams(clean).toString()
  })
  const text = await res.text()
  return { status: res.status, body: text === "" ? null : JSON.parse(text), headers: res.headers }
}

/** Code -> tokens for a confidential client (client_secret_post). */
export const exchangeCode = (
  identity: string,
  client: TestClient,
  code: string,
  extra: Record<string, string | undefined> = {}
) =>
  tokenRequest(identity, {
    grant_type: "authorization_code",
    code,
    redirect_uri: client.redirectUri,
    client_id: client.clientId,
    client_secret: client.secret ?? undefined,
    ...extra
  })

export const refreshRequest = (
  identity: string,
  client: TestClient,
  refreshToken: string,
  extra: Record<string, string | undefined> = {}
) =>
  tokenRequest(identity, {
    grant_type: "refresh_token",
    refresh_token: refreshToken,
    client_id: client.clientId,
    client_secret: client.secret ?? undefined,
    ...extra
  })

/** A full code flow: tokens for `user` at `client` with `scope`. */
export const tokensFor = async (
  identity: string,
  client: TestClient,
  user: LoggedIn,
  scope = "openid profile email"
) => {
  const { code } = await getCode(identity, client, user.accessToken, { scope })
  const res = await exchangeCode(identity, client, code)
  if (res.status !== 200) throw new Error(`token exchange failed: ${res.status} ${JSON.stringify(res.body)}`)
  return res.body as { access_token: string; refresh_token: string; id_token?: string; scope?: string }
}

export const bearerGet = (url: string, token: string) => fetch(url, { headers: { authorization: `Bearer ${token}` } })

/** The value of a hidden form field in a page (entities decoded). */
export const hiddenValue = (html: string, name: string): string => {
  const match = new RegExp(`name="${name}" value="([^"]*)"`).exec(html)
  if (match === null) throw new Error(`no field ${name} in page`)
  return match[1]!.replace(/&quot;/g, "\"").replace(/&#39;/g, "'").replace(/&lt;/g, "<").replace(/&gt;/g, ">")
    .replace(/&amp;/g, "&")
}

/** `name=value` pairs of every Set-Cookie of a response, for a Cookie header. */
export const cookiesOf = (res: Response): Array<string> => res.headers.getSetCookie().map((c) => c.split(";")[0]!)

/**
 * Walks the consent page as a browser would: GET it with the session cookie, post the decision with
 * the page's CSRF token. Answers the POST's response (303 on success).
 */
export const decideConsent = async (consentUrl: string, sessionCookie: string, decision: "approve" | "deny") => {
  const page = await fetch(consentUrl, { headers: { cookie: sessionCookie }, redirect: "manual" })
  const html = await page.text()
  if (page.status !== 200) throw new Error(`consent page: ${page.status} ${html}`)
  const cookies = [sessionCookie, ...cookiesOf(page)].join("; ")
  const action = new URL("/api/v1/ui/consent", consentUrl).toString()
  const res = await fetch(action, {
    method: "POST",
    redirect: "manual",
    headers: { cookie: cookies, "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ csrf: hiddenValue(html, "csrf"), request: hiddenValue(html, "request"), decision })
      .toString()
  })
  return { res, html, cookies }
}

/** A new user, signed in through `POST /auth/login`. */
export const signIn = (
  identity: string,
  input: { readonly roles?: ReadonlyArray<string>; readonly name?: string; readonly emailVerified?: boolean } = {}
) =>
  Effect.flatMap(
    createUser(input),
    (user) => Effect.map(Effect.promise(() => login(identity, user)), (session) => ({ ...session, user }))
  )

/**
 * `it.layer` options for the identity tests. `excludeTestServices`: without it @effect/vitest builds
 * the layer with the TestClock, and the servers would sign tokens dated 1970.
 */
export const serverLayerOptions = { timeout: "120 seconds", excludeTestServices: true } as const
