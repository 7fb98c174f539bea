/**
 * Baseline for the platform benchmark: a plain `node:http` server answering the same JSON as
 * `/healthz` and `/v2/credential` (with an equivalent in-memory credential cache), with none of
 * our stack: no Effect, no middleware.
 */
import * as Crypto from "node:crypto"
import * as Http from "node:http"

const port = Number(process.env.PORT)
const cache = new Map<string, string>()
const health = JSON.stringify({ status: "ok" })

Http.createServer((req, res) => {
  if (req.url === "/healthz") {
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(health) })
    res.end(health)
    return
  }
  if (req.url === "/v2/credential") {
    const token = (req.headers.authorization ?? "").replace(/^Bearer /i, "")
    const hash = Crypto.createHash("sha256").update(token).digest("hex")
    let body = cache.get(hash)
    if (body === undefined) {
      body = JSON.stringify({
        object: "credential",
        kind: "api_key",
        id: "1",
        site: "bench",
        scopes: ["catalog:read"],
        content_limit: "sfw",
        user_id: null
      })
      cache.set(hash, body)
    }
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) })
    res.end(body)
    return
  }
  res.writeHead(404)
  res.end()
}).listen(port, "127.0.0.1")
