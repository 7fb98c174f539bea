/**
 * The sign-in pages in a real browser: headless Chromium (see `test/support/Browser.ts` for where
 * it comes from; `npm ci` installs one), driven by playwright-core, walks a relying party's whole
 * flow: RP -> authorize -> sign-in page -> consent -> callback with a code -> tokens (RFC 6749
 * 4.1, PKCE per RFC 7636); then RP-initiated logout with confirmation. Nothing is skipped: without
 * a Chromium that starts, this test fails.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { chromiumContext } from "../support/Browser.js"
import {
  createClient,
  createUser,
  IdentityServers,
  IdentityTestEnv,
  serverLayerOptions
} from "../support/IdentityServers.js"
import { relyingParty } from "../support/RelyingParty.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

describe("sign-in pages in headless Chromium", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect(
      "authorize -> sign in -> consent -> callback -> tokens; then logout with confirmation (docs/decisions.md, \"Identity: pages\")",
      () =>
        Effect.gen(function*() {
          const { issuer } = yield* IdentityServers
          const rp = yield* relyingParty(issuer)
          const registered = yield* createClient({
            autoConsent: false,
            name: "Browser RP",
            redirectUris: [`${rp.url}/callback`]
          })
          rp.setClient({ clientId: registered.clientId, secret: registered.secret! })
          const user = yield* createUser({ name: "Sakura" })
          const { context } = yield* chromiumContext
          const page = context.pages()[0] ?? (yield* promise(() => context.newPage()))
          const headers: Array<Record<string, string>> = []
          page.on("response", (response) => {
            if (response.url().startsWith(`${issuer}/ui/`) && response.request().resourceType() === "document") {
              headers.push(response.headers())
            }
          })

          // The relying party sends the browser to authorize; with no session, the sign-in page.
          yield* promise(() => page.goto(`${rp.url}/login`))
          expect(page.url().startsWith(`${issuer}/ui/login?`)).toBe(true)
          expect(yield* promise(() => page.locator("html").getAttribute("lang"))).toBe("en")
          expect(yield* promise(() => page.getByRole("heading", { level: 1 }).textContent())).toBe("Sign in to shiori")

          // A wrong password first: the form comes back with an announced error.
          yield* promise(() => page.getByLabel("Email").fill(user.email))
          yield* promise(() => page.getByLabel("Password").fill("wrong password"))
          yield* promise(() => page.getByRole("button", { name: "Sign in" }).click())
          yield* promise(() => page.getByRole("alert").waitFor())
          expect(yield* promise(() => page.getByRole("alert").textContent())).toContain("not right")

          yield* promise(() => page.getByLabel("Password").fill(user.password))
          yield* promise(() => page.getByRole("button", { name: "Sign in" }).click())

          // Consent: the client's name and the requested scopes; Allow.
          yield* promise(() => page.waitForURL((url) => url.pathname === "/api/v1/ui/consent"))
          expect(yield* promise(() => page.getByRole("heading", { level: 1 }).textContent())).toContain("Browser RP")
          const scopes = yield* promise(() => page.locator(".scopes li").allTextContents())
          expect(scopes.join(" ")).toMatch(/openid.*profile.*email/s)
          yield* promise(() => page.getByRole("button", { name: "Allow" }).click())

          // Back at the relying party, which exchanged the code for tokens.
          yield* promise(() => page.waitForURL((url) => url.href.startsWith(`${rp.url}/callback`)))
          expect(yield* promise(() => page.getByRole("heading", { level: 1 }).textContent())).toBe("Welcome, Sakura")
          expect(rp.signIns).toHaveLength(1)
          expect(rp.signIns[0]!.sub).toBe(user.sub)
          expect(rp.signIns[0]!.tokens).toMatchObject({
            token_type: "Bearer",
            expires_in: 900,
            id_token: expect.any(String),
            refresh_token: expect.any(String)
          })

          // Every page forbade framing (clickjacking, RFC 6749 10.13).
          expect(headers.length).toBeGreaterThanOrEqual(2)
          for (const h of headers) {
            expect(h["x-frame-options"]).toBe("DENY")
            expect(h["content-security-policy"]).toContain("frame-ancestors 'none'")
          }
          // The session cookie is HttpOnly and SameSite=Lax.
          const cookies = yield* promise(() => context.cookies(issuer))
          const session = cookies.find((c) => c.name === "shiori_session")!
          expect(session).toMatchObject({ httpOnly: true, sameSite: "Lax", path: "/api/v1" })

          // A second sign-in at the RP needs neither the sign-in page nor consent.
          yield* promise(() => page.goto(`${rp.url}/login`))
          yield* promise(() => page.waitForURL((url) => url.href.startsWith(`${rp.url}/callback`)))
          expect(rp.signIns).toHaveLength(2)

          // RP-initiated logout: confirmation page, then back to the RP's registered origin with state.
          const logout = new URL(`${issuer}/oauth/logout`)
          logout.search = new URLSearchParams({
            client_id: registered.clientId,
            redirect: `${rp.url}/signed-out`,
            state: "bye-1"
          }).toString()
          yield* promise(() => page.goto(logout.href))
          expect(page.url().startsWith(`${issuer}/ui/logout?`)).toBe(true)
          expect(yield* promise(() => page.getByRole("heading", { level: 1 }).textContent())).toBe(
            "Sign out of shiori?"
          )
          yield* promise(() => page.getByRole("button", { name: "Sign out" }).click())
          yield* promise(() => page.waitForURL((url) => url.href.startsWith(`${rp.url}/signed-out`)))
          expect(yield* promise(() => page.locator("#state").textContent())).toBe("bye-1")
          expect((yield* promise(() => context.cookies(issuer))).find((c) => c.name === "shiori_session"))
            .toBeUndefined()

          // Signed out: the next authorize asks to sign in again.
          yield* promise(() => page.goto(`${rp.url}/login`))
          expect(page.url().startsWith(`${issuer}/ui/login?`)).toBe(true)
        }).pipe(Effect.scoped),
      { timeout: 90_000 }
    )
  })
})
