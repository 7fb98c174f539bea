/**
 * Rotating `SHIORI_SECRET` with the earlier secret in `SHIORI_SECRET_PREVIOUS` (docs/deploying.md,
 * "Rotating SHIORI_SECRET"): identity servers started over the same database with the new secret
 * keep the signing keys, the TOTP secrets and the forms, half-done sign-ins and emailed codes in
 * flight; a TOTP secret is sealed anew under the new secret by the sign-in that reads it, and
 * everything by the `reencrypt-secrets` command, after which the new secret alone is enough. Without
 * the earlier secret the failures stay the clear ones they were (start-up refused, 10015).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import * as Jose from "jose"
import * as Crypto from "node:crypto"
import { derivedKek, makeCipher, SigningKeysUndecryptable } from "../../src/identity/keys/SigningKeyCipher.js"
import { makeTotpCipher, SealedSecret } from "../../src/identity/twofactor/TotpSecrets.js"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { runCli } from "../support/Cli.js"
import { codesMailedTo, identityCall } from "../support/Clients.js"
import {
  cookiesOf,
  createClient,
  createUser,
  hiddenValue,
  IdentityServers,
  IdentityTestEnv,
  login,
  serverLayerOptions,
  startIdentityServer,
  tokensFor
} from "../support/IdentityServers.js"
import { codeAt, postLogin, quietStep, userWithFactor } from "../support/TwoFactor.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** The secret before the rotation and the one after: random, 32 characters each. */
const S1 = Crypto.randomBytes(24).toString("base64url")
const S2 = Crypto.randomBytes(24).toString("base64url")
const rotated = { SHIORI_SECRET: S2, SHIORI_SECRET_PREVIOUS: S1 }
const newAlone = { SHIORI_SECRET: S2 }

/** Which secret, taken alone, opens the user's stored TOTP secret (or pending set-up's secret). */
const totpSealedUnder = (userId: number, column: "secret" | "pending_secret" = "secret") =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const [row] = yield* sql<{ sealed: SealedSecret }>`
      SELECT ${sql(column)} AS sealed FROM two_factor_totp WHERE user_id = ${userId}
    `
    const opens = (secret: string) => Option.isSome(makeTotpCipher([Redacted.make(secret)]).open(userId, row!.sealed))
    return { S1: opens(S1), S2: opens(S2) }
  }).pipe(Effect.orDie)

/** Each signing key's kid and the fingerprint of the key-encryption key that sealed it. */
const signingKeyRows = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return yield* sql<{ kid: string; kek: string }>`
    SELECT kid, private_jwk_encrypted ->> 'kek' AS kek FROM signing_keys ORDER BY kid
  `
}).pipe(Effect.orDie)

const kekIdOf = (secret: string) => makeCipher(derivedKek(Redacted.make(secret))).kekId

const jwksAt = (issuer: string) =>
  promise(() => fetch(`${issuer}/oauth/jwks`).then((res) => res.json() as Promise<Jose.JSONWebKeySet>))

describe("signing keys across a rotation of SHIORI_SECRET", () => {
  it.layer(IdentityTestEnv({ SHIORI_SECRET: S1 }), serverLayerOptions)((it) => {
    it.effect("without the earlier secret start-up stops with the clear error; with it the server starts, re-seals the key under the new secret and an id_token from before still verifies", () =>
      Effect.gen(function*() {
        const { identity, issuer } = yield* IdentityServers
        const client = yield* createClient()
        const user = yield* createUser()
        const session = yield* promise(() => login(identity, user))
        const before = yield* promise(() => tokensFor(identity, client, session))
        const keysBefore = yield* signingKeyRows
        expect(keysBefore.map((row) => row.kek)).toEqual([kekIdOf(S1)])

        const refused = yield* Effect.flip(startIdentityServer(newAlone))
        expect(refused).toBeInstanceOf(SigningKeysUndecryptable)
        expect((refused as SigningKeysUndecryptable).message).toContain(
          "cannot decrypt signing keys: SHIORI_SECRET or SIGNING_KEY_ENCRYPTION_KEY changed?"
        )
        expect((refused as SigningKeysUndecryptable).message).toContain("SHIORI_SECRET_PREVIOUS")
        // Nothing was written, no key was made.
        expect(yield* signingKeyRows).toEqual(keysBefore)

        const next = yield* startIdentityServer(rotated)
        // The same key, sealed under the key derived from the new secret.
        expect(yield* signingKeyRows).toEqual([{ kid: keysBefore[0]!.kid, kek: kekIdOf(S2) }])
        const published = yield* jwksAt(next.issuer)
        expect(published.keys.map((key) => key.kid)).toEqual([keysBefore[0]!.kid])
        expect(published).toEqual(yield* jwksAt(issuer))
        const verified = yield* promise(() => Jose.jwtVerify(before.id_token!, Jose.createLocalJWKSet(published)))
        expect(verified.payload.sub).toBe(user.sub)
        // It signs: a sign-in there answers a token verified by the same key.
        const signed = yield* promise(() => login(next.identity, user))
        const claims = yield* promise(() => Jose.jwtVerify(signed.accessToken, Jose.createLocalJWKSet(published)))
        expect(claims.protectedHeader.kid).toBe(keysBefore[0]!.kid)

        // Re-sealed, the key opens under the new secret alone.
        const alone = yield* startIdentityServer(newAlone)
        expect(yield* jwksAt(alone.issuer)).toEqual(published)
      }).pipe(Effect.scoped))
  })
})

