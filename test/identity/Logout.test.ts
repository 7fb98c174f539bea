/**
 * Relying-party logout (README, "Flows"; docs/decisions.md, "Identity: protocol", "Identity: pages";
 * OIDC RP-Initiated Logout 1.0):
 * `/oauth/logout` forwards to the logout page, which confirms (unless a valid id_token_hint is
 * given), ends the session and returns only to an origin registered for the client. Open-redirect
 * attempts never redirect.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  authorize,
  bearerGet,
  codeParams,
  cookiesOf,
  createClient,
  hiddenValue,
  IdentityServers,
  IdentityTestEnv,
  serverLayerOptions,
  signIn,
  tokensFor
} from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** Open-redirect attempts against a client registered at https://rp.example. */
const EVIL_TARGETS = [
  "https://evil.example/",
  "//evil.example/",
  "/\\evil.example/",
  "https://rp.example.evil.example/",
  "https://rp.example@evil.example/",
  "https://evil.example\\@rp.example/",
  "https:evil.example",
  "http://rp.example/",
  "https://rp.example:8443/",
  "javascript:alert(document.cookie)",
  "data:text/html,<script>alert(1)</script>",
  ""
]

const logoutUrl = (identity: string, params: Record<string, string>) =>
  `${identity}/api/v1/oauth/logout?${new URLSearchParams(params).toString()}`

