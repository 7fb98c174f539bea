/**
 * Password sign-in: throttled before any hashing, one scrypt verification whether or not the account
 * exists (an unknown email costs the same time and gets the same answer as a wrong password), banned
 * accounts refused only after a correct password (so a ban does not reveal the account to a
 * guesser), then a new session and an access token bound to it (`sid`).
 *
 * Throttling (OWASP Authentication Cheat Sheet, "Protect against automated attacks") never locks an
 * account, since whoever can lock it can keep its owner out:
 *
 * - attempts per client address, whatever the account (spraying many accounts, and the hashing
 *   it would cost);
 * - failures per (account, address): a guesser's address is refused for that account while the
 *   owner signs in from elsewhere;
 * - per account, failures from every address: past a free allowance each attempt waits a delay that
 *   doubles up to a cap (guessing spread over many addresses). One address alone never reaches the
 *   allowance (src/identity/shared/IdentityConfig.ts).
 *
 * An attempt arriving before its delay ran out is answered 429 with `Retry-After` at once, hashing
 * nothing, rather than held until the delay passes: a held request keeps its socket, its fiber and
 * whatever it holds open, so a guesser opening many would exhaust the server with the very delays
 * meant to slow it, while an answer costs one statement. Attempts count as failures from the moment
 * they are admitted (concurrent guesses cannot pass a delay together) and a correct password takes
 * its count back.
 *
 * An account with a second factor (src/identity/twofactor/TwoFactor.ts) needs a code after the right
 * password before any session exists: `otp` or `recovery_code` in the same request, or, on the
 * sign-in page, in a second form (`resume`) that completes a half-done sign-in once
 * (src/identity/twofactor/PendingSignIn.ts). A right password for such an account cancels its older
 * half-done sign-ins. The session records the methods used (RFC 8176 `amr`).
 */
import { Context, Data, Effect, Layer, Option } from "effect"
import type { EnvelopeCodeName } from "../../../schema/Identity/Envelope.js"
import { addressBucket } from "../../platform/ClientAddress.js"
import type { Attempt } from "../../platform/RateLimiter.js"
import { RateLimiter } from "../../platform/RateLimiter.js"
import { FIRST_PARTY_CLIENT_ID } from "../clients/Clients.js"
import { Passwords } from "../crypto/Passwords.js"
import { Sessions } from "../sessions/Sessions.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import { Tokens } from "../tokens/Tokens.js"
import type { Pending } from "../twofactor/PendingSignIn.js"
import { PendingSignIn } from "../twofactor/PendingSignIn.js"
import type { Amr } from "../twofactor/TwoFactor.js"
import { PASSWORD_ONLY, TwoFactor } from "../twofactor/TwoFactor.js"
import type { User } from "../users/Users.js"
import { Users } from "../users/Users.js"

export class LoginFailed extends Data.TaggedError("LoginFailed")<{
  readonly code: Extract<
    EnvelopeCodeName,
    | "WRONG_PASSWORD"
    | "ACCOUNT_BANNED"
    | "TOO_MANY_ATTEMPTS"
    | "TWO_FACTOR_REQUIRED"
    | "TWO_FACTOR_INVALID"
    // The half-done sign-in of `resume` was used, cancelled or voided by a password change.
    | "TOKEN_INVALID"
  >
  readonly retryAfterSeconds?: number
}> {}

