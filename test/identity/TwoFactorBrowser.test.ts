/**
 * The second factor in a real browser (headless Chromium from test/support/Browser.ts, driven by
 * playwright-core, as in test/identity/Browser.test.ts): a signed-in user sets up TOTP on the
 * set-up page (RFC 6238), signs out, signs in again with the password and then the code, and a
 * relying party's authorization code flow (RFC 6749 section 4.1, PKCE per RFC 7636) receives an
 * id_token whose `amr` is `["pwd", "otp"]` (OpenID Connect Core 1.0 section 2, RFC 8176). Turning
 * the factor on takes the account's password along with the first code.
 * Screenshots of the set-up page and the code step go to test-results/screenshots/.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Jose from "jose"
import * as Fs from "node:fs"
import * as Path from "node:path"
import * as OTPAuth from "otpauth"
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

const screenshots = Path.resolve(import.meta.dirname, "../../test-results/screenshots")

describe("second factor in headless Chromium", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect(
      "RFC 6238 and OpenID Connect Core 1.0 section 2: set up TOTP on the page, sign out, sign in with password then code; the RP's id_token has amr pwd+otp",
      () =>
        Effect.gen(function*() {
          const { issuer } = yield* IdentityServers
          const rp = yield* relyingParty(issuer, { scope: "openid profile", greeting: "Welcome back" })
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
          // The password is asked with the code; a wrong code first: an announced error tied to its input.
          const password = () => page.getByLabel("Your password")
          expect(yield* promise(() => password().getAttribute("autocomplete"))).toBe("current-password")
          yield* promise(() => password().fill(user.password))
          yield* promise(() =>
            page.getByLabel("Code from the app").fill(String((Number(codeAt(enableStep)) + 1) % 1e6).padStart(6, "0"))
          )
          yield* promise(() => page.getByRole("button", { name: "Turn on" }).click())
          yield* promise(() => page.getByRole("alert").waitFor())
          expect(yield* promise(() => page.getByLabel("Code from the app").getAttribute("aria-describedby"))).toContain(
            "enable-code-error"
          )
          // The right one, typed with the keyboard (the page does not keep the password it was sent).
          expect(yield* promise(() => password().inputValue())).toBe("")
          yield* promise(() => password().fill(user.password))
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
