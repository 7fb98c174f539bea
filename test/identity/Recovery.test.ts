/**
 * Account recovery through real HTTP (src/identity/account/Recovery.ts): `password/forgot/send-code`
 * answers the same pending value shape for any address and mails a code only to an account's
 * address; `password/reset` with that pending value and code sets the password, ends every session
 * and refresh family of the account and tells its owner. Codes take 5 tries per pending value, and
 * an unknown or expired pending value answers like a wrong code.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import { codesMailedTo, mailTo } from "../support/Clients.js"
import {
  createClient,
  createUser,
  IdentityServers,
  IdentityTestEnv,
  login,
  refreshRequest,
  serverLayerOptions,
  tokensFor
} from "../support/IdentityServers.js"
import { envelopeCallFrom } from "../support/LocalAddress.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const Env = IdentityTestEnv({ IDENTITY_CODE_IP_BURST: "100" })

const OWNER = "127.0.0.1"

const callFrom = (from: string, identity: string, method: string, path: string, body?: unknown) =>
  promise(() => envelopeCallFrom(from, identity, method, path, { body }))

const forgot = (identity: string, email: string, from = OWNER) =>
  callFrom(from, identity, "POST", "/auth/password/forgot/send-code", { email })

const reset = (identity: string, body: Record<string, unknown>, from = OWNER) =>
  callFrom(from, identity, "POST", "/auth/password/reset", body)

/** Every header of an answer as `[name, value]`, in order. */
const headerList = (headers: Headers) => {
  const list: Array<[string, string]> = []
  headers.forEach((value, name) => list.push([name, value]))
  return list
}

const wrongOf = (code: string) => String((Number(code) + 1) % 1_000_000).padStart(6, "0")

let counter = 0
const freshEmail = () => `lost_${Date.now().toString(36)}_${counter++}@example.com`

const newPassword = "a fresh start with a long phrase"

