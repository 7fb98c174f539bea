/**
 * Self-service accounts through real HTTP (README, "Self-service accounts"; docs/decisions.md,
 * "Identity: accounts and self-service"): the
 * account, display fields, email change, password change, sessions, and registration that signs
 * the new user in, with their envelope codes; emailed codes read from the development mailbox.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber } from "effect"
import { SqlClient } from "effect/sql"
import * as Jose from "jose"
import sharp from "sharp"
import {
  ChangeEmailRequest,
  ChangePasswordRequest,
  RegisterRequest,
  SendCodeRequest,
  UpdateMeRequest
} from "../../schema/Identity/Me.js"
import { identityCall, identityClient, lastCode, mailTo } from "../support/Clients.js"
import { eventually } from "../support/Eventually.js"
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

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const Env = IdentityTestEnv()

/** `POST /auth/register/send-code` through the typed client: the pending value, decoded. */
const sendRegistrationCode = (identity: string, email: string) =>
  Effect.flatMap(
    identityClient(identity),
    (client) => client.account.sendRegistrationCode({ payload: new SendCodeRequest({ email }) })
  )

let counter = 0
const freshEmail = () => `new_${Date.now().toString(36)}_${counter++}@example.com`

/** Makes the session behind `token` look signed in 11 minutes ago. */
const ageSignIn = (token: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const sid = Jose.decodeJwt(token).sid as string
    yield* sql`UPDATE sessions SET auth_time = now() - interval '11 minutes' WHERE sid = ${sid}`
  })

