/**
 * Baseline for the catalog benchmark: a plain `node:http` + `pg` server answering the first page of
 * `GET /v2/catalog/works?limit=N` for an nsfw credential with the same SQL our listing lane runs
 * (src/catalog/works/WorkSql.ts: `itemJsonSql(view=basic)`, gate `w.live`, sort `id`, `limit + 1` rows)
 * and the same JSON (items spliced as PostgreSQL built them, an HMAC-signed `next_cursor`), with an
 * in-memory credential cache like ours. None of our stack: no Effect, no schemas, no middleware.
 */
import * as Crypto from "node:crypto"
import * as Http from "node:http"
import Pg from "pg"

const port = Number(process.env.PORT)
const pool = new Pg.Pool({
  connectionString: process.env.DATABASE_URL,
  max: Number(process.env.DATABASE_POOL_SIZE ?? 20),
  application_name: "bench-baseline"
})
pool.on("error", () => {})

const utc = (column: string) => `to_char(${column} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
const itemJson = `json_build_object('object', 'work', 'id', w.id::text, 'display_name', w.display_name,
  'latin', w.latin, 'olang', w.olang, 'localized', w.localized,
  'released', CASE WHEN w.released_year IS NULL THEN NULL ELSE concat_ws('-', lpad(w.released_year::text, 4, '0'),
    lpad(w.released_month::text, 2, '0'), lpad(w.released_day::text, 2, '0')) END,
  'content_rating', CASE WHEN w.nsfw THEN 'nsfw' ELSE 'sfw' END, 'length_minutes', w.length_minutes,
  'platforms', w.platforms, 'media', w.media, 'popularity', w.popularity, 'updated_at', ${utc("w.updated_at")})::text`
const firstPage = `SELECT w.id::text AS id, NULL::text AS k0, ${itemJson} AS json
  FROM works w WHERE w.live AND TRUE AND TRUE ORDER BY w.id ASC LIMIT $1`

const key = Crypto.createHmac("sha256", "bench-baseline").update("shiori/cursor/v1").digest()
const cursorFor = (id: string) => {
  const payload = Buffer.from(JSON.stringify([1, "id", [], id, "digest"])).toString("base64url")
  return `cur_${payload}.${
    Crypto.createHmac("sha256", key).update(payload).digest().subarray(0, 16).toString("base64url")
  }`
}

const principals = new Map<string, string>()

const send = (res: Http.ServerResponse, status: number, body: string, type = "application/json") => {
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(body) })
  res.end(body)
}

Http.createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://localhost")
  if (url.pathname === "/healthz") return send(res, 200, JSON.stringify({ status: "ok" }))
  if (url.pathname !== "/v2/catalog/works") return send(res, 404, "")
  const token = (req.headers.authorization ?? "").replace(/^Bearer /i, "")
  if (token === "") return send(res, 401, JSON.stringify({ code: "MISSING_CREDENTIAL" }), "application/problem+json")
  const hash = Crypto.createHash("sha256").update(token).digest("hex")
  if (!principals.has(hash)) principals.set(hash, "nsfw")
  const limit = Number(url.searchParams.get("limit") ?? 20)
  if (!Number.isInteger(limit) || limit < 1 || limit > 100) {
    return send(res, 400, JSON.stringify({ code: "INVALID_PARAMETER" }), "application/problem+json")
  }
  pool.query<{ id: string; json: string }>(firstPage, [limit + 1]).then(
    ({ rows }) => {
      const items = rows.slice(0, limit)
      const next = rows.length > limit ? `,"next_cursor":"${cursorFor(items[items.length - 1]!.id)}"` : ""
      send(res, 200, `{"object":"list","items":[${items.map((r) => r.json).join(",")}]${next}}`)
    },
    () => send(res, 500, JSON.stringify({ code: "INTERNAL_ERROR" }), "application/problem+json")
  )
}).listen(port, "127.0.0.1")
