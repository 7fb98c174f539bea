/**
 * The second factor over real HTTP: TOTP set-up (RFC 6238) with recovery codes, sign-in asking for
 * a code (envelope 10014/10015), single use of a code per time step (RFC 6238 section 5.2),
 * throttling (10012), the 10-minute rule (10016, RFC 9470), the id_token `amr` claim (OpenID
 * Connect Core 1.0 section 2, RFC 8176) through the authorization code and refresh, and encryption
 * of the secret at rest.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import * as Jose from "jose"
import * as OTPAuth from "otpauth"
import { TwoFactorCodeRequest } from "../../schema/Identity/TwoFactor.js"
import { identityCall, identityClient, type RawAnswer } from "../support/Clients.js"
import {
  cookiesOf,
  createClient,
  createUser,
  exchangeCode,
  getCode,
  hiddenValue,
  IdentityServers,
  IdentityTestEnv,
  login,
  refreshRequest,
  serverLayerOptions
} from "../support/IdentityServers.js"
import { codeAt, postLogin, quietStep, userWithFactor } from "../support/TwoFactor.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const Env = IdentityTestEnv({
  // Three wrong codes per (account, address) before 429, so brute force shows within a test.
  IDENTITY_LOGIN_FAILURE_BURST: "3",
  IDENTITY_LOGIN_FAILURE_PER_MINUTE: "1"
})

const wrongCode = (right: string) => String((Number(right) + 1) % 1_000_000).padStart(6, "0")

const sessionCount = (userId: number) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) =>
      sql<{ n: string }>`SELECT count(*)::text AS n FROM sessions WHERE user_id = ${userId}`.pipe(
        Effect.map((rows) => Number(rows[0]!.n)),
        Effect.orDie
      )
  )

describe("second factor (TOTP, RFC 6238) and recovery codes", () => {
  it.layer(Env, serverLayerOptions)((it) => {
    it.effect("RFC 6238 section 4: set-up answers a base32 key, an otpauth URI and a QR code; a first code turns it on with 10 distinct recovery codes", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const session = yield* promise(() => login(identity, user))
        const account = yield* identityClient(identity, session.accessToken)
        const { otpauth_uri, qr_svg, secret } = (yield* account.twoFactor.setup()).data
        expect(secret).toMatch(/^[A-Z2-7]{32}$/)
        const parsed = OTPAuth.URI.parse(otpauth_uri) as OTPAuth.TOTP
        expect(parsed).toBeInstanceOf(OTPAuth.TOTP)
        expect(parsed).toMatchObject({ issuer: "shiori", label: user.email, algorithm: "SHA1", digits: 6, period: 30 })
        expect(parsed.secret.base32).toBe(secret)
        expect(qr_svg).toMatch(/^<svg [^>]*xmlns="http:\/\/www.w3.org\/2000\/svg"/)

        // Not on until confirmed: sign-in still needs only the password.
        expect((yield* postLogin(identity, user)).status).toBe(200)

        const wrong = yield* identityCall(identity, "POST", "/auth/2fa/enable", {
          token: session.accessToken,
          body: { code: wrongCode(new OTPAuth.TOTP({ secret }).generate()), current_password: user.password }
        })
        expect(wrong.status).toBe(401)
        expect(wrong.body).toEqual({ code: 10015, message: "Second factor code wrong", data: null })

        const step = yield* quietStep
        const enable = yield* account.twoFactor.enable({
          payload: new TwoFactorCodeRequest({ code: codeAt(secret, step), current_password: user.password })
        })
        const codes = enable.data.recovery_codes
        expect(codes).toHaveLength(10)
        expect(new Set(codes).size).toBe(10)
        for (const code of codes) expect(code).toMatch(/^[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}-[a-z2-7]{4}$/)

        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql<
          { on: boolean }
        >`SELECT totp_enabled_at IS NOT NULL AS on FROM users WHERE id = ${user.id}`
        expect(rows[0]!.on).toBe(true)

        // Already on: no second set-up, and nothing pending to confirm.
        const again = yield* identityCall(identity, "POST", "/auth/2fa/setup", { token: session.accessToken })
        expect(again.status).toBe(409)
        expect(again.body).toEqual({ code: 40901, message: "Conflict", data: null })
        const enableAgain = yield* identityCall(identity, "POST", "/auth/2fa/enable", {
          token: session.accessToken,
          body: { code: codeAt(secret, step + 1), current_password: user.password }
        })
        expect(enableAgain.status).toBe(409)
      }))

    it.effect("envelope 10014/10015: the right password without a code creates no session; a wrong code is 10015; the right one signs in with amr pwd+otp", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const step = yield* quietStep
        const { secret, user } = yield* userWithFactor(identity, step)
        const before = yield* sessionCount(user.id)

        const bare = yield* postLogin(identity, user)
        expect(bare.status).toBe(401)
        expect(bare.body).toEqual({ code: 10014, message: "Second factor required", data: null })
        expect(bare.headers.get("set-cookie")).toBeNull()
        expect(yield* sessionCount(user.id)).toBe(before)

        // A wrong password is still just a wrong password: the factor is not revealed.
        const guess = yield* identityCall(identity, "POST", "/auth/login", {
          body: { email: user.email, password: "nope" }
        })
        expect(guess.body.code).toBe(10011)

        const wrong = yield* postLogin(identity, user, { otp: wrongCode(codeAt(secret, step)) })
        expect(wrong.status).toBe(401)
        expect(wrong.body).toEqual({ code: 10015, message: "Second factor code wrong", data: null })
        expect(wrong.headers.get("set-cookie")).toBeNull()
        expect(yield* sessionCount(user.id)).toBe(before)

        // `otp` must be six digits: anything else is a malformed body.
        expect((yield* postLogin(identity, user, { otp: "12345" })).body.code).toBe(40001)

        const right = yield* postLogin(identity, user, { otp: codeAt(secret, step) })
        expect(right.status).toBe(200)
        expect(right.headers.get("set-cookie")).toMatch(/^shiori_session=/)
        expect(yield* sessionCount(user.id)).toBe(before + 1)
        const sql = yield* SqlClient.SqlClient
        const sid = Jose.decodeJwt(right.body.data.access_token).sid as string
        const amr = yield* sql<{ amr: Array<string> }>`SELECT amr FROM sessions WHERE sid = ${sid}`
        expect(amr[0]!.amr).toEqual(["pwd", "otp"])
      }))

    it.effect("RFC 6238 section 5.2: a code is accepted once; neither it nor an earlier step's code works after it", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const step = yield* quietStep
        const { secret, user } = yield* userWithFactor(identity, step)
        const first = yield* postLogin(identity, user, { otp: codeAt(secret, step) })
        expect(first.status).toBe(200)
        const replay = yield* postLogin(identity, user, { otp: codeAt(secret, step) })
        expect(replay.status).toBe(401)
        expect(replay.body.code).toBe(10015)
        // The step used to turn the factor on (one back) is older than the last accepted one.
        const older = yield* postLogin(identity, user, { otp: codeAt(secret, step - 1) })
        expect(older.body.code).toBe(10015)
        // The next step's code (a phone clock slightly ahead) is new, so it works, once.
        expect((yield* postLogin(identity, user, { otp: codeAt(secret, step + 1) })).status).toBe(200)
        expect((yield* postLogin(identity, user, { otp: codeAt(secret, step + 1) })).body.code).toBe(10015)
        // Two steps ahead is outside the window.
        expect((yield* postLogin(identity, user, { otp: codeAt(secret, step + 2) })).body.code).toBe(10015)
      }))

    it.effect("RFC 6238 section 5.2 for recovery codes: each signs in once, with any case and dashes", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const step = yield* quietStep
        const { recoveryCodes, user } = yield* userWithFactor(identity, step)
        const code = recoveryCodes[3]!
        const used = yield* postLogin(identity, user, { recovery_code: code.toUpperCase().replace(/-/g, " ") })
        expect(used.status).toBe(200)
        const sid = Jose.decodeJwt(used.body.data.access_token).sid as string
        const sql = yield* SqlClient.SqlClient
        expect((yield* sql<{ amr: Array<string> }>`SELECT amr FROM sessions WHERE sid = ${sid}`)[0]!.amr).toEqual([
          "pwd",
          "otp"
        ])
        const again = yield* postLogin(identity, user, { recovery_code: code })
        expect(again.status).toBe(401)
        expect(again.body.code).toBe(10015)
        // Another user's code, or a made-up one, is wrong too.
        expect((yield* postLogin(identity, user, { recovery_code: "aaaa-bbbb-cccc-dddd" })).body.code).toBe(10015)
        expect((yield* postLogin(identity, user, { recovery_code: recoveryCodes[4]! })).status).toBe(200)
      }))

    it.effect("RFC 4226 section 7.3 (throttling): wrong codes for one account get 429 10012 with Retry-After, even for the right code then", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const step = yield* quietStep
        const { secret, user } = yield* userWithFactor(identity, step)
        const wrong = wrongCode(codeAt(secret, step))
        const statuses: Array<number> = []
        let last: RawAnswer | undefined
        for (let i = 0; i < 5; i++) {
          last = yield* postLogin(identity, user, { otp: wrong })
          statuses.push(last.status)
        }
        expect(statuses).toEqual([401, 401, 401, 429, 429])
        expect(last!.body).toEqual({ code: 10012, message: "Too many attempts", data: null })
        expect(Number(last!.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
        const right = yield* postLogin(identity, user, { otp: codeAt(secret, step) })
        expect(right.status).toBe(429)
      }))

    it.effect("RFC 9470: every change to the factor needs a sign-in younger than 10 minutes (401 10016)", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const sql = yield* SqlClient.SqlClient
        const stale = (token: string) =>
          sql`UPDATE sessions SET auth_time = now() - interval '11 minutes' WHERE sid = ${Jose.decodeJwt(token)
            .sid as string}`
        const fresh = yield* createUser()
        const session = yield* promise(() => login(identity, fresh))
        yield* stale(session.accessToken)
        const setup = yield* identityCall(identity, "POST", "/auth/2fa/setup", { token: session.accessToken })
        expect(setup.status).toBe(401)
        expect(setup.body).toEqual({ code: 10016, message: "Sign in again", data: null })
        expect(setup.headers.get("www-authenticate")).toContain(`error="insufficient_user_authentication"`)

        const step = yield* quietStep
        const on = yield* userWithFactor(identity, step)
        yield* stale(on.session.accessToken)
        for (
          const [method, path] of [["DELETE", "/auth/2fa"], ["POST", "/auth/2fa/recovery-codes"]] as const
        ) {
          const res = yield* identityCall(identity, method, path, {
            token: on.session.accessToken,
            body: { code: on.recoveryCodes[0]!, current_password: on.user.password }
          })
          expect(res.status).toBe(401)
          expect(res.body.code).toBe(10016)
        }
        // Nothing was spent or changed.
        const left = yield* sql<{ n: string }>`
          SELECT count(*)::text AS n FROM two_factor_recovery_codes WHERE user_id = ${on.user.id} AND used_at IS NULL
        `
        expect(Number(left[0]!.n)).toBe(10)
        // Without a token at all: 10001.
        expect((yield* identityCall(identity, "POST", "/auth/2fa/setup")).body.code).toBe(10001)
      }))

    it.effect("new recovery codes replace the old ones; removing the factor (with a recovery code) brings back password-only sign-in", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const sql = yield* SqlClient.SqlClient
        const step = yield* quietStep
        const { recoveryCodes, secret, session, user } = yield* userWithFactor(identity, step)
        const account = yield* identityClient(identity, session.accessToken)
        const renewed = yield* account.twoFactor.recoveryCodes({
          payload: new TwoFactorCodeRequest({ code: codeAt(secret, step), current_password: user.password })
        })
        const fresh = renewed.data.recovery_codes
        expect(fresh).toHaveLength(10)
        expect(fresh.filter((code) => recoveryCodes.includes(code))).toEqual([])
        expect((yield* postLogin(identity, user, { recovery_code: recoveryCodes[0]! })).body.code).toBe(10015)

        const wrong = yield* identityCall(identity, "DELETE", "/auth/2fa", {
          token: session.accessToken,
          body: { code: wrongCode(codeAt(secret, step + 1)), current_password: user.password }
        })
        expect(wrong.status).toBe(401)
        expect(wrong.body.code).toBe(10015)
        const removed = yield* account.twoFactor.disable({
          payload: new TwoFactorCodeRequest({ code: fresh[0]!, current_password: user.password })
        })
        expect(removed).toEqual({ code: 0, message: "ok", data: null })
        const rows = yield* sql<{ on: boolean; codes: string; totp: string }>`
          SELECT totp_enabled_at IS NOT NULL AS on,
                 (SELECT count(*)::text FROM two_factor_recovery_codes WHERE user_id = ${user.id}) AS codes,
                 (SELECT count(*)::text FROM two_factor_totp WHERE user_id = ${user.id}) AS totp
          FROM users WHERE id = ${user.id}
        `
        expect(rows[0]).toEqual({ on: false, codes: "0", totp: "0" })
        expect((yield* postLogin(identity, user)).status).toBe(200)
        const gone = yield* identityCall(identity, "DELETE", "/auth/2fa", {
          token: session.accessToken,
          body: { code: fresh[1]!, current_password: user.password }
        })
        expect(gone.status).toBe(409)
        expect(gone.body.code).toBe(40901)
      }))

    it.effect("OpenID Connect Core 1.0 section 2 (amr, RFC 8176): the id_token says pwd+otp after a second factor and pwd without, through the code and refresh", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const client = yield* createClient()
        const idTokenAmr = (bearer: string) =>
          promise(async () => {
            const { code } = await getCode(identity, client, bearer, { scope: "openid profile" })
            const tokens = await exchangeCode(identity, client, code)
            if (tokens.status !== 200) throw new Error(JSON.stringify(tokens.body))
            const refreshed = await refreshRequest(identity, client, tokens.body.refresh_token)
            if (refreshed.status !== 200) throw new Error(JSON.stringify(refreshed.body))
            return [Jose.decodeJwt(tokens.body.id_token).amr, Jose.decodeJwt(refreshed.body.id_token).amr]
          })

        const plain = yield* createUser()
        const plainSession = yield* promise(() => login(identity, plain))
        expect(yield* idTokenAmr(plainSession.accessToken)).toEqual([["pwd"], ["pwd"]])

        const step = yield* quietStep
        const { secret, user } = yield* userWithFactor(identity, step)
        const signedIn = yield* postLogin(identity, user, { otp: codeAt(secret, step) })
        expect(signedIn.status).toBe(200)
        expect(yield* idTokenAmr(signedIn.body.data.access_token)).toEqual([["pwd", "otp"], ["pwd", "otp"]])
      }))

    it.effect("the TOTP key is stored encrypted (AES-256-GCM bound to the user) and recovery codes only hashed", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const sql = yield* SqlClient.SqlClient
        const step = yield* quietStep
        const { recoveryCodes, secret, user } = yield* userWithFactor(identity, step)
        const rows = yield* sql<{ secret: any; pending_secret: unknown; text: string }>`
          SELECT secret, pending_secret, row_to_json(t)::text AS text FROM two_factor_totp t WHERE user_id = ${user.id}
        `
        expect(rows[0]!.pending_secret).toBeNull()
        expect(rows[0]!.secret).toMatchObject({ v: 1, alg: "A256GCM" })
        expect(Object.keys(rows[0]!.secret).sort()).toEqual(["alg", "ct", "iv", "tag", "v"])
        const text = rows[0]!.text
        expect(text).not.toContain(secret)
        expect(text.toLowerCase()).not.toContain(secret.toLowerCase())
        expect(text).not.toContain(Buffer.from(OTPAuth.Secret.fromBase32(secret).bytes).toString("base64url"))
        expect(text).not.toContain(Buffer.from(OTPAuth.Secret.fromBase32(secret).bytes).toString("hex"))
        const codes = yield* sql<{ text: string }>`
          SELECT string_agg(code_hash, ',') AS text FROM two_factor_recovery_codes WHERE user_id = ${user.id}
        `
        for (const code of recoveryCodes) {
          expect(codes[0]!.text).not.toContain(code)
          expect(codes[0]!.text).not.toContain(code.replace(/-/g, ""))
        }

        // The ciphertext is bound to its user: copied to another user's row it does not open.
        const other = yield* userWithFactor(identity, step)
        yield* sql`UPDATE two_factor_totp SET secret = ${JSON.stringify(rows[0]!.secret)}::jsonb, last_step = NULL
                   WHERE user_id = ${other.user.id}`
        const moved = yield* postLogin(identity, other.user, { otp: codeAt(secret, step) })
        expect(moved.body.code).toBe(10015)
      }))

    it.effect("sign-in page: the right password shows the code step with no session; a forged pending sign-in is refused; the code signs in", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const step = yield* quietStep
        const { secret, user } = yield* userWithFactor(identity, step)
        const first = yield* promise(() => fetch(`${identity}/api/v1/ui/login?return_to=%2Fapi%2Fv1%2Fui%2Flogin`))
        const firstHtml = yield* promise(() => first.text())
        const cookies = cookiesOf(first).join("; ")
        const post = (fields: Record<string, string>) =>
          promise(() =>
            fetch(`${identity}/api/v1/ui/login`, {
              method: "POST",
              redirect: "manual",
              headers: { cookie: cookies, "content-type": "application/x-www-form-urlencoded" },
              body: new URLSearchParams(fields).toString()
            })
          )
        const password = yield* post({
          csrf: hiddenValue(firstHtml, "csrf"),
          email: user.email,
          password: user.password,
          return_to: "/api/v1/ui/login"
        })
        expect(password.status).toBe(200)
        expect(password.headers.getSetCookie().some((c) => c.startsWith("shiori_session="))).toBe(false)
        const stepHtml = yield* promise(() => password.text())
        expect(stepHtml).toContain("<label for=\"otp\">")
        const fields = {
          csrf: hiddenValue(stepHtml, "csrf"),
          pending: hiddenValue(stepHtml, "pending"),
          email: user.email,
          return_to: hiddenValue(stepHtml, "return_to")
        }
        // The pending sign-in names its user under a MAC: another user id does not pass.
        const [uid, exp, nonce, mac] = fields.pending.split(".")
        const forged = yield* post({
          ...fields,
          pending: `${Number(uid) + 1}.${exp}.${nonce}.${mac}`,
          otp: codeAt(secret, step)
        })
        expect(forged.status).toBe(401)
        expect(forged.headers.getSetCookie().some((c) => c.startsWith("shiori_session="))).toBe(false)
        const wrong = yield* post({ ...fields, otp: wrongCode(codeAt(secret, step)) })
        expect(wrong.status).toBe(401)
        expect(yield* promise(() => wrong.text())).toMatch(/role="alert" id="otp-error"/)
        const right = yield* post({ ...fields, otp: codeAt(secret, step) })
        expect(right.status).toBe(303)
        expect(right.headers.get("location")).toBe(`${identity}/api/v1/ui/login`)
        expect(right.headers.getSetCookie().some((c) => c.startsWith("shiori_session="))).toBe(true)
      }))
  })
})