describe("Self-service account endpoints", () => {
  it.layer(Env, serverLayerOptions)((it) => {
    it.effect("GET /auth/me is the owner's account; PATCH changes the display fields only (docs/decisions.md, \"Identity: accounts and self-service\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser({ name: "Rin" })
        const { accessToken } = yield* promise(() => login(identity, user))
        const account = yield* identityClient(identity, accessToken)
        const me = yield* account.account.me()
        expect(me).toEqual({
          code: 0,
          message: "ok",
          data: {
            id: user.id,
            sub: user.sub,
            email: user.email,
            email_verified: true,
            name: "Rin",
            picture: "",
            bio: "",
            roles: [],
            created_at: expect.any(Number),
            updated_at: expect.any(Number),
            two_factor: false
          }
        })
        const patched = yield* account.account.updateMe({
          payload: new UpdateMeRequest({ name: "  Rin Tohsaka ", bio: "Reads mysteries." })
        })
        expect(patched.data).toMatchObject({ name: "Rin Tohsaka", bio: "Reads mysteries.", email: user.email })
        // Absent fields stay; an empty name or an unknown field type is 400 40001.
        const bioOnly = yield* account.account.updateMe({ payload: new UpdateMeRequest({ bio: "" }) })
        expect(bioOnly.data).toMatchObject({ name: "Rin Tohsaka", bio: "" })
        for (const body of [{ name: "   " }, { name: "x".repeat(65) }, { bio: 3 }, { name: null }]) {
          const bad = yield* identityCall(identity, "PATCH", "/auth/me", { token: accessToken, body })
          expect({ body, status: bad.status, code: bad.body.code }).toEqual({ body, status: 400, code: 40001 })
        }
      }))

    it.effect("self-service endpoints answer 401 10001/10002 without a valid Bearer token (docs/api-contract.md, \"Errors: identity (OAuth errors and the envelope)\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        for (const [method, path] of [["GET", "/auth/me"], ["GET", "/auth/sessions"], ["PATCH", "/auth/me"]] as const) {
          const body = method === "PATCH" ? { bio: "x" } : undefined
          const missing = yield* identityCall(identity, method, path, { body })
          expect(missing.status).toBe(401)
          expect(missing.body).toEqual({ code: 10001, message: "Token missing", data: null })
          expect(missing.headers.get("www-authenticate")).toMatch(/^Bearer realm="shiori"/)
          const invalid = yield* identityCall(identity, method, path, { body, token: "not-a-jwt" })
          expect(invalid.status).toBe(401)
          expect(invalid.body.code).toBe(10002)
        }
      }))

    it.effect("PUT /auth/email moves the account with the code mailed to the new address; the old one is told (README, \"Self-service accounts\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const { accessToken } = yield* promise(() => login(identity, user))
        const target = freshEmail()
        const account = yield* identityClient(identity, accessToken)
        const sent = yield* account.account.sendEmailCode({ payload: new SendCodeRequest({ email: target }) })
        expect(sent).toMatchObject({ code: 0, data: { expires_in: 600 } })
        const code = yield* lastCode(identity, target)
        const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, "0")
        const current_password = user.password
        const refused = yield* identityCall(identity, "PUT", "/auth/email", {
          token: accessToken,
          body: { email: target, code: wrong, current_password }
        })
        expect(refused.status).toBe(400)
        expect(refused.body).toEqual({ code: 10004, message: "Verification code invalid", data: null })
        const moved = yield* account.account.changeEmail({
          payload: new ChangeEmailRequest({ email: target, code, current_password })
        })
        expect(moved.data).toMatchObject({ email: target, email_verified: true })
        // A code is used once.
        const again = yield* identityCall(identity, "PUT", "/auth/email", {
          token: accessToken,
          body: { email: target, code, current_password }
        })
        expect(again.body.code).toBe(10004)
        const told = yield* mailTo(identity, user.email)
        expect(told.at(-1)!.subject).toMatch(/email address was changed/)
        // The new address signs in; the old one no longer does.
        yield* promise(() => login(identity, { email: target, password: user.password }))
        const old = yield* identityCall(identity, "POST", "/auth/login", {
          body: { email: user.email, password: user.password }
        })
        expect(old.body.code).toBe(10011)
      }))

    it.effect("PUT /auth/email to an address another account uses is 409 10006 (README, \"Envelope codes\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const other = yield* createUser()
        const { accessToken } = yield* promise(() => login(identity, user))
        yield* identityCall(identity, "POST", "/auth/email/send-code", {
          token: accessToken,
          body: { email: other.email }
        })
        const code = yield* lastCode(identity, other.email)
        const taken = yield* identityCall(identity, "PUT", "/auth/email", {
          token: accessToken,
          body: { email: other.email, code, current_password: user.password }
        })
        expect(taken.status).toBe(409)
        expect(taken.body).toEqual({ code: 10006, message: "Email already registered", data: null })
      }))

    it.effect("an address taken by a transaction committing during PUT /auth/email is 409 10006, never a 500 (README, \"Envelope codes\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const sql = yield* SqlClient.SqlClient
        const user = yield* createUser()
        const other = yield* createUser()
        const target = freshEmail()
        const { accessToken } = yield* promise(() => login(identity, user))
        yield* identityCall(identity, "POST", "/auth/email/send-code", { token: accessToken, body: { email: target } })
        const code = yield* lastCode(identity, target)
        // Another writer moves `other` to the address and commits only after the request has passed
        // its "is the address free?" check: the request's write then meets the unique index.
        const answer = yield* Effect.gen(function*() {
          yield* sql`UPDATE users SET email = ${target} WHERE id = ${other.id}`
          const request = yield* Effect.forkChild(
            identityCall(identity, "PUT", "/auth/email", {
              token: accessToken,
              body: { email: target, code, current_password: user.password }
            })
          )
          yield* eventually(
            sql`SELECT 1 FROM pg_locks WHERE NOT granted AND locktype = 'transactionid'`.pipe(
              Effect.flatMap((rows) => rows.length > 0 ? Effect.void : Effect.fail("not waiting yet"))
            )
          )
          return request
        }).pipe(sql.withTransaction, Effect.flatMap(Fiber.join))
        expect(answer.status).toBe(409)
        expect(answer.body.code).toBe(10006)
        const owners = yield* sql`SELECT id FROM users WHERE lower(email) = ${target}`
        expect(owners.map((row) => Number(row.id))).toEqual([other.id])
      }))

    it.effect("an emailed code takes 5 tries, then 429 10012 even for the right code", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const sql = yield* SqlClient.SqlClient
        const user = yield* createUser()
        const { accessToken } = yield* promise(() => login(identity, user))
        const target = freshEmail()
        yield* identityCall(identity, "POST", "/auth/email/send-code", { token: accessToken, body: { email: target } })
        const code = yield* lastCode(identity, target)
        const wrong = String((Number(code) + 1) % 1_000_000).padStart(6, "0")
        const current_password = user.password
        const codes: Array<number> = []
        for (let i = 0; i < 5; i++) {
          codes.push(
            (yield* identityCall(identity, "PUT", "/auth/email", {
              token: accessToken,
              body: { email: target, code: wrong, current_password }
            }))
              .body.code
          )
        }
        expect(codes).toEqual([10004, 10004, 10004, 10004, 10012])
        // Each change also spends one of the account's five password checks: give them back, so the
        // last answer is the code's own. The row's key names the bucket's shape after `@`
        // (src/platform/RateLimiter.ts, "Shapes across processes").
        yield* sql`DELETE FROM rate_limit_buckets WHERE key LIKE ${`password-change:${user.id}@%`}`
        const right = yield* identityCall(identity, "PUT", "/auth/email", {
          token: accessToken,
          body: { email: target, code, current_password }
        })
        expect(right.status).toBe(429)
        expect(right.body.code).toBe(10012)
      }))

    it.effect("RFC 9470: email and password changes need a sign-in younger than 10 minutes (401 10016)", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const { accessToken } = yield* promise(() => login(identity, user))
        yield* ageSignIn(accessToken)
        const email = yield* identityCall(identity, "POST", "/auth/email/send-code", {
          token: accessToken,
          body: { email: freshEmail() }
        })
        expect(email.status).toBe(401)
        expect(email.body).toEqual({ code: 10016, message: "Sign in again", data: null })
        expect(email.headers.get("www-authenticate")).toMatch(/error="insufficient_user_authentication".*max_age=600/)
        const password = yield* identityCall(identity, "PUT", "/auth/password", {
          token: accessToken,
          body: { current_password: user.password, new_password: "a brand new passphrase" }
        })
        expect(password.body.code).toBe(10016)
        // Reading and display fields do not need it.
        expect((yield* (yield* identityClient(identity, accessToken)).account.me()).code).toBe(0)
      }))

    it.effect("PUT /auth/password checks the current password (10011) and the new one (10010) (README, \"Self-service accounts\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser({ name: "Sakura Kinomoto" })
        const { accessToken } = yield* promise(() => login(identity, user))
        const change = (current_password: string, new_password: string) =>
          identityCall(identity, "PUT", "/auth/password", {
            token: accessToken,
            body: { current_password, new_password }
          })
        const wrong = yield* change("not my password", "a brand new passphrase")
        expect(wrong.status).toBe(401)
        expect(wrong.body).toEqual({ code: 10011, message: "Wrong password", data: null })
        for (const weak of ["short", "password123", "sakura kinomoto!", `${user.email.split("@")[0]}99`]) {
          const refused = yield* change(user.password, weak)
          expect({ weak, status: refused.status, code: refused.body.code }).toEqual({ weak, status: 400, code: 10010 })
        }
      }))

    it.effect("a password change ends every other session and refresh family (invalid_grant); this one stays (README, \"Self-service accounts\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const client = yield* createClient()
        const here = yield* promise(() => login(identity, user))
        const elsewhere = yield* promise(() => login(identity, user))
        const rpTokens = yield* promise(() => tokensFor(identity, client, elsewhere, "openid offline_access"))
        const ownTokens = yield* promise(() => tokensFor(identity, client, here, "openid offline_access"))
        const account = yield* identityClient(identity, here.accessToken)
        const changed = yield* account.account.changePassword({
          payload: new ChangePasswordRequest({
            current_password: user.password,
            new_password: "correct horse battery staple"
          })
        })
        expect(changed).toEqual({ code: 0, message: "ok", data: null })
        // The other browser's session and its token are dead; this one lives.
        expect((yield* identityCall(identity, "GET", "/auth/me", { token: elsewhere.accessToken })).body.code).toBe(
          10002
        )
        expect((yield* account.account.me()).code).toBe(0)
        // Every refresh family is revoked, including the ones issued through this session.
        for (const refreshToken of [rpTokens.refresh_token, ownTokens.refresh_token]) {
          const refreshed = yield* promise(() => refreshRequest(identity, client, refreshToken))
          expect(refreshed.status).toBe(400)
          expect(refreshed.body.error).toBe("invalid_grant")
        }
        // The new password signs in, the old one does not; the owner was told.
        yield* promise(() => login(identity, { email: user.email, password: "correct horse battery staple" }))
        const old = yield* identityCall(identity, "POST", "/auth/login", {
          body: { email: user.email, password: user.password }
        })
        expect(old.body.code).toBe(10011)
        expect((yield* mailTo(identity, user.email)).at(-1)!.subject).toMatch(/password was changed/)
      }))

    it.effect("GET /auth/sessions lists live sessions; DELETE /auth/sessions/{id} ends one of the account's own (README, \"Identity provider\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const user = yield* createUser()
        const stranger = yield* createUser()
        const first = yield* promise(() => login(identity, user))
        const second = yield* promise(() => login(identity, user))
        const theirs = yield* promise(() => login(identity, stranger))
        const account = yield* identityClient(identity, first.accessToken)
        const items = (yield* account.account.sessions()).data.items
        expect(items).toHaveLength(2)
        const current = items.find((item) => item.current)
        expect(current?.id).toBe(Jose.decodeJwt(first.accessToken).sid)
        expect(items[0]).toEqual({
          id: expect.any(String),
          current: expect.any(Boolean),
          created_at: expect.any(Number),
          auth_time: expect.any(Number),
          expires_at: expect.any(Number),
          user_agent: expect.any(String),
          ip: "127.0.0.1"
        })
        // Another account's session is not found, whatever its id.
        const foreign = Jose.decodeJwt(theirs.accessToken).sid as string
        const notMine = yield* identityCall(identity, "DELETE", `/auth/sessions/${foreign}`, {
          token: first.accessToken
        })
        expect(notMine.status).toBe(404)
        expect(notMine.body.code).toBe(40401)
        expect((yield* (yield* identityClient(identity, theirs.accessToken)).account.me()).code).toBe(0)
        const other = Jose.decodeJwt(second.accessToken).sid as string
        const ended = yield* account.account.endSession({ params: { id: other } })
        expect(ended).toEqual({ code: 0, message: "ok", data: null })
        expect((yield* identityCall(identity, "GET", "/auth/me", { token: second.accessToken })).body.code).toBe(10002)
        expect((yield* account.account.sessions()).data.items).toHaveLength(1)
      }))

    it.effect("POST /auth/me/avatar re-encodes the upload to a 256x256 WebP without metadata; picture points at it (README, \"Self-service accounts\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const user = yield* createUser()
        const { accessToken } = yield* promise(() => login(identity, user))
        // A 600x400 JPEG carrying EXIF (camera metadata a person may not mean to publish).
        const photo = yield* promise(() =>
          sharp({ create: { width: 600, height: 400, channels: 3, background: "#336699" } })
            .jpeg()
            .withExif({ IFD0: { Make: "SecretCam", Artist: "Someone" } })
            .toBuffer()
        )
        expect((yield* promise(() => sharp(photo).metadata())).exif).toBeDefined()
        const upload = (body: FormData | string, token = accessToken, headers: Record<string, string> = {}) =>
          promise(async () => {
            const res = await fetch(`${identity}/api/v1/auth/me/avatar`, {
              method: "POST",
              headers: { authorization: `Bearer ${token}`, ...headers },
              body
            })
            return { status: res.status, body: await res.json() as any }
          })
        const form = (bytes: Uint8Array, name = "file") => {
          const data = new FormData()
          data.append(name, new Blob([Buffer.from(bytes)], { type: "image/jpeg" }), "me.jpg")
          return data
        }
        const uploaded = yield* upload(form(photo))
        expect(uploaded.status).toBe(200)
        const picture = uploaded.body.data.picture as string
        expect(picture).toMatch(new RegExp(`^${issuer}/avatars/[0-9a-f]{64}\\.webp$`))
        const served = yield* promise(async () => {
          const res = await fetch(picture)
          return { res, bytes: Buffer.from(await res.arrayBuffer()) }
        })
        expect(served.res.status).toBe(200)
        expect(served.res.headers.get("content-type")).toBe("image/webp")
        expect(served.res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable")
        const stored = yield* promise(() => sharp(served.bytes).metadata())
        expect(stored).toMatchObject({ format: "webp", width: 256, height: 256 })
        expect(stored.exif).toBeUndefined()
        expect(served.bytes.includes(Buffer.from("SecretCam"))).toBe(false)
        expect((yield* (yield* identityClient(identity, accessToken)).account.me()).data.picture).toBe(picture)

        // Not an image, an image too large to decode, no file part, not multipart, no token.
        const notImage = yield* upload(form(Buffer.from("%PDF-1.7 definitely not a picture")))
        expect(notImage.status).toBe(422)
        expect(notImage.body).toEqual({ code: 42201, message: "Not an image", data: null })
        // A decompression bomb: a tiny GIF whose header claims 65535x1000 pixels (65 megapixels).
        const bomb = Buffer.from(
          yield* promise(() =>
            sharp({ create: { width: 1, height: 1, channels: 3, background: "#000" } }).gif().toBuffer()
          )
        )
        bomb.writeUInt16LE(65535, 6)
        bomb.writeUInt16LE(1000, 8)
        const descriptor = bomb.indexOf(0x2c, 13)
        bomb.writeUInt16LE(65535, descriptor + 5)
        bomb.writeUInt16LE(1000, descriptor + 7)
        expect((yield* upload(form(bomb))).body.code).toBe(42201)
        expect((yield* upload(form(photo, "picture"))).body.code).toBe(40001)
        expect((yield* upload("{}", accessToken, { "content-type": "application/json" })).body.code).toBe(40001)
        expect((yield* upload(form(photo), "not-a-token")).status).toBe(401)
        const garbled = yield* upload("--x\r\ngarbage", accessToken, {
          "content-type": "multipart/form-data; boundary=x"
        })
        expect(garbled.status).toBe(400)
        // Larger than the upload limit: refused before the body is read.
        const huge = yield* upload(form(Buffer.alloc(6 * 1024 * 1024, 1)))
        expect(huge.status).toBe(413)
        expect(huge.body.code).toBe(41301)
        // An unknown avatar is a 404 envelope.
        const unknown = yield* promise(() => fetch(`${issuer}/avatars/${"0".repeat(64)}.webp`))
        expect(unknown.status).toBe(404)
      }))

    it.effect("POST /auth/register signs the new user in: access token in data, session cookie set (README, \"Self-service accounts\")", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const email = freshEmail()
        const anonymous = yield* identityClient(identity)
        const sent = yield* anonymous.account.sendRegistrationCode({ payload: new SendCodeRequest({ email }) })
        expect(sent).toEqual({
          code: 0,
          message: "ok",
          data: { pending: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), expires_in: 600 }
        })
        const pending = sent.data.pending
        const code = yield* lastCode(identity, email)
        const mail = (yield* mailTo(identity, email)).at(-1)!
        expect(mail.html).toContain(code)
        const res = yield* promise(() =>
          fetch(`${identity}/api/v1/auth/register`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ email, pending, code, password: "a long enough passphrase", name: "Nadeko" })
          })
        )
        const body = yield* promise(() => res.json() as Promise<any>)
        expect(res.status).toBe(200)
        expect(body).toEqual({
          code: 0,
          message: "ok",
          data: { access_token: expect.any(String), token_type: "Bearer", expires_in: 900 }
        })
        const cookie = res.headers.get("set-cookie") ?? ""
        expect(cookie).toMatch(/^shiori_session=[A-Za-z0-9_-]{43};/)
        expect(cookie).toMatch(/HttpOnly/i)
        expect(cookie).toMatch(/SameSite=Lax/i)
        expect(cookie).toMatch(/Path=\/api\/v1/)
        expect(Jose.decodeJwt(body.data.access_token)).toMatchObject({ iss: issuer })
        const me = yield* (yield* identityClient(identity, body.data.access_token)).account.me()
        expect(me.data).toMatchObject({ email, name: "Nadeko", email_verified: true, roles: [] })
        // The code is spent and the address is taken.
        const again = yield* identityCall(identity, "POST", "/auth/register", {
          body: { email, pending, code, password: "a long enough passphrase", name: "Nadeko" }
        })
        expect(again.body.code).toBe(10004)
      }))

    it.effect("registration refuses a weak password (10010) before spending the code, and a non-JSON body (README, \"Self-service accounts\")", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const email = freshEmail()
        const { pending } = (yield* sendRegistrationCode(identity, email)).data
        const code = yield* lastCode(identity, email)
        const weak = yield* identityCall(identity, "POST", "/auth/register", {
          body: { email, pending, code, password: "12345678", name: "Weak" }
        })
        expect(weak.status).toBe(400)
        expect(weak.body.code).toBe(10010)
        const form = yield* promise(() =>
          fetch(`${identity}/api/v1/auth/register`, {
            method: "POST",
            headers: { "content-type": "text/plain" },
            body: JSON.stringify({ email, pending, code, password: "a long enough passphrase", name: "Form" })
          })
        )
        // Not sent as application/json: 415 41501 (README, "Request bodies").
        expect(form.status).toBe(415)
        const ok = yield* (yield* identityClient(identity)).account.register({
          payload: new RegisterRequest({ email, pending, code, password: "a long enough passphrase", name: "Strong" })
        })
        expect(ok.code).toBe(0)
      }))

    it.effect("no account enumeration: register/send-code answers a known address exactly like an unknown one, and mails its owner", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const known = yield* createUser()
        const unknown = freshEmail()
        const a = yield* identityCall(identity, "POST", "/auth/register/send-code", { body: { email: known.email } })
        const b = yield* identityCall(identity, "POST", "/auth/register/send-code", { body: { email: unknown } })
        expect(a.status).toBe(b.status)
        // Only the pending value differs, and it has the same length either way.
        expect(a.body.data.pending).toMatch(/^[A-Za-z0-9_-]{43}$/)
        expect(b.body.data.pending).toMatch(/^[A-Za-z0-9_-]{43}$/)
        expect({ ...a.body, data: { ...a.body.data, pending: "" } }).toEqual({
          ...b.body,
          data: { ...b.body.data, pending: "" }
        })
        for (const header of ["content-type", "content-length", "cache-control", "set-cookie", "retry-after"]) {
          expect(a.headers.get(header)).toBe(b.headers.get(header))
        }
        const warned = (yield* mailTo(identity, known.email)).at(-1)!
        expect(warned.subject).toMatch(/tried to register/)
        expect(warned.text).not.toMatch(/\b[0-9]{6}\b/)
        // Timing class: both paths do the same work, one code row and one mail row (no password
        // hashing, no SMTP wait), so neither is measurably slower.
        const sql = yield* SqlClient.SqlClient
        const rowsFor = (email: string) =>
          sql`SELECT (SELECT count(*)::int FROM email_codes WHERE email = lower(${email})) AS codes,
                     (SELECT count(*)::int FROM mail_outbox WHERE lower(to_address) = lower(${email})) AS mails`
        expect((yield* rowsFor(known.email))[0]).toEqual((yield* rowsFor(unknown))[0])
        expect((yield* rowsFor(known.email))[0]).toEqual({ codes: 1, mails: 1 })
        // The code made for a known address is never mailed, so registration there fails like a wrong code.
        const guess = yield* identityCall(identity, "POST", "/auth/register", {
          body: {
            email: known.email,
            pending: a.body.data.pending,
            code: "000000",
            password: "a long enough passphrase",
            name: "X"
          }
        })
        expect(guess.body.code).toBe(10004)
      }))

    it.effect("send-code is limited per client and target address: a second code within a minute is 429 10013 with Retry-After", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const email = freshEmail()
        expect((yield* identityCall(identity, "POST", "/auth/register/send-code", { body: { email } })).status).toBe(
          200
        )
        const again = yield* identityCall(identity, "POST", "/auth/register/send-code", {
          body: { email: email.toUpperCase() }
        })
        expect(again.status).toBe(429)
        expect(again.body).toEqual({ code: 10013, message: "Code requested too soon", data: null })
        expect(Number(again.headers.get("retry-after"))).toBeGreaterThanOrEqual(1)
      }))

    it.effect("racing registrations with one code create exactly one account", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const email = freshEmail()
        const { pending } = (yield* sendRegistrationCode(identity, email)).data
        const code = yield* lastCode(identity, email)
        const answers = yield* Effect.all(
          Array.from({ length: 8 }, (_, i) =>
            identityCall(identity, "POST", "/auth/register", {
              body: { email, pending, code, password: "a long enough passphrase", name: `Racer ${i}` }
            })),
          { concurrency: "unbounded" }
        )
        expect(answers.filter((a) => a.status === 200)).toHaveLength(1)
        // A loser is refused as any other try of that code would be: already used (10004), the
        // address taken (10006), or, once five tries have been spent on it, 10012 (README, "Envelope
        // codes"; which one depends on how the eight interleave).
        for (const a of answers.filter((a) => a.status !== 200)) expect([10004, 10006, 10012]).toContain(a.body.code)
        const sql = yield* SqlClient.SqlClient
        const rows = yield* sql`SELECT count(*)::int AS n FROM users WHERE lower(email) = ${email}`
        expect(rows[0]!.n).toBe(1)
      }))
  })
})

describe("Send-code limit per client address", () => {
  it.layer(IdentityTestEnv({ IDENTITY_CODE_IP_BURST: "3", IDENTITY_CODE_IP_PER_MINUTE: "1" }), serverLayerOptions)(
    (it) => {
      it.effect("the fourth code from one address within a minute is 429 10013, whatever the addresses", () =>
        Effect.gen(function*() {
          const { identity } = yield* IdentityServers
          const statuses: Array<number> = []
          for (let i = 0; i < 4; i++) {
            statuses.push(
              (yield* identityCall(identity, "POST", "/auth/register/send-code", { body: { email: freshEmail() } }))
                .status
            )
          }
          expect(statuses).toEqual([200, 200, 200, 429])
        }))
    }
  )
})
