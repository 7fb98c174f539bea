/**
 * Changing the second factor needs the account's password, and a sign-in's second step is used
 * once, over real HTTP (README, "Second factor"):
 *
 * - turning the factor on or off, and new recovery codes, need `current_password` besides a sign-in
 *   younger than 10 minutes (RFC 9470): without it the body is malformed (40001), a wrong one is
 *   10011 and counted in the bucket a password change counts in (429 10012 past five);
 * - turning it on or off ends every other session and revokes every refresh family of the account
 *   (a relying party's refresh token gets `invalid_grant`, RFC 6749 section 5.2), keeps the session
 *   that made the change, and mails the owner; the account page's forms ask for the password too;
 * - the sign-in page's pending second step starts one session at most: a second recovery code with
 *   the same pending value is refused and not spent, even when both arrive at once; a newer password
 *   sign-in and a password change cancel it.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as OTPAuth from "otpauth"
import { LoginRequest } from "../../schema/Identity/Login.js"
import { ChangePasswordRequest } from "../../schema/Identity/Me.js"
import { TwoFactorCodeRequest } from "../../schema/Identity/TwoFactor.js"
import { identityCall, identityClient, mailTo } from "../support/Clients.js"
import type { LoggedIn, TestUser } from "../support/IdentityServers.js"
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

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const Env = IdentityTestEnv()

const PERIOD_MS = 30_000

/** Waits until at least 8 seconds are left in the current 30-second step, then answers that step. */
const quietStep = promise(async () => {
  const into = Date.now() % PERIOD_MS
  if (into > PERIOD_MS - 8_000) await new Promise((resolve) => setTimeout(resolve, PERIOD_MS - into + 200))
  return Math.floor(Date.now() / PERIOD_MS)
})

/** The code of `secret` (base32) for time step `step` (RFC 6238 section 4). */
const codeAt = (secret: string, step: number) =>
  OTPAuth.HOTP.generate({ secret: OTPAuth.Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, counter: step })

/** A pending key for the session behind `session`. */
const setUp = (identity: string, session: LoggedIn) =>
  Effect.flatMap(identityClient(identity, session.accessToken), (client) => client.twoFactor.setup()).pipe(
    Effect.map((answer) => answer.data.secret)
  )

/** A user signed in through `POST /auth/login`, with a second factor turned on at step `step - 1`. */
const userWithFactor = (identity: string, step: number) =>
  Effect.gen(function*() {
    const user = yield* createUser()
    const session = yield* promise(() => login(identity, user))
    const secret = yield* setUp(identity, session)
    const enable = yield* (yield* identityClient(identity, session.accessToken)).twoFactor.enable({
      payload: new TwoFactorCodeRequest({ code: codeAt(secret, step - 1), current_password: user.password })
    })
    return { user, session, secret, recoveryCodes: enable.data.recovery_codes }
  })

const twoFactorOn = (userId: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ on: boolean }>`SELECT totp_enabled_at IS NOT NULL AS on FROM users WHERE id = ${userId}`.pipe(
        Effect.map((rows) => rows[0]!.on),
        Effect.orDie
      )
  )

const unusedRecoveryCodes = (userId: number) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ n: number }>`
      SELECT count(*)::int AS n FROM two_factor_recovery_codes WHERE user_id = ${userId} AND used_at IS NULL
    `.pipe(Effect.map((rows) => rows[0]!.n), Effect.orDie))

const hasSessionCookie = (res: Response) => res.headers.getSetCookie().some((c) => c.startsWith("shiori_session="))

