/**
 * With an https issuer (the server itself still listens on http here): the session and CSRF cookies
 * carry the `__Host-` prefix, so they are `Secure`, `Path=/` and without `Domain` (RFC 6265bis
 * section 4.1.3.2), and every answer carries `Strict-Transport-Security` (RFC 6797). Over an http
 * issuer neither.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  codeParams,
  cookiesOf,
  createClient,
  createUser,
  hiddenValue,
  IdentityServers,
  IdentityTestEnv,
  serverLayerOptions
} from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const HTTPS_ISSUER = "https://id.example/api/v1"

const postLogin = (identity: string, user: { email: string; password: string }) =>
  fetch(`${identity}/api/v1/auth/login`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ email: user.email, password: user.password })
  })

/** The `Set-Cookie` line of cookie `name`. */
const setCookieOf = (res: Response, name: string) =>
  res.headers.getSetCookie().find((line) => line.startsWith(`${name}=`)) ?? ""

describe("cookies and HSTS over an https issuer", () => {
  it.layer(IdentityTestEnv({ IDENTITY_ISSUER: HTTPS_ISSUER }), serverLayerOptions)((it) => {
    it.effect("RFC 6265bis 4.1.3.2: the session cookie is __Host-shiori_session; Secure; Path=/; no Domain", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const res = yield* promise(() => postLogin(identity, user))
        expect(res.status).toBe(200)
        const cookie = setCookieOf(res, "__Host-shiori_session")
        expect(cookie).toMatch(/^__Host-shiori_session=[A-Za-z0-9_-]{43};/)
        expect(cookie).toMatch(/; Path=\/(;|$)/)
        expect(cookie).toMatch(/; Secure/)
        expect(cookie).toMatch(/; HttpOnly/)
        expect(cookie).toMatch(/; SameSite=Lax/)
        expect(cookie).not.toMatch(/Domain=/i)
        expect(res.headers.getSetCookie().some((line) => line.startsWith("shiori_session="))).toBe(false)
        expect(res.headers.get("strict-transport-security")).toBe("max-age=31536000; includeSubDomains")

        // The prefixed cookie is the session: authorize recognises it (an auto-consent client gets a
        // code), the unprefixed name is not read.
        const client = yield* createClient()
        const sessionCookie = cookie.split(";")[0]!
        const authorize = (cookieHeader: string) =>
          promise(() =>
            fetch(`${identity}/api/v1/oauth/authorize?${new URLSearchParams(codeParams(client)).toString()}`, {
              redirect: "manual",
              headers: { cookie: cookieHeader }
            })
          ).pipe(Effect.map((r) => r.headers.get("location") ?? ""))
        expect(yield* authorize(sessionCookie)).toMatch(new RegExp(`^${client.redirectUri}\\?code=`))
        expect(yield* authorize(sessionCookie.replace(/^__Host-/, ""))).toMatch(
          new RegExp(`^${HTTPS_ISSUER}/ui/login\\?`)
        )
      }))

    it.effect("the CSRF cookie is __Host-shiori_csrf, the sign-in form works with it, logout clears at Path=/", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const form = yield* promise(() => fetch(`${identity}/api/v1/ui/login`))
        const csrfCookie = setCookieOf(form, "__Host-shiori_csrf")
        expect(csrfCookie).toMatch(/^__Host-shiori_csrf=[A-Za-z0-9_-]{43};/)
        expect(csrfCookie).toMatch(/; Path=\/(;|$)/)
        expect(csrfCookie).toMatch(/; Secure/)
        expect(csrfCookie).not.toMatch(/Domain=/i)
        expect(form.headers.get("strict-transport-security")).toBe("max-age=31536000; includeSubDomains")
        const html = yield* promise(() => form.text())
        const submitted = yield* promise(() =>
          fetch(`${identity}/api/v1/ui/login`, {
            method: "POST",
            redirect: "manual",
            headers: { cookie: cookiesOf(form).join("; "), "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({ csrf: hiddenValue(html, "csrf"), email: user.email, password: user.password })
              .toString()
          })
        )
        expect(submitted.status).toBe(200)
        const session = setCookieOf(submitted, "__Host-shiori_session").split(";")[0]!
        expect(session).toMatch(/^__Host-shiori_session=/)

        const logoutPage = yield* promise(() =>
          fetch(`${identity}/api/v1/ui/logout`, { headers: { cookie: [session, ...cookiesOf(form)].join("; ") } })
        )
        const logoutHtml = yield* promise(() => logoutPage.text())
        const done = yield* promise(() =>
          fetch(`${identity}/api/v1/ui/logout`, {
            method: "POST",
            redirect: "manual",
            headers: {
              cookie: [session, ...cookiesOf(form)].join("; "),
              "content-type": "application/x-www-form-urlencoded"
            },
            body: new URLSearchParams({
              csrf: hiddenValue(logoutHtml, "csrf"),
              decision: "logout",
              client_id: "",
              redirect: "",
              state: ""
            }).toString()
          })
        )
        expect(done.status).toBe(200)
        const cleared = setCookieOf(done, "__Host-shiori_session")
        expect(cleared).toMatch(/^__Host-shiori_session=;/)
        expect(cleared).toMatch(/; Path=\/(;|$)/)
        expect(cleared).toMatch(/Max-Age=0|Expires=Thu, 01 Jan 1970/)
      }))

    it.effect("RFC 6797: every answer carries HSTS, errors and protocol JSON included", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        for (
          const path of [
            "/api/v1/.well-known/openid-configuration",
            "/api/v1/oauth/jwks",
            "/api/v1/no-such-thing",
            "/api/v1/auth/me"
          ]
        ) {
          const res = yield* promise(() => fetch(`${identity}${path}`))
          expect(res.headers.get("strict-transport-security"), path).toBe("max-age=31536000; includeSubDomains")
        }
      }))
  })

  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect("over an http issuer: no HSTS, no __Host- prefix, the cookie stays under /api/v1", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const res = yield* promise(() => postLogin(identity, user))
        expect(res.headers.get("strict-transport-security")).toBeNull()
        expect(setCookieOf(res, "shiori_session")).toMatch(/; Path=\/api\/v1/)
        expect(res.headers.getSetCookie().some((line) => line.startsWith("__Host-"))).toBe(false)
      }))
  })
})
