/**
 * The self-service account: the owner's view of it, display fields, the email address, the
 * password, the live sessions, and registration. Each operation is one transaction; the mail it
 * sends is queued in that transaction (src/identity/mail/Mailer.ts), so it goes out exactly when the
 * change is committed.
 *
 * Changing the email or the password needs a sign-in younger than 10 minutes
 * (src/identity/auth/SignedIn.ts `requireRecentSignIn`, applied by the handlers) and the current
 * password (for the email, a second-factor code instead when the account has one), so a stolen
 * session alone cannot take the account over; wrong ones share one budget per account. Either
 * change ends every other session of the account and revokes every refresh family, so whoever held
 * an old session or a relying party's refresh token must sign in again.
 *
 * Registration never tells whether an address has an account: asking for a code answers the same
 * (a new pending value, src/identity/account/EmailCodes.ts), meets the same limits and does the
 * same work either way; a known address gets a mail saying someone tried to register it instead of
 * the code.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import {
  AccountSession,
  AccountSessions,
  CodeSent,
  Me,
  PendingCodeSent,
  ProfileLength
} from "../../../schema/Identity/Me.js"
import { GrantedRole, Subject, UserId } from "../../../schema/Identity/User.js"
import { isBlankName } from "../../../schema/Text.js"
import type { BucketPolicy } from "../../platform/RateLimiter.js"
import { RateLimiter } from "../../platform/RateLimiter.js"
import { isUniqueViolation } from "../../platform/SqlState.js"
import type { EndUser } from "../auth/EndUsers.js"
import { Login } from "../auth/Login.js"
import { Passwords } from "../crypto/Passwords.js"
import { Mailer } from "../mail/Mailer.js"
import { escapeHtml } from "../pages/shared/Html.js"
import { endSignInsOf, Sessions } from "../sessions/Sessions.js"
import { refused, retryAfter } from "../shared/Refused.js"
import { TwoFactor } from "../twofactor/TwoFactor.js"
import { Users } from "../users/Users.js"
import { CODE_TTL_SECONDS, codeMail, EmailCodes } from "./EmailCodes.js"
import { weakPasswordReason } from "./PasswordPolicy.js"

/**
 * Wrong current passwords (or second-factor codes) per account before a password or email change
 * is refused for a while (429 10012); both changes share the budget.
 */
const currentPasswordGuesses: BucketPolicy = { capacity: 5, refillPerSecond: 1 / 60 }

const seconds = (date: Date) => Math.floor(date.getTime() / 1000)

const MeRow = Schema.Struct({
  id: Schema.Union([Schema.Number, Schema.NumberFromString]),
  sub: Schema.String,
  email: Schema.String,
  email_verified: Schema.Boolean,
  name: Schema.String,
  picture: Schema.String,
  bio: Schema.String,
  roles: Schema.Array(GrantedRole),
  created_at: Schema.Date,
  updated_at: Schema.Date,
  two_factor: Schema.Boolean
})
const decodeMe = Schema.decodeUnknownEffect(Schema.Array(MeRow))

const SessionRow = Schema.Struct({
  sid: Schema.String,
  current: Schema.Boolean,
  created_at: Schema.Date,
  auth_time: Schema.Date,
  expires_at: Schema.Date,
  user_agent: Schema.String,
  ip: Schema.String
})
const decodeSessions = Schema.decodeUnknownEffect(Schema.Array(SessionRow))

/** Where the request came from, recorded on a new session. */
export interface ClientInfo {
  readonly ip: string
  readonly userAgent: string
}

/** How the owner proves an email change: the current password, or a code of the second factor. */
export interface CurrentProof {
  readonly current_password?: string | undefined
  readonly two_factor_code?: string | undefined
}

