/**
 * Emailed codes belong to the flow that asked for them (src/identity/account/EmailCodes.ts), through
 * real HTTP with two client addresses (test/support/LocalAddress.ts): a stranger asking codes for
 * someone's address never makes that person's own request 429, a stranger's wrong guesses never
 * spend their code, registration needs the pending value of its send-code, and a known address
 * answers byte for byte like an unknown one. An email change needs the current password (or a
 * second-factor code), ends every other session and refresh family and tells the old address.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as OTPAuth from "otpauth"
import { codesMailedTo, mailTo } from "../support/Clients.js"
import {
  cookiesOf,
  createClient,
  createUser,
  hiddenValue,
  IdentityServers,
  IdentityTestEnv,
  login,
  refreshRequest,
  serverLayerOptions,
  tokensFor
} from "../support/IdentityServers.js"
import { envelopeCallFrom } from "../support/LocalAddress.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

// Many codes from 127.0.0.1 in one file: the per-client-address burst is not what is tested here.
const Env = IdentityTestEnv({ IDENTITY_CODE_IP_BURST: "100" })

const OWNER = "127.0.0.1"

/** A JSON call from the loopback address `from`; the envelope, the raw text and the headers. */
const callFrom = (
  from: string,
  identity: string,
  method: string,
  path: string,
  options: { readonly token?: string; readonly body?: unknown } = {}
) => promise(() => envelopeCallFrom(from, identity, method, path, options))

/** Every header of an answer as `[name, value]`, in order. */
const headerList = (headers: Headers) => {
  const list: Array<[string, string]> = []
  headers.forEach((value, name) => list.push([name, value]))
  return list
}

let counter = 0
const freshEmail = () => `flow_${Date.now().toString(36)}_${counter++}@example.com`

const wrongOf = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, "0")

const password = "a long enough passphrase"

