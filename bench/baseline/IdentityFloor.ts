/**
 * The floor of the identity benchmark: what this design costs with none of our stack. Plain
 * `node:http` + `pg` on our server's database, doing the work our provider must do per request
 * and nothing else:
 *
 * - `authorization_code`: the two statements of src/identity/oauth/Grants.ts (`redeemCode`, then
 *   `createFamily`), the PKCE S256 check, and two RS256 signatures (the RFC 9068 access token and the
 *   id_token);
 * - `refresh_token`: the one rotation statement of `Grants.rotate`, and the same two signatures;
 * - userinfo: one RS256 verification and the liveness statement of `TokenLiveness.liveUser`.
 *
 * It knows the one bench client from its environment (no client lookup), checks no rate limit,
 * and answers only the success path. So it is not a provider; it bounds what any provider built on
 * these two choices (state in PostgreSQL shared by processes, JWT access tokens) can reach here.
 */
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import Pg from "pg"

const port = Number(process.env.PORT)
const issuer = process.env.ISSUER!
const clientId = process.env.CLIENT_ID!
const secretHash = Crypto.createHash("sha256").update(process.env.CLIENT_SECRET!).digest()
const jwk = JSON.parse(process.env.SIGNING_JWK!) as Crypto.JsonWebKey & { kid: string }
const privateKey = Crypto.createPrivateKey({ key: jwk, format: "jwk" })
const publicKey = Crypto.createPublicKey(privateKey)
const pool = new Pg.Pool({ connectionString: process.env.DATABASE_URL, max: 20, application_name: "bench-floor" })
pool.on("error", () => {})

const user = "u.id, u.sub, u.email, u.name, u.picture, u.password_hash, u.roles, u.banned, u.updated_at"
const siteRoles = (column: string, param: string) =>
  `ARRAY(SELECT r.role FROM user_site_roles r WHERE r.user_id = ${column} AND r.site = ${param} ORDER BY r.role)
     AS site_roles`
const statements = {
  redeem: `WITH code AS (
      UPDATE authorization_codes SET consumed_at = now() WHERE code_hash = $1 AND consumed_at IS NULL
      RETURNING client_id, user_id, session_id, redirect_uri, scopes, nonce, code_challenge,
                code_challenge_method, auth_time, expires_at > now() AS fresh)
    SELECT code.*, ${user}, ${siteRoles("u.id", "$2")} FROM code JOIN users u ON u.id = code.user_id`,
  family: `WITH code AS (
      SELECT code_hash FROM authorization_codes WHERE code_hash = $1 AND replayed_at IS NULL FOR UPDATE),
    family AS (
      INSERT INTO refresh_families (id, client_id, user_id, code_hash, session_id, auth_time, expires_at)
      SELECT gen_random_uuid(), $2, $3, code.code_hash, $4, $5, now() + make_interval(secs => $6) FROM code
      RETURNING id, client_id, user_id, auth_time, expires_at),
    token AS (
      INSERT INTO refresh_tokens (token_hash, family_id, client_id, user_id, scopes, auth_time, expires_at)
      SELECT $7, id, client_id, user_id, $8::text[], auth_time, expires_at FROM family)
    SELECT id::text AS id FROM family`,
  rotate: `WITH old AS (
      UPDATE refresh_tokens t SET rotated_at = now(), replaced_by = $2
      FROM refresh_families f, users u
      WHERE t.token_hash = $1 AND t.client_id = $3 AND t.rotated_at IS NULL AND t.revoked_at IS NULL
        AND t.expires_at > now() AND t.scopes @> $4::text[] AND f.id = t.family_id AND f.revoked_at IS NULL
        AND u.id = t.user_id AND NOT u.banned
      RETURNING t.family_id, t.client_id, t.user_id, t.scopes, t.auth_time, t.expires_at, ${user}),
    successor AS (
      INSERT INTO refresh_tokens (token_hash, family_id, client_id, user_id, scopes, auth_time, expires_at)
      SELECT $2, family_id, client_id, user_id, scopes, auth_time, expires_at FROM old)
    SELECT old.*, ${siteRoles("old.id", "$5")} FROM old`,
  live: `SELECT ${user}, ${siteRoles("u.id", "$2")}
    FROM (SELECT f.user_id FROM refresh_families f WHERE f.id = $1::uuid AND f.revoked_at IS NULL) AS holder
    JOIN users u ON u.id = holder.user_id WHERE NOT u.banned`
}
const run = (name: keyof typeof statements, values: Array<unknown>) =>
  pool.query({ name, text: statements[name], values }).then((result) => result.rows as Array<Record<string, any>>)

const sha256 = (value: string) => Crypto.createHash("sha256").update(value).digest("hex")
const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url")

/** An RS256 JWS, signed on the thread pool like WebCrypto's `sign`. */
const sign = (payload: Record<string, unknown>, typ: string) =>
  new Promise<string>((resolve, reject) => {
    const input = `${b64({ alg: "RS256", kid: jwk.kid, typ })}.${b64(payload)}`
    Crypto.sign("sha256", Buffer.from(input), privateKey, (error, signature) =>
      error ? reject(error) : resolve(`${input}.${signature.toString("base64url")}`))
  })