describe("TOTP secrets and forms in flight across a rotation of SHIORI_SECRET", () => {
  it.layer(IdentityTestEnv({ SHIORI_SECRET: S1 }), serverLayerOptions)((it) => {
    it.effect("a sign-in begun under the old secret ends under the new one with the earlier secret listed, which re-seals the TOTP secret; the new secret alone then signs in, and before that answered 10015", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        // Both start before the step is chosen (the first re-seals the signing keys, so the second can).
        const next = yield* startIdentityServer(rotated)
        const alone = yield* startIdentityServer(newAlone)
        const step = yield* quietStep
        const { secret, user } = yield* userWithFactor(identity, step)
        expect(yield* totpSealedUnder(user.id)).toEqual({ S1: true, S2: false })

        // Without the earlier secret the stored key opens under nothing: the code is wrong, as before.
        const lost = yield* postLogin(alone.identity, user, { otp: codeAt(secret, step) })
        expect(lost.status).toBe(401)
        expect(lost.body).toEqual({ code: 10015, message: "Second factor code wrong", data: null })

        // The sign-in page's password step, under the old secret: a CSRF token and a pending sign-in.
        const first = yield* promise(() => fetch(`${identity}/api/v1/ui/login`))
        const cookies = cookiesOf(first).join("; ")
        const post = (server: string, fields: Record<string, string>) =>
          promise(() =>
            fetch(`${server}/api/v1/ui/login`, {
              method: "POST",
              redirect: "manual",
              headers: { cookie: cookies, "content-type": "application/x-www-form-urlencoded" },
              body: new URLSearchParams(fields).toString()
            })
          )
        const password = yield* post(identity, {
          csrf: hiddenValue(yield* promise(() => first.text()), "csrf"),
          email: user.email,
          password: user.password,
          return_to: "/api/v1/ui/login"
        })
        expect(password.status).toBe(200)
        const stepHtml = yield* promise(() => password.text())
        const codeStep = {
          csrf: hiddenValue(stepHtml, "csrf"),
          pending: hiddenValue(stepHtml, "pending"),
          email: user.email,
          return_to: hiddenValue(stepHtml, "return_to"),
          otp: codeAt(secret, step)
        }
        // The new secret alone does not know the form.
        const refused = yield* post(alone.identity, codeStep)
        expect(refused.status).toBe(403)
        expect(refused.headers.getSetCookie().some((c) => c.startsWith("shiori_session="))).toBe(false)
        // With the earlier secret listed, the form, the pending sign-in and the TOTP secret all hold.
        const right = yield* post(next.identity, codeStep)
        expect(right.status).toBe(303)
        expect(right.headers.getSetCookie().some((c) => c.startsWith("shiori_session="))).toBe(true)
        expect(yield* totpSealedUnder(user.id)).toEqual({ S1: false, S2: true })

        // Re-sealed: the new secret alone takes the next code.
        const later = yield* postLogin(alone.identity, user, { otp: codeAt(secret, step + 1) })
        expect(later.status).toBe(200)
        expect(later.body.data.access_token).toEqual(expect.any(String))
      }).pipe(Effect.scoped))
  })
})

