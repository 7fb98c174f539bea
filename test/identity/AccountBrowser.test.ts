/**
 * Registration and the account page in a real browser (headless Chromium from
 * test/support/Browser.ts), as a person would use them: register with the emailed code read from
 * the development mailbox, land signed in on the account page; change the password and see the
 * other browser's session end. Forms are filled from the keyboard, and errors are tied to their
 * fields (`aria-describedby`). Screenshots go to test-results/screenshots/ (git-ignored).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Fs from "node:fs"
import * as Path from "node:path"
import type { Page } from "playwright-core"
import sharp from "sharp"
import { chromiumContext } from "../support/Browser.js"
import { createUser, IdentityServers, IdentityTestEnv, serverLayerOptions } from "../support/IdentityServers.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const SCREENSHOTS = Path.resolve(import.meta.dirname, "../../test-results/screenshots")
const screenshot = (page: Page, name: string) =>
  promise(async () => {
    Fs.mkdirSync(SCREENSHOTS, { recursive: true })
    await page.screenshot({ path: Path.join(SCREENSHOTS, `${name}.png`), fullPage: true })
  })

const newPage = Effect.gen(function*() {
  const { context } = yield* chromiumContext
  return context.pages()[0] ?? (yield* promise(() => context.newPage()))
})

const signInAt = (page: Page, issuer: string, user: { email: string; password: string }) =>
  promise(async () => {
    await page.goto(`${issuer}/ui/account`)
    await page.getByLabel("Email").fill(user.email)
    await page.getByLabel("Password").fill(user.password)
    await page.getByRole("button", { name: "Sign in" }).click()
    await page.waitForURL(`${issuer}/ui/account`)
  })

describe("Registration and account pages in Chromium", () => {
  it.layer(IdentityTestEnv(), serverLayerOptions)((it) => {
    it.effect("register -> mailbox -> code -> signed in -> account page, from the keyboard (README, \"Self-service accounts\")", () =>
      Effect.gen(function*() {
        const { issuer } = yield* IdentityServers
        const page = yield* newPage
        const email = `walker_${Date.now().toString(36)}@example.com`
        yield* promise(() => page.goto(`${issuer}/ui/register`))
        expect(yield* promise(() => page.title())).toBe("Create an account · shiori")
        // The first Tab reaches the email field; Enter submits.
        yield* promise(() => page.keyboard.press("Tab"))
        expect(yield* promise(() => page.evaluate(() => document.activeElement?.id))).toBe("email")
        yield* promise(() => page.keyboard.type(email))
        yield* screenshot(page, "register-email")
        yield* promise(() => page.keyboard.press("Enter"))
        yield* promise(() => page.waitForURL(/\/ui\/register\?email=/))
        yield* promise(() => page.getByText(`We sent a 6-digit code to ${email}`).waitFor())

        // The mail, read in the development mailbox page of another tab.
        const mailbox = yield* promise(() => page.context().newPage())
        yield* promise(() => mailbox.goto(`${issuer}/ui/dev/mailbox?to=${encodeURIComponent(email)}`))
        const mailText = yield* promise(() => mailbox.locator("article.mail pre").first().innerText())
        const code = /\b([0-9]{6})\b/.exec(mailText)![1]!
        yield* promise(() => mailbox.close())

        // A wrong code: the error is next to the field, tied to it and announced.
        const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, "0")
        yield* promise(() => page.getByLabel("Code from the mail").fill(wrong))
        yield* promise(() => page.getByLabel("Display name").fill("Walker"))
        yield* promise(() => page.getByLabel("Password", { exact: true }).fill("a walk in the park at dawn"))
        yield* promise(() => page.getByRole("button", { name: "Create the account" }).click())
        const codeField = page.getByLabel("Code from the mail")
        expect(yield* promise(() => codeField.getAttribute("aria-invalid"))).toBe("true")
        const describedBy = (yield* promise(() => codeField.getAttribute("aria-describedby")))!
        expect(yield* promise(() => page.locator(`#${describedBy.split(" ")[0]}`).innerText())).toMatch(
          /wrong or has expired/
        )
        expect(yield* promise(() => page.getByRole("alert").innerText())).toMatch(/wrong or has expired/)
        yield* screenshot(page, "register-code-error")

        yield* promise(() => codeField.fill(code))
        yield* promise(() => page.getByLabel("Password", { exact: true }).fill("a walk in the park at dawn"))
        yield* promise(() => page.getByRole("button", { name: "Create the account" }).click())
        yield* promise(() => page.waitForURL(`${issuer}/ui/account?done=registered`))
        expect(yield* promise(() => page.getByRole("status").innerText())).toMatch(/Welcome/)
        expect(yield* promise(() => page.getByText(`Signed in as ${email} (verified)`).count())).toBe(1)
        yield* screenshot(page, "account")

        // The profile form saves.
        yield* promise(() => page.getByLabel("About you").fill("Walks through every route."))
        yield* promise(() => page.getByRole("button", { name: "Save the profile" }).click())
        yield* promise(() => page.waitForURL(`${issuer}/ui/account?done=profile`))
        expect(yield* promise(() => page.getByLabel("About you").inputValue())).toBe("Walks through every route.")
        // An avatar from a file picker: stored re-encoded and shown on the page.
        const png = yield* promise(() =>
          sharp({ create: { width: 300, height: 200, channels: 3, background: "#cc3366" } }).png().toBuffer()
        )
        yield* promise(() =>
          page.getByLabel("Picture").setInputFiles({ name: "me.png", mimeType: "image/png", buffer: png })
        )
        yield* promise(() => page.getByRole("button", { name: "Upload" }).click())
        yield* promise(() => page.waitForURL(`${issuer}/ui/account?done=avatar`))
        const avatar = page.getByAltText("Your current avatar")
        expect(yield* promise(() => avatar.evaluate((img: HTMLImageElement) => img.complete && img.naturalWidth))).toBe(
          256
        )
        yield* screenshot(page, "account-avatar")
        // Every page forbids framing, like the sign-in pages.
        const response = yield* promise(() => page.goto(`${issuer}/ui/account`))
        expect(response!.headers()["content-security-policy"]).toContain("frame-ancestors 'none'")
      }))

    it.effect("changing the password on the account page ends the other browser's session (README, \"Self-service accounts\")", () =>
      Effect.gen(function*() {
        const { issuer } = yield* IdentityServers
        const user = yield* createUser()
        const first = yield* newPage
        const second = yield* newPage
        yield* signInAt(first, issuer, user)
        yield* signInAt(second, issuer, user)
        yield* promise(() => first.reload())
        expect(yield* promise(() => first.locator("ul.sessions li").count())).toBe(2)

        // A weak new password is refused next to its field.
        yield* promise(() => first.getByLabel("Current password").fill(user.password))
        yield* promise(() => first.getByLabel("New password").fill("password123"))
        yield* promise(() => first.getByRole("button", { name: "Change the password" }).click())
        expect(yield* promise(() => first.getByLabel("New password").getAttribute("aria-invalid"))).toBe("true")

        yield* promise(() => first.getByLabel("Current password").fill(user.password))
        yield* promise(() => first.getByLabel("New password").fill("an entirely new passphrase"))
        yield* promise(() => first.getByRole("button", { name: "Change the password" }).click())
        yield* promise(() => first.waitForURL(`${issuer}/ui/account?done=password`))
        expect(yield* promise(() => first.locator("ul.sessions li").count())).toBe(1)
        yield* screenshot(first, "account-password-changed")

        // The other browser is signed out: its account page sends it to sign in.
        yield* promise(() => second.goto(`${issuer}/ui/account`))
        expect(second.url()).toMatch(/\/ui\/login\?return_to=/)
      }))
  })
})
