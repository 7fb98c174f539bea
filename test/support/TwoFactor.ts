/**
 * The second factor as a user's authenticator app and client drive it (RFC 6238 codes, set-up and
 * sign-in over real HTTP), for the tests of src/identity/twofactor/.
 */
import { Effect } from "effect"
import * as OTPAuth from "otpauth"
import { TwoFactorCodeRequest } from "../../schema/Identity/TwoFactor.js"
import { identityCall, identityClient } from "./Clients.js"
import type { TestUser } from "./IdentityServers.js"
import { createUser, login } from "./IdentityServers.js"

const PERIOD_MS = 30_000

/** Waits until at least 8 seconds are left in the current 30-second step, then answers that step. */
export const quietStep = Effect.promise(async () => {
  const into = Date.now() % PERIOD_MS
  if (into > PERIOD_MS - 8_000) await new Promise((resolve) => setTimeout(resolve, PERIOD_MS - into + 200))
  return Math.floor(Date.now() / PERIOD_MS)
})

/** The code of `secret` (base32) for time step `step` (RFC 6238 section 4: HOTP over the step). */
export const codeAt = (secret: string, step: number) =>
  OTPAuth.HOTP.generate({ secret: OTPAuth.Secret.fromBase32(secret), algorithm: "SHA1", digits: 6, counter: step })

/** A user signed in through `POST /auth/login`, with a second factor turned on at step `step - 1`. */
export const userWithFactor = (identity: string, step: number) =>
  Effect.gen(function*() {
    const user = yield* createUser()
    const session = yield* Effect.promise(() => login(identity, user))
    const account = yield* identityClient(identity, session.accessToken)
    const secret = (yield* account.twoFactor.setup()).data.secret
    // The previous step is still accepted (RFC 6238 section 5.2: one step back for delays).
    const enable = yield* account.twoFactor.enable({
      payload: new TwoFactorCodeRequest({ code: codeAt(secret, step - 1), current_password: user.password })
    })
    return { user, session, secret, recoveryCodes: enable.data.recovery_codes }
  })

/** `POST /auth/login` with the user's password and `extra` fields (`otp`, `recovery_code`). */
export const postLogin = (identity: string, user: TestUser, extra: Record<string, string> = {}) =>
  identityCall(identity, "POST", "/auth/login", { body: { email: user.email, password: user.password, ...extra } })