describe("emailed codes across a rotation of SHIORI_SECRET", () => {
  it.layer(IdentityTestEnv({ SHIORI_SECRET: S1 }), serverLayerOptions)((it) => {
    it.effect("a registration code mailed under the old secret is refused by the new secret alone and registers with the earlier secret listed", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const next = yield* startIdentityServer(rotated)
        const alone = yield* startIdentityServer(newAlone)
        const email = `rotation_${Crypto.randomBytes(4).toString("hex")}@example.com`
        const sent = yield* identityCall(identity, "POST", "/auth/register/send-code", { body: { email } })
        expect(sent.status).toBe(200)
        const [code] = yield* codesMailedTo(identity, email)
        const register = (server: string) =>
          identityCall(server, "POST", "/auth/register", {
            body: { email, pending: sent.body.data.pending, code, password: "a long enough passphrase", name: "Mio" }
          })
        // Only an HMAC of the code is stored: under the new secret alone the right code does not match.
        expect((yield* register(alone.identity)).body.code).toBe(10004)
        const registered = yield* register(next.identity)
        expect(registered.status).toBe(200)
        expect(registered.body.code).toBe(0)
      }).pipe(Effect.scoped))
  })
})

describe("reencrypt-secrets (README, \"Operator CLI\")", () => {
  it.layer(IdentityTestEnv({ SHIORI_SECRET: S1 }), serverLayerOptions)((it) => {
    it.effect("re-encrypts every TOTP secret (pending set-ups too) and signing key under the new secret, in batches and idempotently; the new secret alone then signs in", () =>
      Effect.gen(function*() {
        const { identity } = yield* IdentityServers
        const url = Redacted.value(yield* DatabaseUrl)
        const cli = (env: Record<string, string>, ...args: ReadonlyArray<string>) =>
          promise(() => runCli(["reencrypt-secrets", ...args], { DATABASE_URL: url, ...env }))
        const step = yield* quietStep
        const users = [yield* userWithFactor(identity, step), yield* userWithFactor(identity, step)]
        // A set-up begun and not confirmed: its pending secret is sealed too.
        const pendingUser = yield* createUser()
        const session = yield* promise(() => login(identity, pendingUser))
        const setup = yield* promise(() =>
          fetch(`${identity}/api/v1/auth/2fa/setup`, {
            method: "POST",
            headers: { authorization: `Bearer ${session.accessToken}` }
          })
        )
        expect(setup.status).toBe(200)

        // The current secret is what everything is sealed under: a short one is refused.
        const weak = yield* cli({ SHIORI_SECRET: "too-short", SHIORI_SECRET_PREVIOUS: S1 }, "--json")
        expect(weak.code).not.toBe(0)
        expect(weak.stderr).toContain("SHIORI_SECRET is 9 characters long")
        expect(yield* signingKeyRows).toEqual([{ kid: expect.any(String), kek: kekIdOf(S1) }])

        const first = yield* cli(rotated, "--batch-size", "1", "--json")
        expect(first.code, first.stderr).toBe(0)
        expect(JSON.parse(first.stdout)).toEqual({
          signing_keys: { reencrypted: 1 },
          totp_secrets: { reencrypted: 3, current: 0, unreadable: 0 }
        })
        for (const { user } of users) expect(yield* totpSealedUnder(user.id)).toEqual({ S1: false, S2: true })
        expect((yield* signingKeyRows).map((row) => row.kek)).toEqual([kekIdOf(S2)])

        const again = yield* cli(rotated, "--json")
        expect(again.code, again.stderr).toBe(0)
        expect(JSON.parse(again.stdout)).toEqual({
          signing_keys: { reencrypted: 0 },
          totp_secrets: { reencrypted: 0, current: 3, unreadable: 0 }
        })

        expect(yield* totpSealedUnder(pendingUser.id, "pending_secret")).toEqual({ S1: false, S2: true })

        // The earlier secret dropped: the new one alone starts and takes each user's code.
        const alone = yield* startIdentityServer(newAlone)
        const now = yield* quietStep
        for (const { secret, user } of users) {
          const signedIn = yield* postLogin(alone.identity, user, { otp: codeAt(secret, now) })
          expect(signedIn.status, JSON.stringify(signedIn.body)).toBe(200)
        }
      }).pipe(Effect.scoped))
  })
})