export class Account extends Context.Service<Account>()("identity/Account", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const codes = yield* EmailCodes
    const mailer = yield* Mailer
    const passwords = yield* Passwords
    const users = yield* Users
    const sessions = yield* Sessions
    const login = yield* Login
    const limiter = yield* RateLimiter
    const twoFactor = yield* TwoFactor

    /**
     * The owner's proof for a sensitive change, counted against the account's budget of wrong
     * guesses: the current password (401 10011 when wrong), or a current code or unused recovery
     * code of the account's second factor (401 10015 when wrong, or without a factor). Neither is
     * 400 40001.
     */
    const proveOwner = Effect.fn("Account.proveOwner")(function*(endUser: EndUser, proof: CurrentProof, ip: string) {
      const password = proof.current_password
      const otp = proof.two_factor_code?.trim()
      if (password === undefined && (otp === undefined || otp === "")) return yield* refused("INVALID_REQUEST")
      const guesses = yield* limiter.take(`password-change:${endUser.user.id}`, currentPasswordGuesses)
      if (!guesses.allowed) return yield* refused("TOO_MANY_ATTEMPTS", retryAfter(guesses.retryAfterSeconds))
      const user = yield* users.findById(endUser.user.id)
      if (Option.isNone(user)) return yield* refused("TOKEN_INVALID")
      if (password !== undefined) {
        if (!(yield* passwords.verify(password, user.value.passwordHash))) return yield* refused("WRONG_PASSWORD")
        return user.value
      }
      if (!(yield* twoFactor.isEnabled(user.value.id))) return yield* refused("TWO_FACTOR_INVALID")
      const digits = otp!.replace(/\s+/g, "")
      yield* twoFactor.verifySignIn(
        user.value.id,
        /^[0-9]{6}$/.test(digits) ? { otp: digits, ip } : { recoveryCode: otp!, ip }
      )
      return user.value
    })

    const me = Effect.fn("Account.me")(function*(userId: number) {
      const rows = yield* sql`
        SELECT id, sub, email, email_verified, name, picture, bio, roles, created_at, updated_at,
               totp_enabled_at IS NOT NULL AS two_factor
        FROM users WHERE id = ${userId}
      `.pipe(Effect.flatMap(decodeMe), Effect.orDie)
      const row = rows[0]
      if (row === undefined) return yield* refused("TOKEN_INVALID")
      return new Me({
        id: UserId.make(row.id),
        sub: Subject.make(row.sub),
        email: row.email,
        email_verified: row.email_verified,
        name: row.name,
        picture: row.picture,
        bio: row.bio,
        roles: row.roles,
        created_at: seconds(row.created_at),
        updated_at: seconds(row.updated_at),
        two_factor: row.two_factor
      })
    })

    /** Display fields only; a name is trimmed and may not be blank. */
    const updateProfile = Effect.fn("Account.updateProfile")(function*(
      endUser: EndUser,
      change: { readonly name?: string | undefined; readonly bio?: string | undefined }
    ) {
      const name = change.name?.trim()
      if (name !== undefined && (isBlankName(name) || name.length > ProfileLength.name)) {
        return yield* refused("INVALID_REQUEST")
      }
      const bio = change.bio?.trim()
      if (name !== undefined || bio !== undefined) {
        yield* sql`
          UPDATE users SET name = coalesce(${name ?? null}, name), bio = coalesce(${bio ?? null}, bio),
                           updated_at = now()
          WHERE id = ${endUser.user.id}
        `.pipe(Effect.orDie)
      }
      return yield* me(endUser.user.id)
    })

    const sendEmailChangeCode = Effect.fn("Account.sendEmailChangeCode")(function*(
      endUser: EndUser,
      email: string,
      ip: string
    ) {
      yield* codes.admitSend("email_change", email, ip, endUser.user.id)
      yield* Effect.gen(function*() {
        const code = yield* codes.issueForAccount(endUser.user.id, email)
        yield* mailer.send({ to: email, ...codeMail(code, "confirm this address for your shiori account") })
      }).pipe(sql.withTransaction, Effect.orDie)
      return new CodeSent({ expires_in: CODE_TTL_SECONDS })
    })

    /**
     * Moves the account to `email` (proven by its code, the owner by `proof`), ends every other
     * session and refresh family, and tells the old address. 409 10006 when taken.
     */
    const changeEmail = Effect.fn("Account.changeEmail")(function*(
      endUser: EndUser,
      input: CurrentProof & { readonly email: string; readonly code: string },
      ip: string
    ) {
      const { code, email } = input
      yield* proveOwner(endUser, input, ip)
      const verified = yield* codes.verify({ purpose: "email_change", userId: endUser.user.id }, code, email)
      const previous = endUser.user.email
      const taken = yield* Effect.gen(function*() {
        yield* codes.markUsed(verified.id)
        const rows = yield* sql`
          UPDATE users SET email = ${email}, email_verified = true, updated_at = now()
          WHERE id = ${endUser.user.id}
            AND NOT EXISTS (SELECT 1 FROM users o WHERE lower(o.email) = lower(${email}) AND o.id <> ${endUser.user.id})
          RETURNING id
        `
        if (rows.length === 0) return true
        yield* endSignInsOf(sql, endUser.user.id, "email_changed", endUser.session.id)
        if (previous.toLowerCase() !== email.toLowerCase()) {
          yield* mailer.send({
            to: previous,
            subject: "Your shiori email address was changed",
            text: `The email address of your shiori account was changed to ${email}, and every other sign-in ` +
              "was ended.\n\nIf you did not do this, reply to this mail at once.\n",
            html: `<p>The email address of your shiori account was changed to ${escapeHtml(email)}, and every ` +
              "other sign-in was ended.</p><p>If you did not do this, reply to this mail at once.</p>"
          })
        }
        return false
      }).pipe(
        sql.withTransaction,
        // A concurrent registration or change may take the address between the check and the write.
        Effect.catchTag(
          "SqlError",
          (error) => isUniqueViolation(error, "users_email_lower_key") ? Effect.succeed(true) : Effect.die(error)
        )
      )
      if (taken) return yield* refused("EMAIL_TAKEN")
      return yield* me(endUser.user.id)
    })

    /**
     * Replaces the password, ends every other session of the account and revokes every refresh
     * family (their refresh tokens then get `invalid_grant`). The session making the change stays.
     */
    const changePassword = Effect.fn("Account.changePassword")(function*(
      endUser: EndUser,
      current: string,
      next: string
    ) {
      const guesses = yield* limiter.take(`password-change:${endUser.user.id}`, currentPasswordGuesses)
      if (!guesses.allowed) return yield* refused("TOO_MANY_ATTEMPTS", retryAfter(guesses.retryAfterSeconds))
      const user = yield* users.findById(endUser.user.id)
      if (Option.isNone(user)) return yield* refused("TOKEN_INVALID")
      if (!(yield* passwords.verify(current, user.value.passwordHash))) return yield* refused("WRONG_PASSWORD")
      if (weakPasswordReason(next, user.value) !== undefined) return yield* refused("WEAK_PASSWORD")
      const hash = yield* passwords.hash(next)
      yield* Effect.gen(function*() {
        yield* sql`
          UPDATE users SET password_hash = ${hash}, password_changed_at = now(), updated_at = now()
          WHERE id = ${user.value.id}
        `
        yield* endSignInsOf(sql, user.value.id, "password_changed", endUser.session.id)
        yield* mailer.send({
          to: user.value.email,
          subject: "Your shiori password was changed",
          text: "The password of your shiori account was changed, and every other sign-in was ended.\n\n" +
            "If you did not do this, reply to this mail at once.\n",
          html: "<p>The password of your shiori account was changed, and every other sign-in was ended.</p>" +
            "<p>If you did not do this, reply to this mail at once.</p>"
        })
      }).pipe(sql.withTransaction, Effect.orDie)
    })

    const listSessions = Effect.fn("Account.listSessions")(function*(endUser: EndUser) {
      const rows = yield* sql`
        SELECT sid::text AS sid, id = ${endUser.session.id} AS current, created_at, auth_time, expires_at,
               user_agent, ip
        FROM sessions
        WHERE user_id = ${endUser.user.id} AND ended_at IS NULL AND expires_at > now()
        ORDER BY created_at DESC, sid
      `.pipe(Effect.flatMap(decodeSessions), Effect.orDie)
      return new AccountSessions({
        items: rows.map((row) =>
          new AccountSession({
            id: row.sid,
            current: row.current,
            created_at: seconds(row.created_at),
            auth_time: seconds(row.auth_time),
            expires_at: seconds(row.expires_at),
            user_agent: row.user_agent,
            ip: row.ip
          })
        )
      })
    })

    /** Ends one live session of the account (and its refresh families); 404 40401 for any other id. */
    const endSession = Effect.fn("Account.endSession")(function*(endUser: EndUser, sid: string) {
      const session = yield* sessions.fromSid(sid)
      if (Option.isNone(session) || session.value.userId !== endUser.user.id) return yield* refused("NOT_FOUND")
      yield* sessions.end(session.value.id)
    })

    const sendRegistrationCode = Effect.fn("Account.sendRegistrationCode")(function*(email: string, ip: string) {
      yield* codes.admitSend("register", email, ip, null)
      const pending = yield* Effect.gen(function*() {
        const existing = yield* users.findByEmail(email)
        // A code either way, so both answers cost the same work; a known address never sees it.
        const { code, pending } = yield* codes.issuePending("register", email, null)
        if (Option.isSome(existing)) {
          yield* mailer.send({
            to: existing.value.email,
            subject: "Someone tried to register your address at shiori",
            text: "Someone asked to register a new shiori account with this address, which already has one.\n\n" +
              "If it was you, sign in instead. Otherwise, ignore this mail.\n",
            html: "<p>Someone asked to register a new shiori account with this address, which already has one.</p>" +
              "<p>If it was you, sign in instead. Otherwise, ignore this mail.</p>"
          })
          return pending
        }
        yield* mailer.send({ to: email, ...codeMail(code, "create your shiori account") })
        return pending
      }).pipe(sql.withTransaction, Effect.orDie)
      return new PendingCodeSent({ pending, expires_in: CODE_TTL_SECONDS })
    })

    /**
     * Creates the account (its address proven by the code of the request's pending value) and signs it in: a session and an
     * access token bound to it, like a password sign-in.
     */
    const register = Effect.fn("Account.register")(function*(
      input: {
        readonly email: string
        readonly pending: string
        readonly code: string
        readonly password: string
        readonly name: string
      },
      client: ClientInfo
    ) {
      const name = input.name.trim()
      if (isBlankName(name)) return yield* refused("INVALID_REQUEST")
      if (weakPasswordReason(input.password, { email: input.email, name }) !== undefined) {
        return yield* refused("WEAK_PASSWORD")
      }
      const verified = yield* codes.verify({ purpose: "register", pending: input.pending }, input.code, input.email)
      const created = yield* Effect.gen(function*() {
        yield* codes.markUsed(verified.id)
        return yield* users.create({
          email: input.email,
          password: input.password,
          name,
          roles: [],
          emailVerified: true
        })
      }).pipe(
        sql.withTransaction,
        Effect.catchTags({
          UserInputError: () => refused("EMAIL_TAKEN"),
          SqlError: (error) => Effect.die(error)
        })
      )
      const user = yield* users.findById(created.id)
      if (Option.isNone(user)) return yield* Effect.die(new Error("Account.register: the new user is gone"))
      // Signed in like a password sign-in: the password is the method that proved the account.
      const { access, cookie } = yield* login.start(user.value, client, ["pwd"])
      return { cookie, access }
    })

    return {
      me,
      updateProfile,
      sendEmailChangeCode,
      changeEmail,
      changePassword,
      listSessions,
      endSession,
      sendRegistrationCode,
      register
    } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
