/**
 * HTTP requests `fetch` cannot make: bodies of any size streamed from one small reused buffer (so
 * the test process's memory measures the server, not the client), declared with `Content-Length`
 * or sent chunked, stopping as soon as the answer arrives; and requests written byte for byte
 * (invalid UTF-8 in the request line, malformed headers).
 */
import * as Http from "node:http"
import * as Net from "node:net"

export interface RawAnswer {
  readonly status: number
  readonly headers: Http.IncomingHttpHeaders
  readonly body: string
  /** Milliseconds from the first byte written to the status line. */
  readonly ms: number
  /** Body bytes handed to the socket before the answer came (or the socket closed). */
  readonly sent: number
}

const FILL = Buffer.alloc(64 * 1024, "a")

/**
 * POSTs (by default) `total` body bytes to `url`: declared with `Content-Length: total` unless
 * `chunked`, in which case Node frames it with `Transfer-Encoding: chunked` and sends no length.
 * Writing stops once the status line has arrived; a socket error after it is expected (the server
 * closes a connection whose body it refused) and ignored.
 */
export const sendBody = (url: string, options: {
  readonly total: number
  readonly chunked?: boolean
  readonly method?: string
  readonly headers?: Readonly<Record<string, string>>
}): Promise<RawAnswer> =>
  new Promise((resolve, reject) => {
    const started = Date.now()
    let sent = 0
    let answered = false
    const headers: Record<string, string> = {
      "content-type": "application/x-www-form-urlencoded",
      ...options.headers
    }
    if (options.chunked !== true) headers["content-length"] = String(options.total)
    const req = Http.request(url, { method: options.method ?? "POST", headers, agent: false }, (res) => {
      answered = true
      const ms = Date.now() - started
      const chunks: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => chunks.push(chunk))
      const done = () =>
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString(), ms, sent })
      res.once("end", done)
      res.once("error", done)
      res.once("aborted", done)
    })
    req.on("error", (error) => {
      if (!answered) reject(error)
    })
    const pump = () => {
      while (!answered && sent < options.total) {
        const n = Math.min(FILL.length, options.total - sent)
        sent += n
        if (!req.write(n === FILL.length ? FILL : FILL.subarray(0, n))) {
          req.once("drain", pump)
          return
        }
      }
      if (!answered) req.end()
    }
    pump()
  })

/** Writes `bytes` on a fresh connection and answers the status code and the rest of what came back. */
export const rawRequest = (port: number, bytes: Buffer): Promise<{ readonly status: number; readonly text: string }> =>
  new Promise((resolve, reject) => {
    const socket = Net.connect(port, "127.0.0.1", () => socket.end(bytes))
    const chunks: Array<Buffer> = []
    socket.on("data", (chunk) => chunks.push(chunk))
    socket.once("error", reject)
    socket.once("close", () => {
      const text = Buffer.concat(chunks).toString("latin1")
      const match = /^HTTP\/1\.[01] (\d{3})/.exec(text)
      resolve({ status: match === null ? 0 : Number(match[1]), text })
    })
  })
