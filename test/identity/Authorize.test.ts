/**
 * `GET /api/v1/oauth/authorize` (README, "Flows"; RFC 6749 sections 3.1, 4.1.1, 4.1.2, 4.1.2.1; RFC 7636;
 * RFC 9207; OIDC Core 3.1.2.1; docs/decisions.md, "Identity: protocol") and the consent page behind it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Clock, Effect } from "effect"
import { SqlClient } from "effect/sql"
import { eventually } from "../support/Eventually.js"
import {
  authorize,
  codeParams,
  cookiesOf,
  createClient,
  createUser,
  decideConsent,
  exchangeCode,
  getCode,
  hiddenValue,
  IdentityServers,
  IdentityTestEnv,
  login,
  pkcePair,
  serverLayerOptions,
  signIn,
  tokensFor
} from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** Asserts a redirect back to the client with an RFC 6749 section 4.1.2.1 error. */
const expectErrorRedirect = (
  res: Response,
  redirectUri: string,
  error: string,
  state: string | undefined,
  iss: string
) => {
  expect(res.status).toBe(302)
  const location = new URL(res.headers.get("location")!)
  expect(`${location.origin}${location.pathname}`).toBe(redirectUri)
  expect(location.searchParams.get("error")).toBe(error)
  expect(location.searchParams.get("error_description")).toEqual(expect.any(String))
  expect(location.searchParams.get("state")).toBe(state ?? null)
  expect(location.searchParams.get("iss")).toBe(iss)
}

/** Asserts the error page: no redirect at all (docs/decisions.md, "Identity: protocol"). */
const expectErrorPage = async (res: Response, status: number, code: number) => {
  expect(res.status).toBe(status)
  expect(res.headers.get("location")).toBeNull()
  expect(res.headers.get("content-type")).toMatch(/^text\/html/)
  const html = await res.text()
  expect(html).toContain(`<html lang="en">`)
  expect(html).toContain(`Error code ${code}`)
}

