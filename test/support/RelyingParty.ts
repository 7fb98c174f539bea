/**
 * A tiny confidential relying party on loopback for the browser tests: `/login` starts an
 * authorization code flow (RFC 6749 section 4.1) with a fresh state and PKCE S256 (RFC 7636),
 * `/callback` checks the state and `iss` (RFC 9207), redeems the code from its back end with
 * client_secret_basic and asks userinfo who signed in, and `/signed-out` is where RP-initiated
 * logout returns. Each successful callback is recorded in `signIns`.
 */
import { Effect } from "effect"
import * as Http from "node:http"
import type * as Net from "node:net"
import { pkcePair } from "./IdentityServers.js"

export interface RelyingParty {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  readonly url: string
  /** One entry per successful callback: the userinfo `sub` and the token response. */
  readonly signIns: Array<{ readonly sub: string; readonly tokens: Record<string, any> }>
  /** The registered client to use; set it before the first `/login`. */
  readonly setClient: (client: { clientId: string; secret: string }) => void
}

export interface RelyingPartyOptions {
  /** The scope requested at `/login`; `openid profile email` unless given. */
  readonly scope?: string
  /** The callback page's heading; `Welcome, <userinfo name>` unless given. */
  readonly greeting?: string
}

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** The relying party as a scoped resource: listening once acquired, closed on release. */
export const relyingParty = (issuer: string, options: RelyingPartyOptions = {}) =>
  Effect.acquireRelease(
    promise(() =>
      new Promise<RelyingParty & { server: Http.Server }>((resolve) => {
        const scope = options.scope ?? "openid profile email"
        const pending = new Map<string, string>()
        const signIns: RelyingParty["signIns"] = []
        let client = { clientId: "", secret: "" }
        let base = ""
        const server = Http.createServer(async (req, res) => {
          const url = new URL(req.url!, base)
          const html = (status: number, body: string) => {
            res.writeHead(status, { "content-type": "text/html; charset=utf-8" })
            res.end(`<!doctype html><html lang="en"><head><title>RP</title></head><body>${body}</body></html>`)
          }
          if (url.pathname === "/login") {
            const state = crypto.randomUUID()
            const pkce = pkcePair()
            pending.set(state, pkce.verifier)
            const authorize = new URL(`${issuer}/oauth/authorize`)
            authorize.search = new URLSearchParams({
              client_id: client.clientId,
              redirect_uri: `${base}/callback`,
              response_type: "code",
              scope,
              state,
              code_challenge: pkce.challenge,
              code_challenge_method: "S256"
            }).toString()
            res.writeHead(302, { location: authorize.href })
            return res.end()
          }
          if (url.pathname === "/callback") {
            const state = url.searchParams.get("state") ?? ""
            const verifier = pending.get(state)
            pending.delete(state)
            if (verifier === undefined || url.searchParams.get("iss") !== issuer) return html(400, "<h1>Bad state</h1>")
            const token = await fetch(`${issuer}/oauth/token`, {
              method: "POST",
              headers: {
                "content-type": "application/x-www-form-urlencoded",
                authorization: `Basic ${Buffer.from(`${client.clientId}:${client.secret}`).toString("base64")}`
              },
              body: new URLSearchParams({
                grant_type: "authorization_code",
                code: url.searchParams.get("code") ?? "",
                redirect_uri: `${base}/callback`,
                code_verifier: verifier
              }).toString()
            })
            const tokens = await token.json() as Record<string, any>
            if (token.status !== 200) return html(502, `<h1>Token error</h1><p>${tokens.error}</p>`)
            const info = await fetch(`${issuer}/oauth/userinfo`, {
              headers: { authorization: `Bearer ${tokens.access_token}` }
            }).then((r) => r.json() as Promise<Record<string, any>>)
            signIns.push({ sub: info.sub, tokens })
            const greeting = options.greeting ?? `Welcome, ${info.name}`
            return html(200, `<h1>${greeting}</h1><p id="sub">${info.sub}</p>`)
          }
          if (url.pathname === "/signed-out") {
            return html(200, `<h1>Signed out of the RP</h1><p id="state">${url.searchParams.get("state")}</p>`)
          }
          html(404, "<h1>Not found</h1>")
        })
        server.listen(0, "127.0.0.1", () => {
          base = `http://127.0.0.1:${(server.address() as Net.AddressInfo).port}`
          resolve({ url: base, signIns, setClient: (c) => (client = c), server })
        })
      })
    ),
    ({ server }) => promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
  )