describe("GET /api/v1/oauth/logout, the logout page and /oauth/post-logout-redirect", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect("/oauth/logout 302s to the provider's logout page with the same parameters (README, \"Flows\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const res = yield* promise(() =>
          fetch(logoutUrl(identity, { client_id: "c", redirect: "https://rp.example/bye", state: "s1" }), {
            redirect: "manual"
          })
        )
        expect(res.status).toBe(302)
        const location = new URL(res.headers.get("location")!)
        expect(`${location.origin}${location.pathname}`).toBe(`${issuer}/ui/logout`)
        expect(Object.fromEntries(location.searchParams)).toEqual({
          client_id: "c",
          redirect: "https://rp.example/bye",
          state: "s1"
        })
      }))

    it.effect("confirmation, then the session ends (and its families) and the browser returns to redirect (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient({ redirectUris: ["https://rp.example/callback"] })
        const session = yield* signIn(identity)
        // A relying party signed in through this browser session.
        const rpTokens = yield* promise(async () => {
          const res = await authorize(identity, codeParams(client, { scope: "openid" }), { cookie: session.cookie })
          const code = new URL(res.headers.get("location")!).searchParams.get("code")!
          const token = await fetch(`${identity}/api/v1/oauth/token`, {
            method: "POST",
            headers: { "content-type": "application/x-www-form-urlencoded" },
            body: new URLSearchParams({
              grant_type: "authorization_code",
              code,
              redirect_uri: client.redirectUri,
              client_id: client.clientId,
              client_secret: client.secret!
            }).toString()
          })
          return await token.json() as { access_token: string }
        })

        const pageRes = yield* promise(() =>
          fetch(
            `${identity}/api/v1/ui/logout?${new URLSearchParams({
              client_id: client.clientId,
              redirect: "https://rp.example/signed-out",
              state: "xyz"
            })}`,
            { headers: { cookie: session.cookie } }
          )
        )
        expect(pageRes.status).toBe(200)
        // No framing, HTML with a language, a heading and a CSRF-protected form (docs/decisions.md, "Identity: pages").
        expect(pageRes.headers.get("x-frame-options")).toBe("DENY")
        expect(pageRes.headers.get("content-security-policy")).toContain("frame-ancestors 'none'")
        const html = yield* promise(() => pageRes.text())
        expect(html).toContain(`<html lang="en">`)
        expect(html).toContain("<h1>Sign out of shiori?</h1>")
        const cookies = [session.cookie, ...cookiesOf(pageRes)].join("; ")
        const post = (fields: Record<string, string>) =>
          promise(() =>
            fetch(`${identity}/api/v1/ui/logout`, {
              method: "POST",
              redirect: "manual",
              headers: { cookie: cookies, "content-type": "application/x-www-form-urlencoded" },
              body: new URLSearchParams(fields).toString()
            })
          )
        const fields = {
          client_id: hiddenValue(html, "client_id"),
          redirect: hiddenValue(html, "redirect"),
          state: hiddenValue(html, "state")
        }
        // Without the CSRF token nothing happens.
        expect((yield* post({ ...fields, decision: "logout" })).status).toBe(403)
        expect((yield* promise(() => bearerGet(`${identity}/api/v1/auth/me`, session.accessToken))).status).toBe(200)

        const done = yield* post({ ...fields, csrf: hiddenValue(html, "csrf"), decision: "logout" })
        expect(done.status).toBe(303)
        expect(done.headers.get("location")).toBe("https://rp.example/signed-out?state=xyz")
        expect(done.headers.getSetCookie().join()).toMatch(
          /shiori_session=;.*Max-Age=0|shiori_session=;.*Expires=Thu, 01 Jan 1970/
        )
        // The session is over: its sign-in token, its cookie and the relying party's tokens are dead.
        expect((yield* promise(() => bearerGet(`${identity}/api/v1/auth/me`, session.accessToken))).status).toBe(401)
        expect((yield* promise(() => bearerGet(`${identity}/api/v1/oauth/userinfo`, rpTokens.access_token))).status)
          .toBe(401)
        const again = yield* promise(() => authorize(identity, codeParams(client), { cookie: session.cookie }))
        expect(again.headers.get("location")).toContain("/ui/login?")
      }))

    it.effect("OIDC RP-Initiated Logout 2: a valid id_token_hint for the signed-in user skips the confirmation", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient({ redirectUris: ["https://rp.example/callback"] })
        const session = yield* signIn(identity)
        const other = yield* signIn(identity)
        const tokens = yield* promise(() => tokensFor(identity, client, session, "openid"))
        const otherTokens = yield* promise(() => tokensFor(identity, client, other, "openid"))
        const visit = (hint: string) =>
          promise(() =>
            fetch(
              `${identity}/api/v1/ui/logout?${new URLSearchParams({
                client_id: client.clientId,
                post_logout_redirect_uri: "https://rp.example/",
                id_token_hint: hint
              })}`,
              { redirect: "manual", headers: { cookie: session.cookie } }
            )
          )
        // Someone else's id_token (or garbage) still asks.
        expect((yield* visit(otherTokens.id_token!)).status).toBe(200)
        expect((yield* visit("e30.e30.e30")).status).toBe(200)
        const res = yield* visit(tokens.id_token!)
        expect(res.status).toBe(303)
        expect(res.headers.get("location")).toBe("https://rp.example/")
        expect((yield* promise(() => bearerGet(`${identity}/api/v1/auth/me`, session.accessToken))).status).toBe(401)
      }))

    it.effect("open-redirect attempts never redirect, neither after logout nor at post-logout-redirect (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient({ redirectUris: ["https://rp.example/callback"] })
        for (const target of EVIL_TARGETS) {
          const check = yield* promise(() =>
            fetch(
              `${identity}/api/v1/oauth/post-logout-redirect?${new URLSearchParams({
                client_id: client.clientId,
                redirect: target
              })}`,
              { redirect: "manual" }
            )
          )
          expect(check.status, target).toBe(400)
          expect(check.headers.get("location"), target).toBeNull()
          expect(yield* promise(() => check.json())).toEqual({
            code: 15004,
            message: "Logout redirect not allowed",
            data: null
          })

          const session = yield* signIn(identity)
          const id = yield* promise(() => tokensFor(identity, client, session, "openid"))
          const page = yield* promise(() =>
            fetch(
              `${identity}/api/v1/ui/logout?${new URLSearchParams({
                client_id: client.clientId,
                redirect: target,
                id_token_hint: id.id_token!
              })}`,
              { redirect: "manual", headers: { cookie: session.cookie } }
            )
          )
          expect(page.status, target).toBe(200)
          expect(page.headers.get("location"), target).toBeNull()
          expect(yield* promise(() => page.text())).toContain("You are signed out")
        }
        // Without a session there is nothing to confirm, and still no redirect to a foreign origin.
        const anonymous = yield* promise(() =>
          fetch(`${identity}/api/v1/ui/logout?client_id=${client.clientId}&redirect=https://evil.example/`, {
            redirect: "manual"
          })
        )
        expect(anonymous.status).toBe(200)
      }))

    it.effect("post-logout-redirect redirects to an allowed target; unknown client is 15001 (docs/decisions.md, \"Identity: protocol\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient({ redirectUris: ["https://rp.example/callback", "http://127.0.0.1:9/cb"] })
        for (const target of ["https://rp.example/", "https://rp.example/any/path?x=1", "http://127.0.0.1:9/bye"]) {
          const res = yield* promise(() =>
            fetch(
              `${identity}/api/v1/oauth/post-logout-redirect?${new URLSearchParams({
                client_id: client.clientId,
                redirect: target
              })}`,
              { redirect: "manual" }
            )
          )
          expect(res.status).toBe(302)
          expect(res.headers.get("location")).toBe(new URL(target).href)
        }
        const unknown = yield* promise(() =>
          fetch(`${identity}/api/v1/oauth/post-logout-redirect?client_id=ghost&redirect=https://rp.example/`, {
            redirect: "manual"
          })
        )
        expect(unknown.status).toBe(404)
        expect((yield* promise(() => unknown.json())).code).toBe(15001)
        const missing = yield* promise(() =>
          fetch(`${identity}/api/v1/oauth/post-logout-redirect?client_id=${client.clientId}`, { redirect: "manual" })
        )
        expect(missing.status).toBe(400)
      }))
  })
})
