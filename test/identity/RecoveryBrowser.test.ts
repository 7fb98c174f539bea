/**
 * "Forgot your password?" in a real browser (headless Chromium from test/support/Browser.ts), as a
 * person would use it (README, "Self-service accounts"): from the sign-in page to the recovery
 * pages, the emailed code read from the development mailbox, a new password; then every old sign-in
 * is over: the other browser's session, a relying party's refresh token (`invalid_grant`, RFC 6749
 * section 5.2) and the old password, while the new one signs in. The first step answers the same
 * page whether or not the address has an account. Screenshots go to test-results/screenshots/
 * (git-ignored).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Page } from "playwright-core"
import { chromiumContext } from "../support/Browser.js"
import { lastCode, mailTo } from "../support/Clients.js"
import {
  createClient,
  createUser,
  IdentityServers,
  IdentityTestEnv,
  refreshRequest,
  serverLayerOptions
} from "../support/IdentityServers.js"
import { relyingParty } from "../support/RelyingParty.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const SCREENSHOTS = Path.resolve(import.meta.dirname, "../../test-results/screenshots")
const screenshot = (page: Page, name: string) =>
  promise(async () => {
    Fs.mkdirSync(SCREENSHOTS, { recursive: true })
    await page.screenshot({ path: Path.join(SCREENSHOTS, `${name}.png`), fullPage: true })
  })

/** A page in a browser of its own: each call starts another Chromium, with its own cookies. */
const newBrowser = Effect.gen(function*() {
  const { context } = yield* chromiumContext
  return context.pages()[0] ?? (yield* promise(() => context.newPage()))
})

/** Step one of the recovery page: the address, sent; answers the status of step two's page. */
const askForCode = (page: Page, issuer: string, email: string) =>
  promise(async () => {
    await page.goto(`${issuer}/ui/password/forgot`)
    await page.getByLabel("Email").fill(email)
    const [response] = await Promise.all([
      page.waitForResponse((r) => r.url() === `${issuer}/ui/password/forgot/send-code`),
      page.getByRole("button", { name: "Send the code" }).click()
    ])
    await page.waitForURL(`${issuer}/ui/password/forgot/send-code`)
    return response.status()
  })

/** What a person reads on the page, with `email` written as `<address>`. */
const visibleText = (page: Page, email: string) =>
  Effect.map(promise(() => page.locator("main").innerText()), (text) => text.replaceAll(email, "<address>"))