export class Login extends Context.Service<Login>()("identity/Login", {
  make: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const users = yield* Users
    const passwords = yield* Passwords
    const sessions = yield* Sessions
    const tokens = yield* Tokens
    const limiter = yield* RateLimiter
    const twoFactor = yield* TwoFactor
    const pendingSignIns = yield* PendingSignIn

    const perAddress = (ip: string) =>
      Effect.flatMap(limiter.take(`login:ip:${addressBucket(ip)}`, config.rateLimits.loginPerIp), (byIp) =>
        byIp.allowed
          ? Effect.void
          : new LoginFailed({ code: "TOO_MANY_ATTEMPTS", retryAfterSeconds: byIp.retryAfterSeconds }))

    /**
     * `ip` is `clientAddress` of the request (src/platform/ClientAddress.ts); the limits count
     * by `addressBucket` of it, the session records it whole.
     */
    const checkPassword = Effect.fn("Login.checkPassword")(function*(input: {
      readonly email: string
      readonly password: string
      readonly ip: string
    }) {
      const address = addressBucket(input.ip)
      yield* perAddress(input.ip)
      const account = input.email.trim().toLowerCase()
      // An address has no "|", so the pair's key names one (address, account) only.
      const attempt: Attempt = {
        bucket: `login:failures:${address}|${account}`,
        bucketPolicy: config.rateLimits.loginFailures,
        backoff: `login:delay:${account}`,
        backoffPolicy: config.rateLimits.loginAccount
      }
      const admitted = yield* limiter.admit(attempt)
      if (!admitted.allowed) {
        return yield* new LoginFailed({ code: "TOO_MANY_ATTEMPTS", retryAfterSeconds: admitted.retryAfterSeconds })
      }
      const found = yield* users.findByEmail(account)
      const ok = yield* passwords.verify(input.password, Option.isSome(found) ? found.value.passwordHash : null)
      if (!ok || Option.isNone(found)) return yield* new LoginFailed({ code: "WRONG_PASSWORD" })
      yield* limiter.succeeded(attempt)
      const user = found.value
      if (user.banned) return yield* new LoginFailed({ code: "ACCOUNT_BANNED" })
      yield* users.rehashIfNeeded(user, input.password)
      const secondFactor = yield* twoFactor.isEnabled(user.id)
      // A newer sign-in: whatever half-done one the account had is void.
      if (secondFactor) yield* pendingSignIns.cancel(user.id)
      return { user, secondFactor }
    })

    /** The code step: the sign-in's methods, or why the code is refused. */
    const checkCode = (user: User, input: {
      readonly otp?: string | undefined
      readonly recoveryCode?: string | undefined
      readonly ip: string
      readonly pending?: Pending | undefined
    }) =>
      twoFactor.verifySignIn(user.id, input).pipe(
        Effect.catchTag("Refused", (refused) =>
          new LoginFailed({
            code: refused.code === "TWO_FACTOR_REQUIRED" || refused.code === "TOO_MANY_ATTEMPTS" ||
                refused.code === "TOKEN_INVALID"
              ? refused.code
              : "TWO_FACTOR_INVALID",
            ...(refused.headers["retry-after"] === undefined
              ? {}
              : { retryAfterSeconds: Number(refused.headers["retry-after"]) })
          }))
      )

    /** A session for the signed-in user and the sign-in access token bound to it. */
    const start = Effect.fn("Login.start")(function*(user: User, client: {
      readonly ip: string
      readonly userAgent: string
    }, amr: Amr) {
      const { cookie, session } = yield* sessions.create(user.id, { userAgent: client.userAgent, ip: client.ip }, amr)
      const access = yield* tokens.issueAccessToken({
        sub: user.sub,
        uid: user.id,
        clientId: FIRST_PARTY_CLIENT_ID,
        audience: config.issuer,
        scopes: [],
        roles: user.roles,
        siteRoles: [],
        sessionId: session.sid,
        authTime: Math.floor(session.authTime.getTime() / 1000)
      })
      return { user, session, cookie, access }
    })

    /**
     * Password, then the second factor when the account has one (`otp` or `recoveryCode`; without
     * either `TWO_FACTOR_REQUIRED`, and no session), then the session.
     */
    const login = Effect.fn("Login.login")(function*(input: {
      readonly email: string
      readonly password: string
      readonly otp?: string | undefined
      readonly recoveryCode?: string | undefined
      readonly ip: string
      readonly userAgent: string
    }) {
      const { secondFactor, user } = yield* checkPassword(input)
      const amr = secondFactor ? yield* checkCode(user, input) : PASSWORD_ONLY
      return yield* start(user, input, amr)
    })

    /**
     * The second step of a page sign-in whose password step vouched for `pending.userId` (a signed
     * pending sign-in, src/identity/pages/signin/SignIn.ts): the code, which spends the pending sign-in
     * with it (`TOKEN_INVALID` when it was spent or cancelled meanwhile), then the session.
     */
    const resume = Effect.fn("Login.resume")(function*(pending: Pending, input: {
      readonly otp?: string | undefined
      readonly recoveryCode?: string | undefined
      readonly ip: string
      readonly userAgent: string
    }) {
      yield* perAddress(input.ip)
      const found = yield* users.findById(pending.userId)
      if (Option.isNone(found)) return yield* new LoginFailed({ code: "WRONG_PASSWORD" })
      if (found.value.banned) return yield* new LoginFailed({ code: "ACCOUNT_BANNED" })
      const amr = yield* checkCode(found.value, { ...input, pending })
      return yield* start(found.value, input, amr)
    })

    return { login, checkPassword, start, resume } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
