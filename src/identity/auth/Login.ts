/**
 * Password sign-in (issue 4 item 1; DECISIONS 9, 11): rate limited per IP address and per account
 * before any hashing, one scrypt verification whether or not the account exists (an unknown email
 * costs the same time and gets the same answer as a wrong password), banned accounts refused only
 * after a correct password (so a ban does not reveal the account to a guesser), then a new session
 * and an access token bound to it (`sid`).
 */
import { Data, Effect, Option } from "effect"
import type { EnvelopeCodeName } from "../../../schema/Identity/Envelope.js"
import { FIRST_PARTY_CLIENT_ID } from "../clients/Clients.js"
import { Passwords } from "../crypto/Passwords.js"
import { IdentityConfig } from "../IdentityConfig.js"
import { RateLimiter } from "../ratelimit/RateLimiter.js"
import { Sessions } from "../sessions/Sessions.js"
import { Tokens } from "../tokens/Tokens.js"
import { Users } from "../users/Users.js"

export class LoginFailed extends Data.TaggedError("LoginFailed")<{
  readonly code: Extract<EnvelopeCodeName, "WRONG_CREDENTIALS" | "ACCOUNT_BANNED" | "TOO_MANY_ATTEMPTS">
  readonly retryAfterSeconds?: number
}> {}

export class Login extends Effect.Service<Login>()("identity/Login", {
  effect: Effect.gen(function*() {
    const config = yield* IdentityConfig
    const users = yield* Users
    const passwords = yield* Passwords
    const sessions = yield* Sessions
    const tokens = yield* Tokens
    const limiter = yield* RateLimiter

    const login = Effect.fn("Login.login")(function*(input: {
      readonly email: string
      readonly password: string
      readonly ip: string
      readonly userAgent: string
    }) {
      const byIp = yield* limiter.take(`login:ip:${input.ip}`, config.rateLimits.loginPerIp)
      if (!byIp.allowed) {
        return yield* new LoginFailed({ code: "TOO_MANY_ATTEMPTS", retryAfterSeconds: byIp.retryAfterSeconds })
      }
      const account = input.email.trim().toLowerCase()
      const byAccount = yield* limiter.take(`login:account:${account}`, config.rateLimits.loginPerAccount)
      if (!byAccount.allowed) {
        return yield* new LoginFailed({ code: "TOO_MANY_ATTEMPTS", retryAfterSeconds: byAccount.retryAfterSeconds })
      }
      const found = yield* users.findByEmail(account)
      const ok = yield* passwords.verify(input.password, Option.isSome(found) ? found.value.passwordHash : null)
      if (!ok || Option.isNone(found)) return yield* new LoginFailed({ code: "WRONG_CREDENTIALS" })
      const user = found.value
      if (user.banned) return yield* new LoginFailed({ code: "ACCOUNT_BANNED" })
      yield* users.rehashIfNeeded(user, input.password)
      const { cookie, session } = yield* sessions.create(user.id, { userAgent: input.userAgent, ip: input.ip })
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

    return { login } as const
  })
}) {}