/** POST of a form, as a browser with `cookies` sends it; redirects not followed. */
const postForm = (url: string, cookies: string, fields: Record<string, string>) =>
  promise(() =>
    fetch(url, {
      method: "POST",
      redirect: "manual",
      headers: { cookie: cookies, "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams(fields).toString()
    })
  )

/**
 * A browser on the sign-in page that gave `user`'s password: its cookies and the code step's
 * fields (with the pending sign-in).
 */
const passwordStep = (identity: string, user: TestUser) =>
  Effect.gen(function*() {
    // With a `return_to`, a sign-in that starts a session answers 303 to it.
    const first = yield* promise(() => fetch(`${identity}/api/v1/ui/login?return_to=%2Fapi%2Fv1%2Fui%2Faccount`))
    const cookies = cookiesOf(first).join("; ")
    const password = yield* postForm(`${identity}/api/v1/ui/login`, cookies, {
      csrf: hiddenValue(yield* promise(() => first.text()), "csrf"),
      email: user.email,
      password: user.password,
      return_to: "/api/v1/ui/account"
    })
    expect(password.status).toBe(200)
    expect(hasSessionCookie(password)).toBe(false)
    const html = yield* promise(() => password.text())
    const fields = {
      csrf: hiddenValue(html, "csrf"),
      pending: hiddenValue(html, "pending"),
      email: user.email,
      return_to: hiddenValue(html, "return_to")
    }
    /** The code step with a recovery code. */
    const withRecoveryCode = (code: string) =>
      postForm(`${identity}/api/v1/ui/login`, cookies, { ...fields, recovery_code: code })
    return { cookies, fields, withRecoveryCode }
  })

describe("changing the second factor needs the password and ends other sign-ins; its sign-in step is used once", () => {
  it.layer(Env, serverLayerOptions)((it) => {
    it.effect("README, \"Second factor\": turning it on needs current_password (40001 without); a wrong one is 10011, counted with password changes (429 10012 past five)", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const session = yield* promise(() => login(identity, user))
        const secret = yield* setUp(identity, session)
        const step = yield* quietStep
        const enable = (body: Record<string, string>) =>
          identityCall(identity, "POST", "/auth/2fa/enable", { token: session.accessToken, body })

        // Without the password: a malformed body, nothing checked or counted.
        const bare = yield* enable({ code: codeAt(secret, step) })
        expect(bare.status).toBe(400)
        expect(bare.body).toMatchObject({ code: 40001, data: null })

        // A wrong password: 10011, the factor stays off and the code stays unspent.
        const statuses: Array<number> = []
        for (let i = 0; i < 5; i++) {
          const wrong = yield* enable({ code: codeAt(secret, step), current_password: `not-it-${i}` })
          if (i === 0) expect(wrong.body).toEqual({ code: 10011, message: "Wrong password", data: null })
          statuses.push(wrong.status)
        }
        expect(statuses).toEqual([401, 401, 401, 401, 401])
        expect(yield* twoFactorOn(user.id)).toBe(false)

        // Five guesses, then even the right password waits, here and at a password change alike.
        const sixth = yield* enable({ code: codeAt(secret, step), current_password: user.password })
        expect(sixth.status).toBe(429)
        expect(sixth.body).toEqual({ code: 10012, message: "Too many attempts", data: null })
        expect(Number(sixth.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
        const passwordChange = yield* identityCall(identity, "PUT", "/auth/password", {
          token: session.accessToken,
          body: { current_password: user.password, new_password: "a brand new passphrase" }
        })
        expect(passwordChange.status).toBe(429)
        expect(passwordChange.body.code).toBe(10012)
        expect(yield* twoFactorOn(user.id)).toBe(false)

        // Another account, another bucket: the right password and the code turn the factor on.
        const other = yield* createUser()
        const otherSession = yield* promise(() => login(identity, other))
        const otherSecret = yield* setUp(identity, otherSession)
        const on = yield* (yield* identityClient(identity, otherSession.accessToken)).twoFactor.enable({
          payload: new TwoFactorCodeRequest({ code: codeAt(otherSecret, step), current_password: other.password })
        })
        expect(on.data.recovery_codes).toHaveLength(10)
        expect(yield* twoFactorOn(other.id)).toBe(true)
      }))

    it.effect("README, \"Second factor\": turning it off and new recovery codes need current_password too; a wrong one spends no code", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const step = yield* quietStep
        const { recoveryCodes, session, user } = yield* userWithFactor(identity, step)
        for (const [method, path] of [["DELETE", "/auth/2fa"], ["POST", "/auth/2fa/recovery-codes"]] as const) {
          const bare = yield* identityCall(identity, method, path, {
            token: session.accessToken,
            body: { code: recoveryCodes[0]! }
          })
          expect(bare.status).toBe(400)
          expect(bare.body.code).toBe(40001)
          const wrong = yield* identityCall(identity, method, path, {
            token: session.accessToken,
            body: { code: recoveryCodes[0]!, current_password: "not the password" }
          })
          expect(wrong.status).toBe(401)
          expect(wrong.body.code).toBe(10011)
        }
        expect(yield* unusedRecoveryCodes(user.id)).toBe(10)
        expect(yield* twoFactorOn(user.id)).toBe(true)
        const off = yield* (yield* identityClient(identity, session.accessToken)).twoFactor.disable({
          payload: new TwoFactorCodeRequest({ code: recoveryCodes[0]!, current_password: user.password })
        })
        expect(off).toEqual({ code: 0, message: "ok", data: null })
        expect(yield* twoFactorOn(user.id)).toBe(false)
      }))

    it.effect("RFC 6749 section 5.2: turning the factor on, and off, ends every other session and refresh family (invalid_grant), keeps this one, and mails the owner", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const user = yield* createUser()
        const here = yield* promise(() => login(identity, user))
        const elsewhere = yield* promise(() => login(identity, user))
        const rpTokens = yield* promise(() => tokensFor(identity, client, elsewhere, "openid offline_access"))
        const ownTokens = yield* promise(() => tokensFor(identity, client, here, "openid offline_access"))
        const secret = yield* setUp(identity, here)
        const step = yield* quietStep
        const account = yield* identityClient(identity, here.accessToken)
        const on = yield* account.twoFactor.enable({
          payload: new TwoFactorCodeRequest({ code: codeAt(secret, step), current_password: user.password })
        })

        // The other sign-in is over, as a token and as a browser cookie; this one lives.
        expect((yield* identityCall(identity, "GET", "/auth/me", { token: elsewhere.accessToken })).body.code).toBe(
          10002
        )
        const otherBrowser = yield* promise(() =>
          fetch(`${identity}/api/v1/ui/account/two-factor`, {
            headers: { cookie: elsewhere.cookie },
            redirect: "manual"
          })
        )
        expect(otherBrowser.status).toBe(302)
        expect(otherBrowser.headers.get("location")).not.toContain("login_hint")
        expect((yield* account.account.me()).code).toBe(0)
        // Every refresh family is revoked, including the ones issued through this session.
        for (const refreshToken of [rpTokens.refresh_token, ownTokens.refresh_token]) {
          const refreshed = yield* promise(() => refreshRequest(identity, client, refreshToken))
          expect(refreshed.status).toBe(400)
          expect(refreshed.body.error).toBe("invalid_grant")
        }
        const onMail = (yield* mailTo(identity, user.email)).at(-1)!
        expect(onMail.subject).toBe("Two-factor authentication was turned on for your shiori account")
        expect(onMail.text).toContain("every other sign-in was ended")

        // Off: the same again for a sign-in made meanwhile (with a code).
        const later = yield* identityCall(identity, "POST", "/auth/login", {
          body: { email: user.email, password: user.password, otp: codeAt(secret, step + 1) }
        })
        expect(later.status).toBe(200)
        const laterTokens = yield* promise(() =>
          tokensFor(identity, client, { accessToken: later.body.data.access_token, cookie: "", setCookie: "" })
        )
        yield* account.twoFactor.disable({
          payload: new TwoFactorCodeRequest({ code: on.data.recovery_codes[0]!, current_password: user.password })
        })
        expect((yield* identityCall(identity, "GET", "/auth/me", { token: later.body.data.access_token })).body.code)
          .toBe(
            10002
          )
        expect((yield* promise(() => refreshRequest(identity, client, laterTokens.refresh_token))).body.error).toBe(
          "invalid_grant"
        )
        expect((yield* account.account.me()).code).toBe(0)
        expect((yield* mailTo(identity, user.email)).at(-1)!.subject).toBe(
          "Two-factor authentication was turned off for your shiori account"
        )
      }))

    it.effect("the account page's second-factor forms ask for the password: missing 400, wrong 401 (the error on its field), right turns it on and ends the other sign-in", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const browser = yield* promise(() => login(identity, user))
        const elsewhere = yield* promise(() => login(identity, user))
        const pageUrl = `${identity}/api/v1/ui/account/two-factor`
        const first = yield* promise(() => fetch(pageUrl, { headers: { cookie: browser.cookie } }))
        expect(first.status).toBe(200)
        const html = yield* promise(() => first.text())
        expect(html).toMatch(/<input id="enable-password" name="current_password" type="password"/)
        const cookies = [browser.cookie, ...cookiesOf(first)].join("; ")
        const secret = /id="totp-secret" class="secret">([A-Z2-7 ]+)</.exec(html)![1]!.replace(/\s+/g, "")
        const step = yield* quietStep
        const form = { csrf: hiddenValue(html, "csrf"), action: "enable", code: codeAt(secret, step) }

        const missing = yield* postForm(pageUrl, cookies, form)
        expect(missing.status).toBe(400)
        const missingHtml = yield* promise(() => missing.text())
        expect(missingHtml).toContain(`role="alert" id="enable-password-error">Enter your password.`)

        const wrong = yield* postForm(pageUrl, cookies, { ...form, current_password: "not the password" })
        expect(wrong.status).toBe(401)
        const wrongHtml = yield* promise(() => wrong.text())
        expect(wrongHtml).toContain(`role="alert" id="enable-password-error">That password is not right.`)
        expect(wrongHtml).toMatch(
          /id="enable-password"[^>]*aria-describedby="enable-password-hint enable-password-error"/
        )
        expect(yield* twoFactorOn(user.id)).toBe(false)

        const right = yield* postForm(pageUrl, cookies, { ...form, current_password: user.password })
        expect(right.status).toBe(200)
        expect(yield* promise(() => right.text())).toContain(`id="recovery-codes"`)
        expect(yield* twoFactorOn(user.id)).toBe(true)
        expect((yield* identityCall(identity, "GET", "/auth/me", { token: elsewhere.accessToken })).body.code).toBe(
          10002
        )
        const again = yield* promise(() => fetch(pageUrl, { headers: { cookie: browser.cookie }, redirect: "manual" }))
        expect(again.status).toBe(200)
      }))

    it.effect("the sign-in page's pending second step is used once: a second recovery code with it is refused and not spent", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const step = yield* quietStep
        const { recoveryCodes, user } = yield* userWithFactor(identity, step)
        const browser = yield* passwordStep(identity, user)
        const first = yield* browser.withRecoveryCode(recoveryCodes[0]!)
        expect(first.status).toBe(303)
        expect(hasSessionCookie(first)).toBe(true)
        const second = yield* browser.withRecoveryCode(recoveryCodes[1]!)
        expect(second.status).toBe(401)
        expect(hasSessionCookie(second)).toBe(false)
        expect(yield* promise(() => second.text())).toContain("This sign-in expired or was already used.")
        // The refused step spent nothing: that recovery code still signs in (once).
        expect(yield* unusedRecoveryCodes(user.id)).toBe(9)
        const api = yield* (yield* identityClient(identity)).auth.login({
          payload: new LoginRequest({ email: user.email, password: user.password, recovery_code: recoveryCodes[1]! })
        })
        expect(api.data.access_token).toEqual(expect.any(String))
      }))

    it.effect("the pending second step is used once even when two recovery codes arrive at the same moment", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const step = yield* quietStep
        const { recoveryCodes, user } = yield* userWithFactor(identity, step)
        const browser = yield* passwordStep(identity, user)
        const answers = yield* Effect.all(
          [browser.withRecoveryCode(recoveryCodes[2]!), browser.withRecoveryCode(recoveryCodes[3]!)],
          { concurrency: 2 }
        )
        expect(answers.map((res) => res.status).sort()).toEqual([303, 401])
        expect(answers.filter(hasSessionCookie)).toHaveLength(1)
        expect(yield* unusedRecoveryCodes(user.id)).toBe(9)
      }))

    it.effect("a newer password sign-in cancels the older pending second step", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const step = yield* quietStep
        const { recoveryCodes, user } = yield* userWithFactor(identity, step)
        const older = yield* passwordStep(identity, user)
        const newer = yield* passwordStep(identity, user)
        const stale = yield* older.withRecoveryCode(recoveryCodes[0]!)
        expect(stale.status).toBe(401)
        expect(hasSessionCookie(stale)).toBe(false)
        const fresh = yield* newer.withRecoveryCode(recoveryCodes[0]!)
        expect(fresh.status).toBe(303)
        expect(hasSessionCookie(fresh)).toBe(true)

        // The password step of `POST /auth/login` (10014 without a code) cancels it as well.
        const pending = yield* passwordStep(identity, user)
        const bare = yield* identityCall(identity, "POST", "/auth/login", {
          body: { email: user.email, password: user.password }
        })
        expect(bare.body.code).toBe(10014)
        expect((yield* pending.withRecoveryCode(recoveryCodes[1]!)).status).toBe(401)
      }))

    it.effect("a password change cancels the pending second step begun with the old password", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const step = yield* quietStep
        const { recoveryCodes, session, user } = yield* userWithFactor(identity, step)
        const pending = yield* passwordStep(identity, user)
        const changed = yield* (yield* identityClient(identity, session.accessToken)).account.changePassword({
          payload: new ChangePasswordRequest({
            current_password: user.password,
            new_password: "correct horse battery staple"
          })
        })
        expect(changed.code).toBe(0)
        const stale = yield* pending.withRecoveryCode(recoveryCodes[0]!)
        expect(stale.status).toBe(401)
        expect(hasSessionCookie(stale)).toBe(false)
        expect(yield* unusedRecoveryCodes(user.id)).toBe(10)
        // The new password starts a step that works.
        const renewed = yield* passwordStep(identity, { ...user, password: "correct horse battery staple" })
        expect((yield* renewed.withRecoveryCode(recoveryCodes[0]!)).status).toBe(303)
      }))
  })
})
