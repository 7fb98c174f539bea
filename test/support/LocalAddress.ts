/**
 * HTTP requests from a chosen loopback address. Linux routes all of 127.0.0.0/8 to the loopback
 * interface, so binding the client socket to 127.0.0.2, 127.0.0.3, ... gives the server callers
 * with different peer addresses on one machine.
 */
import * as Http from "node:http"

export interface Reply {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  /** `Set-Cookie` lines, one per cookie. */
  readonly setCookies: ReadonlyArray<string>
}

export const requestFrom = (localAddress: string, url: string, init: {
  readonly method?: string
  readonly headers?: Record<string, string>
  readonly body?: string
} = {}): Promise<Reply> =>
  new Promise((resolve, reject) => {
    const target = new URL(url)
    const body = init.body ?? ""
    const req = Http.request({
      host: target.hostname,
      port: target.port,
      path: `${target.pathname}${target.search}`,
      method: init.method ?? (init.body === undefined ? "GET" : "POST"),
      localAddress,
      agent: false,
      headers: { ...init.headers, ...(init.body === undefined ? {} : { "content-length": Buffer.byteLength(body) }) }
    }, (res) => {
      let text = ""
      res.setEncoding("utf8")
      res.on("data", (chunk) => text += chunk)
      res.on("end", () => {
        const headers = new Headers()
        for (const [name, value] of Object.entries(res.headers)) {
          if (typeof value === "string") headers.set(name, value)
        }
        const setCookies = res.headers["set-cookie"] ?? []
        resolve({ status: res.statusCode!, headers, text, setCookies })
      })
    })
    req.on("error", reject)
    req.end(init.body === undefined ? undefined : body)
  })

/** An identity answer with its envelope (README, "Envelope codes"). */
export interface EnvelopeReply extends Reply {
  readonly body: { code: number; message: string; data: any }
}

/**
 * An identity JSON call from `localAddress` (`path` below `/api/v1`), with an optional Bearer token
 * and JSON body; answers the status, the envelope, the raw text and the headers.
 */
export const envelopeCallFrom = async (
  localAddress: string,
  identity: string,
  method: string,
  path: string,
  options: { readonly token?: string; readonly body?: unknown; readonly headers?: Record<string, string> } = {}
): Promise<EnvelopeReply> => {
  const reply = await requestFrom(localAddress, `${identity}/api/v1${path}`, {
    method,
    headers: {
      ...(options.body === undefined ? {} : { "content-type": "application/json" }),
      ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
      ...options.headers
    },
    ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) })
  })
  return { ...reply, body: JSON.parse(reply.text) }
}

/** `POST /api/v1/auth/login` from `localAddress`; answers the status, the envelope and the headers. */
export const loginFrom = (
  localAddress: string,
  identity: string,
  credentials: { readonly email: string; readonly password: string },
  headers: Record<string, string> = {}
) => envelopeCallFrom(localAddress, identity, "POST", "/auth/login", { body: credentials, headers })
