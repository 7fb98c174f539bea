/**
 * Baseline for the identity benchmark: `oidc-provider` (the certified Node OpenID provider) configured
 * as close to ours as is fair: the same RS256 signing key (our active private JWK, `SIGNING_JWK`), one
 * confidential client (`client_secret_post`), grants `authorization_code` + `refresh_token`, PKCE
 * required (S256), a refresh token on every code exchange, rotated on every use, an id_token with
 * `name`/`picture`/`email` claims on every grant with `openid`, userinfo enabled, our lifetimes
 * (access token 900 s, code 600 s, id_token 3600 s, refresh 90 days). Access tokens keep the
 * provider's default format (opaque, looked up in storage); ours are RS256 JWTs.
 *
 * Storage is in memory. The provider's own development adapter is an LRU capped at 1000 entries,
 * which would evict a pool of pre-minted codes, so this file carries the same adapter logic over a
 * plain `Map` (expiry on read, grant index for revocation).
 *
 * `GET /bench/codes?count=N&code_challenge=C&nonce=X` (a bench-only side route on the same port)
 * mints N authorization codes through the provider's model classes (`Grant` + `AuthorizationCode`),
 * as its interactive login and consent would, without the pages.
 */
import * as Http from "node:http"
import Provider, { type Adapter, type AdapterPayload } from "oidc-provider"

const port = Number(process.env.PORT)
const issuer = `http://127.0.0.1:${port}`
const clientId = process.env.CLIENT_ID!
const clientSecret = process.env.CLIENT_SECRET!
const redirectUri = process.env.REDIRECT_URI!
const signingJwk = JSON.parse(process.env.SIGNING_JWK!)

/** The one account, shaped like our userinfo (`name`, `picture` with profile; `email` with email). */
const account = {
  sub: process.env.ACCOUNT_SUB ?? "bench-user",
  name: "Bench Reader",
  picture: "",
  email: "bench@example.com",
  email_verified: true,
  updated_at: Math.floor(Date.now() / 1000)
}

// ---------------------------------------------------------------------------------------------
// In-memory adapter: oidc-provider's MemoryAdapter over an unbounded Map
// ---------------------------------------------------------------------------------------------

interface Entry {
  readonly payload: AdapterPayload
  readonly expiresAt: number
}

const store = new Map<string, Entry>()
const grants = new Map<string, Set<string>>()
const grantable = new Set(["AccessToken", "AuthorizationCode", "RefreshToken", "DeviceCode"])

const read = (key: string): AdapterPayload | undefined => {
  const entry = store.get(key)
  if (entry === undefined) return undefined
  if (entry.expiresAt <= Date.now()) {
    store.delete(key)
    return undefined
  }
  return entry.payload
}

class MapAdapter implements Adapter {
  constructor(private readonly model: string) {}
  private key(id: string) {
    return `${this.model}:${id}`
  }
  async upsert(id: string, payload: AdapterPayload, expiresIn?: number) {
    const key = this.key(id)
    store.set(key, { payload, expiresAt: expiresIn === undefined ? Infinity : Date.now() + expiresIn * 1000 })
    if (this.model === "Session" && payload.uid !== undefined) {
      store.set(`sessionUid:${payload.uid}`, { payload: { jti: id }, expiresAt: Infinity })
    }
    if (grantable.has(this.model) && payload.grantId !== undefined) {
      let members = grants.get(payload.grantId)
      if (members === undefined) grants.set(payload.grantId, members = new Set())
      members.add(key)
    }
  }
  async find(id: string) {
    return read(this.key(id))
  }
  async findByUid(uid: string) {
    const id = read(`sessionUid:${uid}`)?.jti
    return id === undefined ? undefined : this.find(id)
  }
  async findByUserCode() {
    return undefined
  }
  async consume(id: string) {
    const payload = read(this.key(id))
    if (payload !== undefined) payload.consumed = Math.floor(Date.now() / 1000)
  }
  async destroy(id: string) {
    const key = this.key(id)
    const payload = read(key)
    store.delete(key)
    if (payload?.grantId !== undefined) grants.get(payload.grantId)?.delete(key)
  }
  async revokeByGrantId(grantId: string) {
    for (const key of grants.get(grantId) ?? []) store.delete(key)
    grants.delete(grantId)
  }
}

// ---------------------------------------------------------------------------------------------
// Provider
// ---------------------------------------------------------------------------------------------

const provider = new Provider(issuer, {
  adapter: MapAdapter,
  jwks: { keys: [signingJwk] },
  clients: [{
    client_id: clientId,
    client_secret: clientSecret,
    redirect_uris: [redirectUri],
    grant_types: ["authorization_code", "refresh_token"],
    response_types: ["code"],
    token_endpoint_auth_method: "client_secret_post"
  }],
  claims: {
    openid: ["sub"],
    profile: ["name", "picture", "updated_at"],
    email: ["email", "email_verified"]
  },
  // Ours puts the scope's claims in the id_token too.
  conformIdTokenClaims: false,
  findAccount: async (_ctx, sub) => sub === account.sub ? { accountId: sub, claims: () => account } : undefined,
  pkce: { required: () => true },
  // Ours issues a refresh token on every exchange (not only with offline_access) and rotates it on every use.
  issueRefreshToken: async () => true,
  rotateRefreshToken: true,
  ttl: {
    AccessToken: 900,
    AuthorizationCode: 600,
    IdToken: 3600,
    RefreshToken: 90 * 24 * 3600,
    Grant: 90 * 24 * 3600,
    Session: 90 * 24 * 3600,
    Interaction: 3600
  },
  cookies: { keys: ["bench-baseline-cookie-key"] },
  features: { devInteractions: { enabled: false }, userinfo: { enabled: true } }
})

/** N fresh codes, each with its own grant, as a completed login + consent would leave them. */
const mintCodes = async (count: number, codeChallenge: string, nonce: string | undefined) => {
  const client = await provider.Client.find(clientId)
  if (client === undefined) throw new Error("bench client missing")
  const scope = "openid profile email"
  const authTime = Math.floor(Date.now() / 1000)
  const codes: Array<string> = []
  for (let i = 0; i < count; i++) {
    const grant = new provider.Grant({ clientId, accountId: account.sub })
    grant.addOIDCScope(scope)
    const grantId = await grant.save()
    const code = new provider.AuthorizationCode({
      client,
      accountId: account.sub,
      grantId,
      gty: "authorization_code",
      scope,
      redirectUri,
      codeChallenge,
      codeChallengeMethod: "S256",
      authTime,
      expiresWithSession: false,
      ...(nonce !== undefined ? { nonce } : {})
    })
    codes.push(await code.save())
  }
  return codes
}

const handle = provider.callback()

Http.createServer((req, res) => {
  if (req.url?.startsWith("/bench/codes?")) {
    const params = new URL(req.url, issuer).searchParams
    mintCodes(Number(params.get("count")), params.get("code_challenge")!, params.get("nonce") ?? undefined).then(
      (codes) => {
        res.writeHead(200, { "content-type": "application/json" })
        res.end(JSON.stringify({ codes }))
      },
      (error) => {
        res.writeHead(500, { "content-type": "text/plain" })
        res.end(String(error))
      }
    )
    return
  }
  if (req.url === "/healthz") {
    res.writeHead(200, { "content-type": "application/json" })
    res.end("{\"status\":\"ok\"}")
    return
  }
  handle(req, res)
}).listen(port, "127.0.0.1")
