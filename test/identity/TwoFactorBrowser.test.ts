/**
 * The second factor in a real browser (headless Chromium from test/support/Browser.ts, driven by
 * playwright-core, as in test/identity/Browser.test.ts): a signed-in user sets up TOTP on the
 * set-up page (RFC 6238), signs out, signs in again with the password and then the code, and a
 * relying party's authorization code flow (RFC 6749 section 4.1, PKCE per RFC 7636) receives an
 * id_token whose `amr` is `["pwd", "otp"]` (OpenID Connect Core 1.0 section 2, RFC 8176).
 * Screenshots of the set-up page and the code step go to test-results/screenshots/.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Jose from "jose"
import * as Fs from "node:fs"
import * as Http from "node:http"
import type * as Net from "node:net"
import * as Path from "node:path"
import * as OTPAuth from "otpauth"
import { chromiumContext } from "../support/Browser.js"
import {
  createClient,
  createUser,
  IdentityServers,
  IdentityTestEnv,
  pkcePair,
  serverLayerOptions
} from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const screenshots = Path.resolve(import.meta.dirname, "../../test-results/screenshots")

interface RelyingParty {
  readonly url: string
  readonly signIns: Array<{ readonly tokens: Record<string, any> }>
  readonly setClient: (client: { clientId: string; secret: string }) => void
}

/** A confidential relying party on loopback: `/login` starts the flow, `/callback` redeems the code. */
const relyingParty = (issuer: string) =>
  Effect.acquireRelease(
    promise(() =>
      new Promise<RelyingParty & { server: Http.Server }>((resolve) => {
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
              scope: "openid profile",
              state,
              code_challenge: pkce.challenge,
              code_challenge_method: "S256"
            }).toString()
            res.writeHead(302, { location: authorize.href })
            return res.end()
          }
          if (url.pathname === "/callback") {
            const verifier = pending.get(url.searchParams.get("state") ?? "")
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
            signIns.push({ tokens })
            return html(200, `<h1>Welcome back</h1>`)
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

describe("second factor in headless Chromium", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect(
      "RFC 6238 and OpenID Connect Core 1.0 section 2: set up TOTP on the page, sign out, sign in with password then code; the RP's id_token has amr pwd+otp",
      () =>
        Effect.gen(function*() {
          const { issuer } = yield* IdentityServers
          const rp = yield* relyingParty(issuer)
          const registered = yield* createClient({ autoConsent: true, redirectUris: [`${rp.url}/callback`] })
          rp.setClient({ clientId: registered.clientId, secret: registered.secret! })
          const user = yield* createUser({ name: "Kaede" })
          Fs.mkdirSync(screenshots, { recursive: true })
          const { context } = yield* chromiumContext
          const page = context.pages()[0] ?? (yield* promise(() => context.newPage()))
          const heading = () => promise(() => page.getByRole("heading", { level: 1 }).textContent())
          const signInWithPassword = Effect.gen(function*() {
            yield* promise(() => page.getByLabel("Email").fill(user.email))
            yield* promise(() => page.getByLabel("Password").fill(user.password))
            yield* promise(() => page.getByRole("button", { name: "Sign in" }).click())
          })

          // The set-up page wants a recent sign-in: without a session, the sign-in page, then back.
          yield* promise(() => page.goto(`${issuer}/ui/account/two-factor`))
          expect(page.url().startsWith(`${issuer}/ui/login?`)).toBe(true)
          yield* signInWithPassword
          yield* promise(() => page.waitForURL((url) => url.pathname === "/api/v1/ui/account/two-factor"))
          expect(yield* heading()).toBe("Set up two-factor authentication")
          expect(yield* promise(() => page.locator(".qr svg").count())).toBe(1)
          expect(yield* promise(() => page.getByRole("img", { name: /QR code/ }).count())).toBe(1)
          expect(yield* promise(() => page.locator("a[href='/api/v1/ui/account']").count())).toBe(1)
          yield* promise(() =>
            page.screenshot({ path: Path.join(screenshots, "two-factor-setup.png"), fullPage: true })
          )

          // Read the typed key as a person would and compute the app's code.
          const secret = (yield* promise(() => page.locator("#totp-secret").textContent()))!.replace(/\s+/g, "")
          expect(secret).toMatch(/^[A-Z2-7]{32}$/)
          const key = OTPAuth.Secret.fromBase32(secret)
          const enableStep = Math.floor(Date.now() / 30_000)
          const codeAt = (step: number) => OTPAuth.HOTP.generate({ secret: key, counter: step })
          // A wrong code first: an announced error tied to its input.
          yield* promise(() =>
            page.getByLabel("Code from the app").fill(String((Number(codeAt(enableStep)) + 1) % 1e6).padStart(6, "0"))
          )
          yield* promise(() => page.getByRole("button", { name: "Turn on" }).click())
          yield* promise(() => page.getByRole("alert").waitFor())
          expect(yield* promise(() => page.getByLabel("Code from the app").getAttribute("aria-describedby"))).toContain(
            "enable-code-error"
          )
          // The right one, typed with the keyboard.
          yield* promise(() => page.getByLabel("Code from the app").focus())
          yield* promise(() => page.keyboard.type(codeAt(enableStep)))
          yield* promise(() => page.keyboard.press("Enter"))
          yield* promise(() => page.locator("#recovery-codes").waitFor())
          expect(yield* heading()).toBe("Two-factor authentication")
          const codes = yield* promise(() => page.locator("#recovery-codes li").allTextContents())
          expect(codes).toHaveLength(10)
          expect(new Set(codes).size).toBe(10)
          yield* promise(() =>
            page.screenshot({ path: Path.join(screenshots, "two-factor-recovery-codes.png"), fullPage: true })
          )

          // Sign out.
          yield* promise(() => page.goto(`${issuer}/ui/logout`))
          yield* promise(() => page.getByRole("button", { name: "Sign out" }).click())
          yield* promise(() => page.waitForLoadState())
          expect((yield* promise(() => context.cookies(issuer))).find((c) => c.name === "shiori_session"))
            .toBeUndefined()

          // The relying party sends the browser to sign in: password, then the code step (no session yet).
          yield* promise(() => page.goto(`${rp.url}/login`))
          expect(page.url().startsWith(`${issuer}/ui/login?`)).toBe(true)
          yield* signInWithPassword
          yield* promise(() => page.getByLabel("Authentication code").waitFor())
          expect(yield* heading()).toBe("Two-factor authentication")
          expect((yield* promise(() => context.cookies(issuer))).find((c) => c.name === "shiori_session"))
            .toBeUndefined()
          expect(yield* promise(() => page.getByText("Use a recovery code instead").count())).toBe(1)
          yield* promise(() =>
            page.screenshot({ path: Path.join(screenshots, "sign-in-code-step.png"), fullPage: true })
          )
          // The code of the step after the one that turned the factor on: a code is accepted only once.
          yield* promise(() => page.getByLabel("Authentication code").fill(codeAt(enableStep + 1)))
          yield* promise(() => page.getByRole("button", { name: "Verify" }).click())

          yield* promise(() => page.waitForURL((url) => url.href.startsWith(`${rp.url}/callback`)))
          expect(yield* heading()).toBe("Welcome back")
          expect(rp.signIns).toHaveLength(1)
          const idToken = Jose.decodeJwt(rp.signIns[0]!.tokens.id_token)
          expect(idToken.amr).toEqual(["pwd", "otp"])
        }).pipe(Effect.scoped),
      { timeout: 90_000 }
    )
  })
})