describe("GET /api/v1/oauth/authorize", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect("Bearer user -> 302 to redirect_uri with a 64-hex code, the state echoed and iss (README, \"Flows\"; RFC 9207)", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const client = yield* createClient({ redirectUris: ["https://rp.example/cb?from=shiori"] })
        const session = yield* signIn(identity)
        const { code, location, state } = yield* promise(() => getCode(identity, client, session.accessToken))
        expect(code).toMatch(/^[0-9a-f]{64}$/)
        expect(location.searchParams.get("state")).toBe(state)
        expect(location.searchParams.get("iss")).toBe(issuer)
        // The registered URI's own query is kept (RFC 6749 section 3.1.2).
        expect(location.searchParams.get("from")).toBe("shiori")
      }))

    it.effect("RFC 3986 section 3.4: a redirect_uri sent unencoded in the query (\"//\" included) is read as sent", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient({ redirectUris: ["https://rp.example//cb"] })
        const session = yield* signIn(identity)
        const params = codeParams(client, { code_challenge: pkcePair().challenge })
        // A hand-written link: ":" and "/" are allowed in a query, so nothing is percent-encoded.
        const query = Object.entries(params).map(([key, value]) => `${key}=${value}`).join("&")
        const res = yield* promise(() =>
          fetch(`${identity}/api/v1/oauth/authorize?${query}`, {
            redirect: "manual",
            headers: { authorization: `Bearer ${session.accessToken}` }
          })
        )
        expect(res.status).toBe(302)
        const location = new URL(res.headers.get("location")!)
        expect(`${location.origin}${location.pathname}`).toBe("https://rp.example//cb")
        expect(location.searchParams.get("code")).toMatch(/^[0-9a-f]{64}$/)
      }))

    it.effect("the provider's session cookie works like the Bearer token (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const res = yield* promise(() => authorize(identity, codeParams(client), { cookie: session.cookie }))
        expect(res.status).toBe(302)
        expect(new URL(res.headers.get("location")!).searchParams.get("code")).toMatch(/^[0-9a-f]{64}$/)
      }))

    it.effect("with neither, the browser goes to the sign-in page and comes back (return_to) (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const client = yield* createClient()
        const params = codeParams(client, { scope: "openid" })
        const res = yield* promise(() => authorize(identity, params))
        expect(res.status).toBe(302)
        const location = new URL(res.headers.get("location")!)
        expect(`${location.origin}${location.pathname}`).toBe(`${issuer}/ui/login`)
        const returnTo = location.searchParams.get("return_to")!
        expect(returnTo.startsWith("/api/v1/oauth/authorize?")).toBe(true)
        expect(new URL(returnTo, identity).searchParams.get("state")).toBe(params.state)
      }))

    it.effect("an unknown or missing client never redirects: error page (15001 / 15007) (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const unknown = yield* promise(() =>
          authorize(identity, {
            ...codeParams({ clientId: "nope", redirectUri: "https://evil.example/cb", secret: null })
          })
        )
        yield* promise(() => expectErrorPage(unknown, 404, 15001))
        const missing = yield* promise(() =>
          authorize(identity, { redirect_uri: "https://evil.example/cb", response_type: "code", state: "s" })
        )
        yield* promise(() => expectErrorPage(missing, 400, 15007))
        // An API caller asking for JSON gets the envelope instead of HTML, still without a redirect.
        const json = yield* promise(() =>
          fetch(`${identity}/api/v1/oauth/authorize?client_id=nope&redirect_uri=x&response_type=code&state=s`, {
            redirect: "manual",
            headers: { accept: "application/json" }
          })
        )
        expect(json.status).toBe(404)
        expect(yield* promise(() => json.json())).toEqual({ code: 15001, message: "Unknown client", data: null })
      }))

    it.effect("RFC 6749 3.1.2.3: redirect_uri must match exactly; any variation is an error page, never a redirect", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient({ redirectUris: ["https://rp.example/callback"] })
        const session = yield* signIn(identity)
        for (
          const redirectUri of [
            "https://rp.example/callback/",
            "https://rp.example/callback?x=1",
            "https://RP.example/callback",
            "https://rp.example:443/callback",
            "https://rp.example/Callback",
            "http://rp.example/callback",
            "https://rp.example.evil.example/callback",
            "https://evil.example/callback"
          ]
        ) {
          const res = yield* promise(() =>
            authorize(identity, codeParams({ ...client, redirectUri }), { bearer: session.accessToken })
          )
          yield* promise(() => expectErrorPage(res, 400, 15002))
        }
        const missing = yield* promise(() =>
          authorize(identity, { client_id: client.clientId, response_type: "code", state: "s" }, {
            bearer: session.accessToken
          })
        )
        yield* promise(() => expectErrorPage(missing, 400, 15002))
      }))

    it.effect("RFC 6749 4.1.2.1: other errors go back to the redirect_uri with error, state and iss", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const client = yield* createClient()
        const pub = yield* createClient({ public: true })
        const session = yield* signIn(identity)
        const bearer = { bearer: session.accessToken }
        const cases: Array<[Record<string, string | undefined>, string, typeof client]> = [
          [codeParams(client, { response_type: "token" }), "unsupported_response_type", client],
          [codeParams(client, { response_type: undefined }), "invalid_request", client],
          [codeParams(client, { scope: "openid admin:everything" }), "invalid_scope", client],
          [
            codeParams(client, { code_challenge: pkcePair().challenge, code_challenge_method: "S512" }),
            "invalid_request",
            client
          ],
          [codeParams(client, { code_challenge: "too-short" }), "invalid_request", client],
          [codeParams(client, { code_challenge_method: "S256" }), "invalid_request", client],
          [codeParams(client, { prompt: "none login" }), "invalid_request", client],
          // Public clients must use PKCE (docs/decisions.md, "Identity: protocol").
          [codeParams(pub), "invalid_request", pub]
        ]
        for (const [params, error, which] of cases) {
          const res = yield* promise(() => authorize(identity, params, bearer))
          expectErrorRedirect(res, which.redirectUri, error, params.state, issuer)
        }
        // State is required; the error still goes back, without a state (README, "Flows").
        const noState = yield* promise(() => authorize(identity, codeParams(client, { state: undefined }), bearer))
        expectErrorRedirect(noState, client.redirectUri, "invalid_request", undefined, issuer)
      }))

    it.effect("RFC 6749 3.1: a repeated parameter is refused on the error page", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const url = `${identity}/api/v1/oauth/authorize?client_id=${client.clientId}&client_id=${client.clientId}` +
          `&redirect_uri=${encodeURIComponent(client.redirectUri)}&response_type=code&state=s`
        const res = yield* promise(() => fetch(url, { redirect: "manual" }))
        yield* promise(() => expectErrorPage(res, 400, 15007))
      }))

    it.effect("prompt=login forces a new sign-in even with a live session, then resumes (README, \"Flows\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const client = yield* createClient()
        const user = yield* createUser()
        const session = yield* promise(() => login(identity, user))
        for (const auth of [{ cookie: session.cookie }, { bearer: session.accessToken }]) {
          const res = yield* promise(() => authorize(identity, codeParams(client, { prompt: "login" }), auth))
          expect(res.status).toBe(302)
          const location = new URL(res.headers.get("location")!)
          expect(`${location.origin}${location.pathname}`).toBe(`${issuer}/ui/login`)
          const resume = new URL(location.searchParams.get("return_to")!, identity)
          expect(resume.searchParams.get("prompt")).toBeNull()
          expect(Number(resume.searchParams.get("max_age"))).toBeLessThanOrEqual(120)
        }
        // After a fresh sign-in, the resumed request (max_age satisfied) issues a code.
        const again = yield* promise(() => login(identity, user))
        const first = yield* promise(() => authorize(identity, codeParams(client, { prompt: "login" }), again))
        const resume = new URL(first.headers.get("location")!).searchParams.get("return_to")!
        const done = yield* promise(() =>
          fetch(`${identity}${resume}`, { redirect: "manual", headers: { cookie: again.cookie } })
        )
        expect(done.status).toBe(302)
        expect(new URL(done.headers.get("location")!).searchParams.get("code")).toMatch(/^[0-9a-f]{64}$/)
      }))

    it.effect("OIDC 3.1.2.1: max_age older than the session's sign-in asks to sign in again", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        // max_age=0: the sign-in is too old once a millisecond has passed on the database's clock, the
        // one src/identity/oauth/Authorize.ts judges freshness by.
        const sql = yield* SqlClient.SqlClient
        yield* eventually(Effect.map(
          sql<{ older: boolean }>`
            SELECT bool_and(now() - auth_time > interval '1 millisecond') AS older FROM sessions
            WHERE user_id = ${session.user.id}`,
          ([row]) => expect(row!.older).toBe(true)
        ))
        const res = yield* promise(() => authorize(identity, codeParams(client, { max_age: "0" }), session))
        expect(res.headers.get("location")).toMatch(new RegExp(`^${issuer}/ui/login\\?`))
      }))

    it.effect("select_account with login_hint: the hinted user proceeds, another account is asked to sign in (README, \"Flows\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const client = yield* createClient()
        const user = yield* createUser()
        const other = yield* createUser()
        const session = yield* promise(() => login(identity, user))
        const same = yield* promise(() =>
          authorize(identity, codeParams(client, { prompt: "select_account", login_hint: user.email }), session)
        )
        expect(new URL(same.headers.get("location")!).searchParams.get("code")).toMatch(/^[0-9a-f]{64}$/)
        const switching = yield* promise(() =>
          authorize(identity, codeParams(client, { prompt: "select_account", login_hint: other.email }), session)
        )
        const location = new URL(switching.headers.get("location")!)
        expect(`${location.origin}${location.pathname}`).toBe(`${issuer}/ui/login`)
        expect(location.searchParams.get("login_hint")).toBe(other.email)
        // The sign-in page pre-fills the hinted email and offers to continue as the current user.
        const page = yield* promise(async () => {
          const res = await fetch(location, { headers: { cookie: session.cookie } })
          return res.text()
        })
        expect(hiddenValue(page, "return_to")).toContain("login_hint=")
        expect(page).toContain(`value="${other.email}"`)
        expect(page).toContain(`Continue as ${user.email}`)
      }))

    it.effect("OIDC 3.1.2.6: prompt=none never shows a page: login_required / consent_required", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const client = yield* createClient({ autoConsent: false })
        const params = codeParams(client, { prompt: "none" })
        const anonymous = yield* promise(() => authorize(identity, params))
        expectErrorRedirect(anonymous, client.redirectUri, "login_required", params.state, issuer)
        const session = yield* signIn(identity)
        const noConsent = yield* promise(() => authorize(identity, params, session))
        expectErrorRedirect(noConsent, client.redirectUri, "consent_required", params.state, issuer)
      }))

    it.effect("consent is asked once per client and scope set; a wider set asks again; deny -> access_denied (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const client = yield* createClient({
          autoConsent: false,
          name: "Visual Novel <Portal>",
          logoUrl: "https://rp.example/logo.png"
        })
        const session = yield* signIn(identity)
        const params = codeParams(client, { scope: "openid profile" })
        const first = yield* promise(() => authorize(identity, params, session))
        const consentUrl = first.headers.get("location")!
        expect(consentUrl.startsWith(`${issuer}/ui/consent?`)).toBe(true)

        const approved = yield* promise(() => decideConsent(consentUrl, session.cookie, "approve"))
        // The page names the client (escaped), shows its logo and the requested scopes.
        expect(approved.html).toContain("Visual Novel &lt;Portal&gt;")
        expect(approved.html).toContain(`src="https://rp.example/logo.png"`)
        expect(approved.html).toContain(`<span class="scope">profile</span>`)
        expect(approved.res.status).toBe(303)
        const resumed = yield* promise(() =>
          fetch(approved.res.headers.get("location")!, { redirect: "manual", headers: { cookie: session.cookie } })
        )
        const back = new URL(resumed.headers.get("location")!)
        expect(back.searchParams.get("code")).toMatch(/^[0-9a-f]{64}$/)
        expect(back.searchParams.get("state")).toBe(params.state)

        // Same client, same or narrower scope: no consent page. Wider: asked again.
        const again = yield* promise(() => authorize(identity, codeParams(client, { scope: "openid" }), session))
        expect(new URL(again.headers.get("location")!).searchParams.get("code")).toMatch(/^[0-9a-f]{64}$/)
        const wider = yield* promise(() => authorize(identity, codeParams(client, { scope: "openid email" }), session))
        const widerConsent = wider.headers.get("location")!
        expect(widerConsent.startsWith(`${issuer}/ui/consent?`)).toBe(true)

        const denied = yield* promise(() => decideConsent(widerConsent, session.cookie, "deny"))
        expect(denied.res.status).toBe(303)
        const deniedTo = new URL(denied.res.headers.get("location")!)
        expect(deniedTo.searchParams.get("error")).toBe("access_denied")
        expect(deniedTo.searchParams.get("iss")).toBe(issuer)
      }))

    it.effect("the consent form refuses a missing, forged or other-session CSRF token (403) (docs/decisions.md, \"Identity: pages\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient({ autoConsent: false })
        const session = yield* signIn(identity)
        const otherSession = yield* signIn(identity)
        const first = yield* promise(() => authorize(identity, codeParams(client), session))
        const consentUrl = first.headers.get("location")!
        const page = yield* promise(() => fetch(consentUrl, { headers: { cookie: session.cookie } }))
        const html = yield* promise(() => page.text())
        const csrfCookie = cookiesOf(page).join("; ")
        const post = (cookie: string, csrf: string | undefined) =>
          promise(() =>
            fetch(`${identity}/api/v1/ui/consent`, {
              method: "POST",
              redirect: "manual",
              headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
              body: new URLSearchParams({
                ...(csrf === undefined ? {} : { csrf }),
                request: hiddenValue(html, "request"),
                decision: "approve"
              }).toString()
            })
          )
        const token = hiddenValue(html, "csrf")
        expect((yield* post(`${session.cookie}; ${csrfCookie}`, undefined)).status).toBe(403)
        expect((yield* post(`${session.cookie}; ${csrfCookie}`, `${token.slice(0, -2)}xx`)).status).toBe(403)
        expect((yield* post(session.cookie, token)).status).toBe(403)
        expect((yield* post(`${otherSession.cookie}; ${csrfCookie}`, token)).status).toBe(403)
        expect((yield* post(`${session.cookie}; ${csrfCookie}`, token)).status).toBe(303)
      }))

    it.effect("RFC 6749 3.1: the consent form's copy of the request is decoded like the query: an unknown parameter added to it is dropped, an over-long one refused", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient({ autoConsent: false })
        const session = yield* signIn(identity)
        const first = yield* promise(() => authorize(identity, codeParams(client), session))
        const page = yield* promise(() =>
          fetch(first.headers.get("location")!, { headers: { cookie: session.cookie } })
        )
        const html = yield* promise(() => page.text())
        const cookie = `${session.cookie}; ${cookiesOf(page).join("; ")}`
        const post = (request: string) =>
          promise(() =>
            fetch(`${identity}/api/v1/ui/consent`, {
              method: "POST",
              redirect: "manual",
              headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
              body: new URLSearchParams({ csrf: hiddenValue(html, "csrf"), request, decision: "approve" }).toString()
            })
          )
        // 3,000 characters the form carries as they are: ~27 kB once percent-encoded into a Location,
        // more than an HTTP client reads as a header.
        const junk = "\u3042".repeat(3000)
        const added = yield* post(`${hiddenValue(html, "request")}&x_junk=${junk}`)
        expect(added.status).toBe(303)
        const resumed = new URL(added.headers.get("location")!)
        expect(resumed.searchParams.has("x_junk")).toBe(false)
        expect(resumed.searchParams.get("client_id")).toBe(client.clientId)
        const tooLong = yield* post(`${hiddenValue(html, "request")}&nonce=${junk}`)
        expect(tooLong.status).toBe(400)
      }))

    it.effect("only sign-in tokens authorize; a client's access token or an id_token is invalid_token (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const tokens = yield* promise(() => tokensFor(identity, client, session, "openid"))
        for (const bearer of [tokens.access_token, tokens.id_token!, "not-a-jwt"]) {
          const res = yield* promise(() => authorize(identity, codeParams(client), { bearer }))
          expect(res.status).toBe(401)
          expect(res.headers.get("www-authenticate")).toMatch(/^Bearer realm="shiori", error="invalid_token"/)
          expect((yield* promise(() => res.json())).error).toBe("invalid_token")
        }
      }))

    it.effect("RFC 6749 3.3: an empty scope stands for what it releases (profile, email): consent for openid does not cover it", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const client = yield* createClient({ autoConsent: false })
        const session = yield* signIn(identity, { name: "Sakura" })
        const first = yield* promise(() => authorize(identity, codeParams(client, { scope: "openid" }), session))
        expect(
          (yield* promise(() => decideConsent(first.headers.get("location")!, session.cookie, "approve"))).res.status
        )
          .toBe(303)
        expect(
          new URL(
            (yield* promise(() => authorize(identity, codeParams(client, { scope: "openid" }), session))).headers
              .get("location")!
          ).searchParams.get("code")
        ).toMatch(/^[0-9a-f]{64}$/)

        // Without a scope (absent or empty) the consent page comes back, listing what it would release.
        for (const scope of [undefined, ""]) {
          const res = yield* promise(() => authorize(identity, codeParams(client, { scope }), session))
          expect(res.headers.get("location")!.startsWith(`${issuer}/ui/consent?`)).toBe(true)
        }
        const params = codeParams(client)
        const empty = yield* promise(() => authorize(identity, params, session))
        const approved = yield* promise(() => decideConsent(empty.headers.get("location")!, session.cookie, "approve"))
        expect(approved.html).toContain(`<span class="scope">profile</span>`)
        expect(approved.html).toContain(`<span class="scope">email</span>`)
        const resumed = yield* promise(() =>
          fetch(approved.res.headers.get("location")!, { redirect: "manual", headers: { cookie: session.cookie } })
        )
        const code = new URL(resumed.headers.get("location")!).searchParams.get("code")!
        const tokens = yield* promise(() => exchangeCode(identity, client, code))
        // The grant names what was approved; userinfo releases exactly that.
        expect(tokens.body.scope).toBe("profile email")
        const info = yield* promise(() =>
          fetch(`${identity}/api/v1/oauth/userinfo`, {
            headers: { authorization: `Bearer ${tokens.body.access_token}` }
          })
            .then((res) => res.json() as Promise<any>)
        )
        expect(info).toMatchObject({ name: "Sakura", email: session.user.email, email_verified: true })
        // Now covered: no page.
        const again = yield* promise(() => authorize(identity, codeParams(client), session))
        expect(new URL(again.headers.get("location")!).searchParams.get("code")).toMatch(/^[0-9a-f]{64}$/)
      }))

    it.effect("RFC 6749 3.3 / 4.1.2.1: a scope outside the client's allowed set is invalid_scope, back at the redirect_uri", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const client = yield* createClient()
        const writer = yield* createClient({ scopes: ["openid", "claims:write", "moderation"] })
        const session = yield* signIn(identity)
        const refused = async (which: typeof client, scope: string | undefined) => {
          const params = codeParams(which, { scope })
          expectErrorRedirect(
            await authorize(identity, params, session),
            which.redirectUri,
            "invalid_scope",
            params.state,
            issuer
          )
        }
        // The default set allows no write scope and no moderation.
        for (const scope of ["openid claims:write", "catalog:write", "moderation", "catalog:read media:write"]) {
          yield* promise(() => refused(client, scope))
        }
        yield* promise(() =>
          getCode(identity, client, session.accessToken, { scope: "openid profile email offline_access catalog:read" })
        )
        // An operator granted claims:write and moderation; email is not in this client's set, nor what an
        // empty scope releases (profile, email).
        yield* promise(() =>
          getCode(identity, writer, session.accessToken, { scope: "openid claims:write moderation" })
        )
        for (const scope of ["openid email", "catalog:read", undefined]) yield* promise(() => refused(writer, scope))
      }))

    it.effect("OIDC Core 6.1 / 6.2: request and request_uri are refused (request_not_supported, request_uri_not_supported)", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const client = yield* createClient()
        const session = yield* signIn(identity)
        const cases: Array<[Record<string, string>, string]> = [
          [{ request: "eyJhbGciOiJub25lIn0.eyJzY29wZSI6Im9wZW5pZCJ9." }, "request_not_supported"],
          [{ request_uri: "https://rp.example/request.jwt" }, "request_uri_not_supported"]
        ]
        for (const [extra, error] of cases) {
          const params = codeParams(client, extra)
          const res = yield* promise(() => authorize(identity, params, session))
          expectErrorRedirect(res, client.redirectUri, error, params.state, issuer)
          // Without a registered redirect_uri: the error page, never a redirect.
          const stray = yield* promise(() =>
            authorize(identity, { ...params, redirect_uri: "https://evil.example/cb" }, session)
          )
          yield* promise(() => expectErrorPage(stray, 400, 15002))
        }
        const discovery = yield* promise(() =>
          fetch(`${issuer}/.well-known/openid-configuration`).then((res) => res.json() as Promise<any>)
        )
        expect(discovery).toMatchObject({ request_parameter_supported: false, request_uri_parameter_supported: false })
      }))

    it.effect("OIDC Core 3.1.2.1: max_age=0 asks for a sign-in once; the sign-in that follows gets a code (no loop)", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const client = yield* createClient()
        const user = yield* createUser()
        const first = yield* promise(() => authorize(identity, codeParams(client, { max_age: "0" })))
        const location = new URL(first.headers.get("location")!)
        expect(`${location.origin}${location.pathname}`).toBe(`${issuer}/ui/login`)
        const resume = location.searchParams.get("return_to")!
        const session = yield* promise(() => login(identity, user))
        const done = yield* promise(() =>
          fetch(`${identity}${resume}`, { redirect: "manual", headers: { cookie: session.cookie } })
        )
        expect(done.status).toBe(302)
        expect(new URL(done.headers.get("location")!).searchParams.get("code")).toMatch(/^[0-9a-f]{64}$/)
        // The way back said when the request began (signed), so the sign-in was recognised as fresh.
        expect(new URL(resume, identity).searchParams.get("auth_after")).toMatch(/^[0-9]+\.[A-Za-z0-9_-]{43}$/)
      }))
  })
})