const tokens = async (row: Record<string, any>, scopes: Array<string>, familyId: string, refresh: string) => {
  const iat = Math.floor(Date.now() / 1000)
  const authTime = Math.floor((row.auth_time as Date).getTime() / 1000)
  const access = await sign({
    iss: issuer,
    sub: row.sub,
    aud: clientId,
    client_id: clientId,
    scope: scopes.join(" "),
    jti: Crypto.randomUUID(),
    iat,
    exp: iat + 900,
    uid: Number(row.id),
    roles: row.roles,
    site_roles: row.site_roles,
    fid: familyId,
    auth_time: authTime
  }, "at+jwt")
  const idToken = await sign({
    ...(scopes.includes("profile") ? { name: row.name, picture: row.picture } : {}),
    ...(scopes.includes("email") ? { email: row.email } : {}),
    iss: issuer,
    sub: row.sub,
    aud: clientId,
    azp: clientId,
    iat,
    exp: iat + 3600,
    auth_time: authTime,
    ...(row.nonce ? { nonce: row.nonce } : {}),
    at_hash: Crypto.createHash("sha256").update(access).digest().subarray(0, 16).toString("base64url")
  }, "JWT")
  return {
    access_token: access,
    token_type: "Bearer",
    expires_in: 900,
    refresh_token: refresh,
    scope: scopes.join(" "),
    id_token: idToken
  }
}

const exchange = async (form: URLSearchParams) => {
  const presented = Crypto.createHash("sha256").update(form.get("client_secret") ?? "").digest()
  if (form.get("client_id") !== clientId || !Crypto.timingSafeEqual(presented, secretHash)) return undefined
  const refresh = Crypto.randomBytes(32).toString("base64url")
  if (form.get("grant_type") === "authorization_code") {
    const codeHash = sha256(form.get("code") ?? "")
    const [code] = await run("redeem", [codeHash, null])
    if (code === undefined || !code.fresh || code.redirect_uri !== form.get("redirect_uri")) return undefined
    const challenge = Crypto.createHash("sha256").update(form.get("code_verifier") ?? "").digest("base64url")
    if (challenge !== code.code_challenge) return undefined
    const [family] = await run("family", [
      codeHash,
      clientId,
      code.user_id,
      code.session_id,
      code.auth_time,
      90 * 86400,
      sha256(refresh),
      code.scopes
    ])
    return family === undefined ? undefined : tokens(code, code.scopes, family.id, refresh)
  }
  if (form.get("grant_type") === "refresh_token") {
    const [token] = await run("rotate", [sha256(form.get("refresh_token") ?? ""), sha256(refresh), clientId, [], null])
    return token === undefined ? undefined : tokens(token, token.scopes, token.family_id, refresh)
  }
  return undefined
}

const userinfo = async (authorization: string | undefined) => {
  const [header, payload, signature] = (authorization ?? "").replace(/^Bearer /i, "").split(".")
  if (header === undefined || payload === undefined || signature === undefined) return undefined
  const valid = await new Promise<boolean>((resolve) =>
    Crypto.verify(
      "sha256",
      Buffer.from(`${header}.${payload}`),
      publicKey,
      Buffer.from(signature, "base64url"),
      (error, ok) => resolve(error === null && ok)
    )
  )
  if (!valid) return undefined
  const claims = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"))
  if (claims.iss !== issuer || claims.exp < Date.now() / 1000) return undefined
  const [row] = await run("live", [claims.fid, null])
  if (row === undefined) return undefined
  const scopes = (claims.scope as string).split(" ")
  return {
    sub: row.sub,
    ...(scopes.includes("profile") ? { name: row.name, picture: row.picture } : {}),
    ...(scopes.includes("email") ? { email: row.email } : {}),
    roles: ["user", ...row.roles],
    site_roles: row.site_roles
  }
}

const send = (res: Http.ServerResponse, body: unknown) => {
  const text = body === undefined ? JSON.stringify({ error: "invalid_grant" }) : JSON.stringify(body)
  res.writeHead(body === undefined ? 400 : 200, {
    "content-type": "application/json",
    "cache-control": "no-store",
    "content-length": Buffer.byteLength(text)
  })
  res.end(text)
}

Http.createServer((req, res) => {
  if (req.url === "/healthz") return send(res, { status: "ok" })
  if (req.url === "/userinfo") {
    userinfo(req.headers.authorization).then((body) => send(res, body), () => send(res, undefined))
    return
  }
  if (req.url !== "/token" || req.method !== "POST") return send(res, undefined)
  let raw = ""
  req.setEncoding("utf8")
  req.on("data", (chunk: string) => (raw += chunk))
  req.on("end", () => exchange(new URLSearchParams(raw)).then((body) => send(res, body), () => send(res, undefined)))
}).listen(port, "127.0.0.1")
