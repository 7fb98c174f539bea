/**
 * Account recovery ("forgot password"): a code mailed to the account's address, bound to the
 * pending value that asked for it (src/identity/account/EmailCodes.ts), then a new password.
 *
 * - Asking never tells whether an address has an account: the answer (a new pending value), the
 *   limits (those of registration's send-code) and the work (one code row, one queued mail) are the
 *   same either way. The account's address gets the code; an address without an account gets a
 *   mail saying so, never a code, so its pending value can never reset anything.
 * - Resetting needs the pending value and its code (5 tries per pending value; an unknown or
 *   expired one answers like a wrong code). In one transaction it sets the password (the policy of
 *   src/identity/account/PasswordPolicy.ts), uses the code and every other open recovery code of
 *   the account, ends every session and revokes every refresh family (nobody stays signed in with
 *   the old password, at the provider or at any relying party), and mails the owner. A code mailed
 *   to an address the account has since left does not reset it. The reset signs nobody in and
 *   leaves a second factor on: recovering the mailbox does not get past the authenticator.
 */
import { Context, Effect, Layer, Option } from "effect"
import { SqlClient } from "effect/sql"
import { Passwords } from "../crypto/Passwords.js"
import { Mailer } from "../mail/Mailer.js"
import { endSignInsOf } from "../sessions/Sessions.js"
import type { Refused } from "../shared/Refused.js"
import { refused } from "../shared/Refused.js"
import { Users } from "../users/Users.js"
import { codeMail, EmailCodes } from "./EmailCodes.js"
import { weakPasswordReason } from "./PasswordPolicy.js"

const noAccountMail = {
  subject: "Someone asked to reset a shiori password for this address",
  text: "Someone asked to reset the password of a shiori account with this address, but no account uses it.\n\n" +
    "If it was you, you may have registered with another address. Otherwise, ignore this mail.\n",
  html: "<p>Someone asked to reset the password of a shiori account with this address, but no account uses it.</p>" +
    "<p>If it was you, you may have registered with another address. Otherwise, ignore this mail.</p>"
}

const resetMail = {
  subject: "Your shiori password was reset",
  text: "The password of your shiori account was reset with a code mailed to this address, and every sign-in " +
    "was ended.\n\nIf you did not do this, reply to this mail at once.\n",
  html: "<p>The password of your shiori account was reset with a code mailed to this address, and every sign-in " +
    "was ended.</p><p>If you did not do this, reply to this mail at once.</p>"
}

export class Recovery extends Context.Service<Recovery>()("identity/Recovery", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const codes = yield* EmailCodes
    const mailer = yield* Mailer
    const passwords = yield* Passwords
    const users = yield* Users

    /**
     * Mails a recovery code to `email` when it has an account, a note that it has none otherwise;
     * answers the pending value either way. 429 10013 past the send limits.
     */
    const sendCode = (email: string, ip: string): Effect.Effect<{ readonly pending: string }, Refused> =>
      Effect.gen(function*() {
        yield* codes.admitSend("recovery", email, ip, null)
        return yield* Effect.gen(function*() {
          const existing = yield* users.findByEmail(email)
          const userId = Option.match(existing, { onNone: () => null, onSome: (user) => user.id })
          // A code either way, so both answers cost the same work; only an account's address sees it.
          const { code, pending } = yield* codes.issuePending("recovery", email, userId)
          yield* Option.match(existing, {
            onNone: () => mailer.send({ to: email, ...noAccountMail }),
            onSome: (user) => mailer.send({ to: user.email, ...codeMail(code, "reset your shiori password") })
          })
          return { pending }
        }).pipe(sql.withTransaction, Effect.orDie)
      }).pipe(Effect.withSpan("Recovery.sendCode"))

    /**
     * Sets a new password with the code mailed for `pending`, ends every session and refresh
     * family of the account and tells its owner. 400 10004 for a wrong code or an unknown or
     * expired pending value, 429 10012 once the code took its 5 tries, 400 10010 for a weak
     * password.
     */
    const reset = (input: {
      readonly pending: string
      readonly code: string
      readonly password: string
    }): Effect.Effect<void, Refused> =>
      Effect.gen(function*() {
        // What needs no account first, so a plainly weak password does not spend a try.
        if (weakPasswordReason(input.password, { email: "", name: "" }) !== undefined) {
          return yield* refused("WEAK_PASSWORD")
        }
        const verified = yield* codes.verify({ purpose: "recovery", pending: input.pending }, input.code, undefined)
        if (verified.userId === null) return yield* refused("VERIFICATION_CODE_INVALID")
        const user = yield* users.findById(verified.userId)
        if (Option.isNone(user) || user.value.email.toLowerCase() !== verified.email) {
          return yield* refused("VERIFICATION_CODE_INVALID")
        }
        if (weakPasswordReason(input.password, user.value) !== undefined) return yield* refused("WEAK_PASSWORD")
        const hash = yield* passwords.hash(input.password)
        yield* Effect.gen(function*() {
          yield* codes.markUsed(verified.id)
          // The code proves the address only while the account still has it.
          const changed = yield* sql`
            UPDATE users SET password_hash = ${hash}, password_changed_at = now(), email_verified = true,
                             updated_at = now()
            WHERE id = ${user.value.id} AND lower(email) = ${verified.email}
            RETURNING id
          `
          if (changed.length === 0) return yield* refused("VERIFICATION_CODE_INVALID")
          yield* sql`
            UPDATE email_codes SET consumed_at = now()
            WHERE purpose = 'recovery' AND user_id = ${user.value.id} AND consumed_at IS NULL
          `
          yield* endSignInsOf(sql, user.value.id, "password_reset")
          yield* mailer.send({ to: user.value.email, ...resetMail })
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
      }).pipe(Effect.withSpan("Recovery.reset"))

    return { sendCode, reset } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