describe("Account recovery pages in Chromium", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect(
      "README \"Self-service accounts\": sign-in page -> forgot -> mailed code -> new password; every old sign-in ends",
      () =>
        Effect.gen(function*() {
          const { identity, issuer } = yield* IdentityServers
          const rp = yield* relyingParty(issuer)
          const client = yield* createClient({ name: "Recovery RP", redirectUris: [`${rp.url}/callback`] })
          rp.setClient({ clientId: client.clientId, secret: client.secret! })
          const user = yield* createUser({ name: "Forgetful" })
          const newPassword = "a brand new passphrase for spring"

          // Browser A signs in at the relying party, which keeps the user's refresh token.
          const a = yield* newBrowser
          yield* promise(() => a.goto(`${rp.url}/login`))
          expect(a.url().startsWith(`${issuer}/ui/login?`)).toBe(true)
          yield* promise(() => a.getByLabel("Email").fill(user.email))
          yield* promise(() => a.getByLabel("Password").fill(user.password))
          yield* promise(() => a.getByRole("button", { name: "Sign in" }).click())
          yield* promise(() => a.waitForURL((url) => url.href.startsWith(`${rp.url}/callback`)))
          expect(rp.signIns).toHaveLength(1)
          // The refresh token works before the reset (and rotates: keep the new one).
          const before = yield* promise(() => refreshRequest(identity, client, rp.signIns[0]!.tokens.refresh_token))
          expect(before.status).toBe(200)
          const refreshToken = before.body.refresh_token as string
          // Browser A's own session: its account page opens.
          yield* promise(() => a.goto(`${issuer}/ui/account`))
          expect(a.url()).toBe(`${issuer}/ui/account`)

          // Browser B: the sign-in page (sent there to reach the account page) links to recovery.
          const b = yield* newBrowser
          const accountPath = "/api/v1/ui/account"
          yield* promise(() => b.goto(`${issuer}/ui/login?return_to=${encodeURIComponent(accountPath)}`))
          yield* promise(() => b.getByRole("link", { name: "Forgot your password?" }).click())
          yield* promise(() => b.waitForURL((url) => url.pathname === "/api/v1/ui/password/forgot"))
          expect(new URL(b.url()).searchParams.get("return_to")).toBe(accountPath)
          expect(yield* promise(() => b.title())).toBe("Reset your password · shiori")
          // The first Tab reaches the email field; Enter submits.
          yield* promise(() => b.keyboard.press("Tab"))
          expect(yield* promise(() => b.evaluate(() => document.activeElement?.id))).toBe("email")
          yield* promise(() => b.keyboard.type(user.email))
          yield* screenshot(b, "recovery-email")
          yield* promise(() => b.keyboard.press("Enter"))
          yield* promise(() =>
            b.getByText(`If an account exists for ${user.email}, we sent it a 6-digit code`).waitFor()
          )
          const code = yield* lastCode(identity, user.email)

          // A wrong code: the error is next to the field, tied to it and announced.
          const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, "0")
          yield* promise(() => b.getByLabel("Code from the mail").fill(wrong))
          yield* promise(() => b.getByLabel("New password").fill(newPassword))
          yield* promise(() => b.getByRole("button", { name: "Reset the password" }).click())
          const codeField = b.getByLabel("Code from the mail")
          yield* promise(() => b.getByRole("alert").waitFor())
          expect(yield* promise(() => codeField.getAttribute("aria-invalid"))).toBe("true")
          const describedBy = (yield* promise(() => codeField.getAttribute("aria-describedby")))!
          expect(yield* promise(() => b.locator(`#${describedBy.split(" ")[0]}`).innerText())).toMatch(
            /wrong or has expired/
          )
          yield* screenshot(b, "recovery-code-error")

          // The right code and the new password: the confirmation.
          yield* promise(() => codeField.fill(code))
          yield* promise(() => b.getByLabel("New password").fill(newPassword))
          yield* promise(() => b.getByRole("button", { name: "Reset the password" }).click())
          yield* promise(() => b.waitForURL((url) => url.searchParams.get("done") === "reset"))
          expect(yield* promise(() => b.getByRole("status").innerText())).toMatch(
            /Every device that was signed in to your account has been signed out/
          )
          yield* screenshot(b, "recovery-done")

          // Browser A is signed out: its next page is the sign-in page.
          yield* promise(() => a.reload())
          expect(a.url()).toMatch(/\/ui\/login\?return_to=/)
          // The relying party's refresh token is revoked.
          const after = yield* promise(() => refreshRequest(identity, client, refreshToken))
          expect(after.status).toBe(400)
          expect(after.body.error).toBe("invalid_grant")

          // From the confirmation to the sign-in page, `return_to` kept: the old password fails...
          yield* promise(() => b.getByRole("link", { name: "Sign in with the new password" }).click())
          yield* promise(() => b.waitForURL((url) => url.pathname === "/api/v1/ui/login"))
          yield* promise(() => b.getByLabel("Email").fill(user.email))
          yield* promise(() => b.getByLabel("Password").fill(user.password))
          yield* promise(() => b.getByRole("button", { name: "Sign in" }).click())
          yield* promise(() => b.getByRole("alert").waitFor())
          expect(yield* promise(() => b.getByRole("alert").textContent())).toContain("not right")
          // ...the new one signs in, and goes on to the account page.
          yield* promise(() => b.getByLabel("Password").fill(newPassword))
          yield* promise(() => b.getByRole("button", { name: "Sign in" }).click())
          yield* promise(() => b.waitForURL(`${issuer}/ui/account`))
          expect(yield* promise(() => b.getByText(`Signed in as ${user.email}`).count())).toBe(1)
        }),
      { timeout: 120_000 }
    )

    it.effect(
      "README \"Self-service accounts\": an address without an account gets the same page as one with it, and no code",
      () =>
        Effect.gen(function*() {
          const { identity, issuer } = yield* IdentityServers
          const user = yield* createUser()
          const stranger = `nobody_${Date.now().toString(36)}@example.com`
          const page = yield* newBrowser

          const knownStatus = yield* askForCode(page, issuer, user.email)
          const known = yield* visibleText(page, user.email)
          yield* screenshot(page, "recovery-sent")
          const unknownStatus = yield* askForCode(page, issuer, stranger)
          const unknown = yield* visibleText(page, stranger)

          expect(knownStatus).toBe(200)
          expect(unknownStatus).toBe(knownStatus)
          expect(known).toContain("If an account exists for <address>, we sent it a 6-digit code.")
          expect(unknown).toBe(known)
          // Each address got one mail: the account's carries a code, the other says there is no account.
          const [toOwner] = yield* mailTo(identity, user.email)
          const [toStranger, ...more] = yield* mailTo(identity, stranger)
          expect(toOwner!.text).toMatch(/\b[0-9]{6}\b/)
          expect(toStranger!.text).not.toMatch(/\b[0-9]{6}\b/)
          expect(more).toHaveLength(0)

          // Asking again at once is refused for either address alike: 429 with Retry-After, on step one.
          for (const email of [user.email, stranger]) {
            const [response] = yield* promise(() =>
              Promise.all([
                page.waitForResponse((r) => r.url() === `${issuer}/ui/password/forgot/send-code`),
                page.goto(`${issuer}/ui/password/forgot`).then(async () => {
                  await page.getByLabel("Email").fill(email)
                  await page.getByRole("button", { name: "Send the code" }).click()
                })
              ])
            )
            expect(response.status()).toBe(429)
            expect(Number(response.headers()["retry-after"])).toBeGreaterThan(0)
            expect(yield* promise(() => page.getByRole("alert").innerText())).toMatch(/Wait a little/)
            expect(yield* promise(() => page.getByLabel("Email").getAttribute("aria-invalid"))).toBe("true")
          }

          // A `return_to` that is not a path on this server is dropped, never carried on.
          const foreign = yield* promise(() =>
            fetch(`${issuer}/ui/password/forgot?return_to=${encodeURIComponent("https://evil.example/steal")}`)
          )
          const html = yield* promise(() => foreign.text())
          expect(html).toContain(`name="return_to" value=""`)
          expect(html).not.toContain("evil.example")
          const done = yield* promise(() =>
            fetch(`${issuer}/ui/password/forgot?done=reset&return_to=${encodeURIComponent("//evil.example/steal")}`)
              .then((r) => r.text())
          )
          expect(done).not.toContain("evil.example")
          expect(done).toContain(`href="/api/v1/ui/login"`)
        }),
      { timeout: 120_000 }
    )
  })
})