describe("emailed codes bound to their flow", () => {
  it.layer(Env, serverLayerOptions)((it) => {
    it.effect("a stranger asking codes for an address does not make its owner's send-code or an email change to it 429", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const victim = freshEmail()
        const stranger = yield* createUser()
        const strangerSession = yield* promise(() => login(identity, stranger))
        // The stranger, from its own address, asks a registration code and an email-change code for it.
        const first = yield* callFrom("127.0.0.2", identity, "POST", "/auth/register/send-code", {
          body: { email: victim }
        })
        expect(first.status).toBe(200)
        const change = yield* callFrom("127.0.0.2", identity, "POST", "/auth/email/send-code", {
          token: strangerSession.accessToken,
          body: { email: victim }
        })
        expect(change.status).toBe(200)
        // Its own limit stops the stranger...
        const again = yield* callFrom("127.0.0.2", identity, "POST", "/auth/register/send-code", {
          body: { email: victim }
        })
        expect(again.status).toBe(429)
        expect(again.body).toEqual({ code: 10013, message: "Code requested too soon", data: null })
        // ...and nobody else: the owner registering it, a signed-in user moving to it.
        const own = yield* callFrom(OWNER, identity, "POST", "/auth/register/send-code", { body: { email: victim } })
        expect(own.status).toBe(200)
        expect(own.body.code).toBe(0)
        const user = yield* createUser()
        const session = yield* promise(() => login(identity, user))
        const move = yield* callFrom(OWNER, identity, "POST", "/auth/email/send-code", {
          token: session.accessToken,
          body: { email: victim }
        })
        expect(move.status).toBe(200)
        expect(move.body).toEqual({ code: 0, message: "ok", data: { expires_in: 600 } })
      }))

    it.effect("a stranger's wrong guesses, with its own pending value or none, do not spend the owner's code", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const email = freshEmail()
        const owner = yield* callFrom(OWNER, identity, "POST", "/auth/register/send-code", { body: { email } })
        const ownerPending = owner.body.data.pending as string
        const stranger = yield* callFrom("127.0.0.3", identity, "POST", "/auth/register/send-code", {
          body: { email }
        })
        const strangerPending = stranger.body.data.pending as string
        expect(strangerPending).not.toBe(ownerPending)
        const [ownerCode, strangerCode] = yield* codesMailedTo(identity, email)
        const guess = (pending: string | undefined, code: string) =>
          callFrom("127.0.0.3", identity, "POST", "/auth/register", {
            body: { email, ...(pending === undefined ? {} : { pending }), code, password, name: "Stranger" }
          })
        // Its own code's five tries, then that code (only) is spent.
        const answers: Array<number> = []
        for (let i = 0; i < 6; i++) answers.push((yield* guess(strangerPending, wrongOf(strangerCode!))).body.code)
        expect(answers).toEqual([10004, 10004, 10004, 10004, 10012, 10012])
        // The owner's code under the stranger's pending value, or an invented one, or none.
        expect((yield* guess(strangerPending, ownerCode!)).body.code).toBe(10012)
        for (let i = 0; i < 6; i++) {
          expect((yield* guess("A".repeat(43), ownerCode!)).body.code).toBe(10004)
        }
        const none = yield* guess(undefined, ownerCode!)
        expect(none.status).toBe(400)
        expect(none.body.code).toBe(40001)
        // The stranger's code does not work with the owner's pending value either (one try of five).
        const crossed = yield* callFrom(OWNER, identity, "POST", "/auth/register", {
          body: { email, pending: ownerPending, code: strangerCode, password, name: "Owner" }
        })
        expect(crossed.body.code).toBe(10004)
        const registered = yield* callFrom(OWNER, identity, "POST", "/auth/register", {
          body: { email, pending: ownerPending, code: ownerCode, password, name: "Owner" }
        })
        expect(registered.status).toBe(200)
        expect(registered.body.code).toBe(0)
      }))

    it.effect("POST /auth/register needs the pending value of the send-code that mailed the code", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const email = freshEmail()
        const other = freshEmail()
        const sent = yield* callFrom(OWNER, identity, "POST", "/auth/register/send-code", { body: { email } })
        const otherSent = yield* callFrom(OWNER, identity, "POST", "/auth/register/send-code", {
          body: { email: other }
        })
        const [code] = yield* codesMailedTo(identity, email)
        const register = (body: Record<string, unknown>) =>
          callFrom(OWNER, identity, "POST", "/auth/register", { body: { email, code, password, name: "Mio", ...body } })
        const missing = yield* register({})
        expect(missing.status).toBe(400)
        expect(missing.body.code).toBe(40001)
        for (const pending of ["", "not-a-pending-value", "B".repeat(43), otherSent.body.data.pending]) {
          const refused = yield* register({ pending })
          expect({ pending, status: refused.status, code: refused.body.code }).toEqual({
            pending,
            status: 400,
            code: pending === "" ? 40001 : 10004
          })
        }
        expect((yield* register({ pending: sent.body.data.pending })).status).toBe(200)
      }))

    it.effect("register/send-code answers a known address byte for byte like an unknown one, apart from the pending value", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const known = yield* createUser()
        const ask = (email: string) =>
          callFrom(OWNER, identity, "POST", "/auth/register/send-code", { body: { email } })
        const a = yield* ask(known.email)
        const b = yield* ask(freshEmail())
        expect(a.status).toBe(200)
        expect(b.status).toBe(200)
        const pendingA = a.body.data.pending as string
        const pendingB = b.body.data.pending as string
        expect(pendingA).toMatch(/^[A-Za-z0-9_-]{43}$/)
        expect(pendingB).toMatch(/^[A-Za-z0-9_-]{43}$/)
        expect(a.text.replace(pendingA, "PENDING")).toBe(b.text.replace(pendingB, "PENDING"))
        const headers = (reply: typeof a) =>
          headerList(reply.headers).filter(([name]) => name !== "date" && name !== "x-request-id")
        expect(headers(a)).toEqual(headers(b))
      }))

    it.effect("PUT /auth/email needs the current password: without it 400 40001, wrong 401 10011, counted", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const sql = yield* SqlClient.SqlClient
        const user = yield* createUser()
        const { accessToken } = yield* promise(() => login(identity, user))
        const target = freshEmail()
        yield* callFrom(OWNER, identity, "POST", "/auth/email/send-code", {
          token: accessToken,
          body: { email: target }
        })
        const [code] = yield* codesMailedTo(identity, target)
        const change = (body: Record<string, unknown>) =>
          callFrom(OWNER, identity, "PUT", "/auth/email", {
            token: accessToken,
            body: { email: target, code, ...body }
          })
        const without = yield* change({})
        expect(without.status).toBe(400)
        expect(without.body.code).toBe(40001)
        const wrong = yield* change({ current_password: "not my password" })
        expect(wrong.status).toBe(401)
        expect(wrong.body).toEqual({ code: 10011, message: "Wrong password", data: null })
        // No second factor on this account: a code of one is wrong.
        const noFactor = yield* change({ two_factor_code: "123456" })
        expect(noFactor.status).toBe(401)
        expect(noFactor.body.code).toBe(10015)
        // None of these tried the emailed code, and wrong passwords share the password change's budget.
        const tried = yield* sql`SELECT attempts FROM email_codes WHERE email = ${target}`
        expect(tried).toEqual([{ attempts: 0 }])
        for (let i = 0; i < 3; i++) yield* change({ current_password: "not my password" })
        const spent = yield* callFrom(OWNER, identity, "PUT", "/auth/password", {
          token: accessToken,
          body: { current_password: user.password, new_password: "another long passphrase" }
        })
        expect(spent.status).toBe(429)
        expect(spent.body.code).toBe(10012)
        expect(Number(spent.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
      }))

    it.effect("a completed email change ends every other session and refresh family and tells the old address", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const client = yield* createClient()
        const here = yield* promise(() => login(identity, user))
        const elsewhere = yield* promise(() => login(identity, user))
        const rpTokens = yield* promise(() => tokensFor(identity, client, elsewhere, "openid offline_access"))
        const target = freshEmail()
        yield* callFrom(OWNER, identity, "POST", "/auth/email/send-code", {
          token: here.accessToken,
          body: { email: target }
        })
        const [code] = yield* codesMailedTo(identity, target)
        const moved = yield* callFrom(OWNER, identity, "PUT", "/auth/email", {
          token: here.accessToken,
          body: { email: target, code, current_password: user.password }
        })
        expect(moved.status).toBe(200)
        expect(moved.body.data).toMatchObject({ email: target, email_verified: true })
        // The other browser's token and cookie are dead, the relying party's refresh token too.
        expect((yield* callFrom(OWNER, identity, "GET", "/auth/me", { token: elsewhere.accessToken })).body.code)
          .toBe(10002)
        const page = yield* promise(() =>
          fetch(`${identity}/api/v1/ui/account`, { headers: { cookie: elsewhere.cookie }, redirect: "manual" })
        )
        expect(page.status).toBe(302)
        expect(page.headers.get("location")).toMatch(/\/ui\/login\?/)
        const refreshed = yield* promise(() => refreshRequest(identity, client, rpTokens.refresh_token))
        expect(refreshed.status).toBe(400)
        expect(refreshed.body.error).toBe("invalid_grant")
        // This session stays; the old address was told.
        expect((yield* callFrom(OWNER, identity, "GET", "/auth/me", { token: here.accessToken })).status).toBe(200)
        const told = (yield* mailTo(identity, user.email)).at(-1)!
        expect(told.subject).toMatch(/email address was changed/)
        expect(told.text).toContain(target)
      }))

    it.effect("with a second factor on, a recovery code can stand in for the password (a wrong one is 401 10015)", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const { accessToken } = yield* promise(() => login(identity, user))
        const setup = yield* callFrom(OWNER, identity, "POST", "/auth/2fa/setup", { token: accessToken })
        expect(setup.status).toBe(200)
        const enable = yield* callFrom(OWNER, identity, "POST", "/auth/2fa/enable", {
          token: accessToken,
          body: {
            code: new OTPAuth.TOTP({ secret: setup.body.data.secret }).generate(),
            current_password: user.password
          }
        })
        expect(enable.status).toBe(200)
        const recoveryCodes = enable.body.data.recovery_codes as Array<string>
        const target = freshEmail()
        yield* callFrom(OWNER, identity, "POST", "/auth/email/send-code", {
          token: accessToken,
          body: { email: target }
        })
        const [code] = yield* codesMailedTo(identity, target)
        const wrong = yield* callFrom(OWNER, identity, "PUT", "/auth/email", {
          token: accessToken,
          body: { email: target, code, two_factor_code: "aaaa-bbbb-cccc-dddd" }
        })
        expect(wrong.status).toBe(401)
        expect(wrong.body.code).toBe(10015)
        const moved = yield* callFrom(OWNER, identity, "PUT", "/auth/email", {
          token: accessToken,
          body: { email: target, code, two_factor_code: recoveryCodes[0] }
        })
        expect(moved.status).toBe(200)
        expect(moved.body.data.email).toBe(target)
      }))

    it.effect("the registration page keeps the pending value in an HttpOnly cookie; without it the code is refused", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const email = freshEmail()
        const first = yield* promise(() => fetch(`${identity}/api/v1/ui/register`))
        const csrfCookie = cookiesOf(first).join("; ")
        const csrf = hiddenValue(yield* promise(() => first.text()), "csrf")
        const post = (path: string, cookie: string, fields: Record<string, string>) =>
          promise(() =>
            fetch(`${identity}/api/v1/ui/${path}`, {
              method: "POST",
              redirect: "manual",
              headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
              body: new URLSearchParams({ csrf, ...fields }).toString()
            })
          )
        const sent = yield* post("register/send-code", csrfCookie, { email })
        expect(sent.status).toBe(303)
        expect(sent.headers.get("location")).not.toMatch(/pending/)
        const setCookie = sent.headers.getSetCookie().find((c) => c.startsWith("shiori_register="))!
        expect(setCookie).toMatch(/^shiori_register=[A-Za-z0-9_-]{43};/)
        expect(setCookie).toMatch(/HttpOnly/i)
        expect(setCookie).toMatch(/SameSite=Lax/i)
        expect(setCookie).toMatch(/Path=\/api\/v1/)
        expect(setCookie).toMatch(/Max-Age=600/)
        const [code] = yield* codesMailedTo(identity, email)
        const form = { email, code: code!, name: "Page", password }
        // Another browser (no cookie of the first step) cannot use the code.
        const elsewhere = yield* post("register", csrfCookie, form)
        expect(elsewhere.status).toBe(400)
        expect(yield* promise(() => elsewhere.text())).toMatch(/wrong or has expired/)
        const done = yield* post("register", [csrfCookie, ...cookiesOf(sent)].join("; "), form)
        expect(done.status).toBe(303)
        expect(done.headers.get("location")).toMatch(/\/ui\/account\?done=registered$/)
        const cookies = done.headers.getSetCookie()
        expect(cookies.some((c) => /^shiori_session=[A-Za-z0-9_-]{43};/.test(c))).toBe(true)
        expect(cookies.some((c) => /^shiori_register=;/.test(c) && /Max-Age=0|Expires=Thu, 01 Jan 1970/i.test(c)))
          .toBe(true)
      }))

    it.effect("the account page changes the email only with the current password", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const session = yield* promise(() => login(identity, user))
        const target = freshEmail()
        const page = (query = "") =>
          Effect.gen(function*() {
            const res = yield* promise(() =>
              fetch(`${identity}/api/v1/ui/account${query}`, { headers: { cookie: session.cookie } })
            )
            const html = yield* promise(() => res.text())
            return { html, cookie: [session.cookie, ...cookiesOf(res)].join("; "), csrf: hiddenValue(html, "csrf") }
          })
        const post = (path: string, fields: Record<string, string>) =>
          Effect.gen(function*() {
            const { cookie, csrf } = yield* page()
            const res = yield* promise(() =>
              fetch(`${identity}/api/v1/ui/account/${path}`, {
                method: "POST",
                redirect: "manual",
                headers: { cookie, "content-type": "application/x-www-form-urlencoded" },
                body: new URLSearchParams({ csrf, ...fields }).toString()
              })
            )
            return { status: res.status, location: res.headers.get("location"), html: yield* promise(() => res.text()) }
          })
        const sent = yield* post("email/send-code", { email: target })
        expect(sent.status).toBe(303)
        const step = yield* page(`?email=${encodeURIComponent(target)}`)
        expect(step.html).toContain(`name="current_password"`)
        expect(step.html).toContain(`<label for="email-current-password">Your current password</label>`)
        const [code] = yield* codesMailedTo(identity, target)
        const without = yield* post("email", { email: target, code: code! })
        expect(without.status).toBe(400)
        expect(without.html).toMatch(/id="email-current-password"[^>]*aria-invalid="true"/)
        const wrong = yield* post("email", { email: target, code: code!, current_password: "not my password" })
        expect(wrong.status).toBe(401)
        expect(wrong.html).toContain("This is not your current password.")
        const done = yield* post("email", { email: target, code: code!, current_password: user.password })
        expect(done.status).toBe(303)
        expect(done.location).toMatch(/\/ui\/account\?done=email$/)
        expect((yield* mailTo(identity, user.email)).at(-1)!.subject).toMatch(/email address was changed/)
      }))
  })
})
