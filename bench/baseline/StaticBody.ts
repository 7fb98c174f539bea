/**
 * Floor for the catalog benchmark's largest pages: a plain `node:http` server answering every
 * request with the same bytes from memory (`BODY_FILE`, e.g. a 100-work page with includes, about
 * 160 KB). Nothing is computed, so what it reaches is what this machine's loopback, kernel and load
 * generator allow for answers of that size.
 */
import * as Fs from "node:fs"
import * as Http from "node:http"

const port = Number(process.env.PORT)
const body = Fs.readFileSync(process.env.BODY_FILE!)

Http.createServer((req, res) => {
  if (req.url === "/healthz") {
    res.writeHead(200, { "content-type": "application/json", "content-length": 15 })
    res.end(`{"status":"ok"}`)
    return
  }
  res.writeHead(200, { "content-type": "application/json", "content-length": body.length })
  res.end(body)
}).listen(port, "127.0.0.1")