/** A clock `offsetMillis` ahead of the real one: a server whose clock differs from the database's. */
const clockAhead = (offsetMillis: number): Clock.Clock => {
  const real = Clock.Clock.defaultValue()
  const nanos = BigInt(offsetMillis) * 1_000_000n
  return {
    currentTimeMillisUnsafe: () => real.currentTimeMillisUnsafe() + offsetMillis,
    currentTimeMillis: Effect.sync(() => real.currentTimeMillisUnsafe() + offsetMillis),
    currentTimeNanosUnsafe: () => real.currentTimeNanosUnsafe() + nanos,
    currentTimeNanos: Effect.sync(() => real.currentTimeNanosUnsafe() + nanos),
    // Elapsed time is the same on both clocks.
    monotonicTimeNanosUnsafe: () => real.monotonicTimeNanosUnsafe(),
    monotonicTimeNanos: real.monotonicTimeNanos,
    sleep: (duration) => real.sleep(duration)
  }
}

describe("sign-in freshness with the provider's clock ahead of the database's", () => {
  it.layer(IdentityTestEnv({}, { clock: clockAhead(10 * 60_000) }), serverLayerOptions)((it) => {
    it.effect("OIDC Core 3.1.2.1: max_age and prompt=login judge sign-ins on the database's clock: no sign-in loop", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const client = yield* createClient()
        const user = yield* createUser()
        const session = yield* promise(() => login(identity, user))
        // prompt=login: the sign-in page once, then a code for the sign-in made after the request.
        const first = yield* promise(() =>
          authorize(identity, codeParams(client, { prompt: "login" }), { cookie: session.cookie })
        )
        const location = new URL(first.headers.get("location")!)
        expect(`${location.origin}${location.pathname}`).toBe(`${issuer}/ui/login`)
        const fresh = yield* promise(() => login(identity, user))
        const done = yield* promise(() =>
          fetch(`${identity}${location.searchParams.get("return_to")!}`, {
            redirect: "manual",
            headers: { cookie: fresh.cookie }
          })
        )
        expect(done.status).toBe(302)
        expect(new URL(done.headers.get("location")!).searchParams.get("code")).toMatch(/^[0-9a-f]{64}$/)

        // A sign-in of a moment ago is a moment old, whatever this process's clock says.
        const recent = yield* promise(() =>
          authorize(identity, codeParams(client, { max_age: "300" }), { cookie: fresh.cookie })
        )
        expect(new URL(recent.headers.get("location")!).searchParams.get("code")).toMatch(/^[0-9a-f]{64}$/)
      }))
  })
})