describe("account recovery", () => {
  it.layer(Env, serverLayerOptions)((it) => {
    it.effect("a code to the account's address resets the password and ends every session and refresh family", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const client = yield* createClient()
        const first = yield* promise(() => login(identity, user))
        const second = yield* promise(() => login(identity, user))
        const rpTokens = yield* promise(() => tokensFor(identity, client, second, "openid offline_access"))

        const sent = yield* forgot(identity, user.email.toUpperCase())
        expect(sent.status).toBe(200)
        expect(sent.body).toEqual({
          code: 0,
          message: "ok",
          data: { pending: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), expires_in: 600 }
        })
        const pending = sent.body.data.pending as string
        const [code] = yield* codesMailedTo(identity, user.email)
        expect(code).toBeDefined()
        const done = yield* reset(identity, { pending, code, password: newPassword })
        expect(done.status).toBe(200)
        expect(done.body).toEqual({ code: 0, message: "ok", data: null })

        // Every session is over: tokens and cookies alike, and the relying party's refresh token.
        for (const session of [first, second]) {
          const me = yield* promise(() =>
            fetch(`${identity}/api/v1/auth/me`, { headers: { authorization: `Bearer ${session.accessToken}` } })
              .then((res) => res.json() as Promise<any>)
          )
          expect(me.code).toBe(10002)
          const page = yield* promise(() =>
            fetch(`${identity}/api/v1/ui/account`, { headers: { cookie: session.cookie }, redirect: "manual" })
          )
          expect(page.status).toBe(302)
          expect(page.headers.get("location")).toMatch(/\/ui\/login\?/)
        }
        const refreshed = yield* promise(() => refreshRequest(identity, client, rpTokens.refresh_token))
        expect(refreshed.status).toBe(400)
        expect(refreshed.body.error).toBe("invalid_grant")

        // The old password fails, the new one works; the owner was told; the code is used.
        const old = yield* callFrom(OWNER, identity, "POST", "/auth/login", {
          email: user.email,
          password: user.password
        })
        expect(old.body.code).toBe(10011)
        yield* promise(() => login(identity, { email: user.email, password: newPassword }))
        const told = (yield* mailTo(identity, user.email)).at(-1)!
        expect(told.subject).toMatch(/password was reset/)
        expect(told.text).not.toMatch(/\b[0-9]{6}\b/)
        const again = yield* reset(identity, { pending, code, password: "yet another long phrase" })
        expect(again.status).toBe(400)
        expect(again.body.code).toBe(10004)
      }))

    it.effect("forgot/send-code answers a known address byte for byte like an unknown one, with the same work", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const sql = yield* SqlClient.SqlClient
        const known = yield* createUser()
        const unknown = freshEmail()
        const a = yield* forgot(identity, known.email)
        const b = yield* forgot(identity, unknown)
        expect(a.status).toBe(200)
        expect(b.status).toBe(200)
        const pendingA = a.body.data.pending as string
        const pendingB = b.body.data.pending as string
        expect(a.text.replace(pendingA, "PENDING")).toBe(b.text.replace(pendingB, "PENDING"))
        const headers = (reply: typeof a) =>
          headerList(reply.headers).filter(([name]) => name !== "date" && name !== "x-request-id")
        expect(headers(a)).toEqual(headers(b))
        // One code row and one queued mail each; the unknown address is told it has no account, with no code.
        const rowsFor = (email: string) =>
          sql`SELECT (SELECT count(*)::int FROM email_codes WHERE email = lower(${email})) AS codes,
                     (SELECT count(*)::int FROM mail_outbox WHERE lower(to_address) = lower(${email})) AS mails`
        expect((yield* rowsFor(known.email))[0]).toEqual({ codes: 1, mails: 1 })
        expect((yield* rowsFor(unknown))[0]).toEqual({ codes: 1, mails: 1 })
        const note = (yield* mailTo(identity, unknown)).at(-1)!
        expect(note.text).toMatch(/no account/)
        expect(note.text).not.toMatch(/\b[0-9]{6}\b/)
        // Its pending value resets nothing, whatever the code.
        for (const code of ["000000", "123456"]) {
          expect((yield* reset(identity, { pending: pendingB, code, password: newPassword })).body.code).toBe(10004)
        }
      }))

    it.effect("a code takes 5 tries per pending value; a stranger's guesses do not spend the owner's", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const owner = yield* forgot(identity, user.email)
        const stranger = yield* forgot(identity, user.email, "127.0.0.2")
        expect(stranger.status).toBe(200)
        const [ownerCode, strangerCode] = yield* codesMailedTo(identity, user.email)
        const answers: Array<number> = []
        for (let i = 0; i < 6; i++) {
          const guess = yield* reset(identity, {
            pending: stranger.body.data.pending,
            code: wrongOf(strangerCode!),
            password: newPassword
          }, "127.0.0.2")
          answers.push(guess.body.code)
        }
        expect(answers).toEqual([10004, 10004, 10004, 10004, 10012, 10012])
        // The stranger cannot use the owner's code either, and the owner's request was not limited.
        const crossed = yield* reset(identity, {
          pending: stranger.body.data.pending,
          code: ownerCode,
          password: newPassword
        }, "127.0.0.2")
        expect(crossed.status).toBe(429)
        expect(crossed.body.code).toBe(10012)
        const done = yield* reset(identity, {
          pending: owner.body.data.pending,
          code: ownerCode,
          password: newPassword
        })
        expect(done.status).toBe(200)
      }))

    it.effect("an unknown, expired or missing pending value is refused like a wrong code (or 40001 when absent)", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const sql = yield* SqlClient.SqlClient
        const user = yield* createUser()
        const sent = yield* forgot(identity, user.email)
        const pending = sent.body.data.pending as string
        const [code] = yield* codesMailedTo(identity, user.email)
        for (const other of ["C".repeat(43), "short"]) {
          const refused = yield* reset(identity, { pending: other, code, password: newPassword })
          expect({ other, status: refused.status, body: refused.body }).toEqual({
            other,
            status: 400,
            body: { code: 10004, message: "Verification code invalid", data: null }
          })
        }
        const missing = yield* reset(identity, { code, password: newPassword })
        expect(missing.status).toBe(400)
        expect(missing.body.code).toBe(40001)
        yield* sql`UPDATE email_codes SET expires_at = now() - interval '1 second' WHERE email = ${user.email}`
        const expired = yield* reset(identity, { pending, code, password: newPassword })
        expect(expired.status).toBe(400)
        expect(expired.body.code).toBe(10004)
        yield* promise(() => login(identity, user))
      }))

    it.effect("the new password follows the policy (10010): a plainly weak one spends no try", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const sent = yield* forgot(identity, user.email)
        const pending = sent.body.data.pending as string
        const [code] = yield* codesMailedTo(identity, user.email)
        for (let i = 0; i < 6; i++) {
          const weak = yield* reset(identity, { pending, code, password: "password123" })
          expect(weak.status).toBe(400)
          expect(weak.body.code).toBe(10010)
        }
        const own = yield* reset(identity, { pending, code, password: `${user.email.split("@")[0]}-again` })
        expect(own.body.code).toBe(10010)
        expect((yield* reset(identity, { pending, code, password: newPassword })).status).toBe(200)
      }))

    it.effect("forgot/send-code has registration's limits, per requester: a stranger's requests do not block the owner", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        expect((yield* forgot(identity, user.email, "127.0.0.4")).status).toBe(200)
        const again = yield* forgot(identity, user.email, "127.0.0.4")
        expect(again.status).toBe(429)
        expect(again.body).toEqual({ code: 10013, message: "Code requested too soon", data: null })
        expect(Number(again.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
        expect((yield* forgot(identity, user.email)).status).toBe(200)
      }))
  })
})
