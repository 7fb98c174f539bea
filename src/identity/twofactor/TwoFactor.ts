/**
 * The second factor: TOTP (RFC 6238; HMAC-SHA-1, 6 digits, 30-second steps, what authenticator apps
 * read from an `otpauth://` URI) and ten single-use recovery codes (migrations/0018).
 *
 * - Set-up keeps a pending secret (shown once as base32, an `otpauth://` URI and a QR code) until a
 *   first valid code confirms it; then `users.totp_enabled_at` is set and the recovery codes are
 *   made. Secrets are stored AES-256-GCM encrypted under a key derived from `SHIORI_SECRET`, the
 *   user id authenticated alongside (src/identity/twofactor/TotpSecrets.ts). One sealed under a
 *   secret of `SHIORI_SECRET_PREVIOUS` still opens, and the transaction that accepts a code of it
 *   seals it anew under the current secret.
 * - A code of the current step, the one before (transmission delay, RFC 6238 section 5.2) or the
 *   one after (a phone clock slightly ahead) is accepted, and only for a step later than the last
 *   accepted one: a code works once, and an older code never after a newer one (section 5.2).
 * - Recovery codes are 80 random bits each, stored as SHA-256 (src/identity/crypto/Secrets.ts) and
 *   spent by a conditional UPDATE, so a code is used at most once even under concurrent requests.
 * - Every code check is throttled like a password (src/identity/auth/Login.ts): per (account,
 *   address) and by growing delays per account, never a lockout, with the sign-in policies of
 *   src/identity/shared/IdentityConfig.ts. A right code takes its count back.
 * - Turning the factor on or off and making new recovery codes need the account's current password
 *   besides the recent sign-in the handlers check (src/identity/auth/SignedIn.ts), so a session
 *   alone (a borrowed browser, a stolen token) cannot change how the account signs in. Password
 *   guesses share the bucket of a password change (src/identity/account/Account.ts): five, then
 *   one a minute, per account.
 * - Turning the factor on or off ends every other session of the account and revokes every refresh
 *   family, like a password change, cancels half-done sign-ins (src/identity/twofactor/PendingSignIn.ts),
 *   and mails the owner, all in the transaction of the change.
 */
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import * as OTPAuth from "otpauth"
import QRCode from "qrcode"
import { addressBucket } from "../../platform/ClientAddress.js"
import { AppSecret } from "../../platform/Config.js"
import type { Attempt, BucketPolicy } from "../../platform/RateLimiter.js"
import { RateLimiter } from "../../platform/RateLimiter.js"
import { Passwords } from "../crypto/Passwords.js"
import { constantTimeEquals, sha256Hex } from "../crypto/Secrets.js"
import { Mailer } from "../mail/Mailer.js"
import type { Session } from "../sessions/Sessions.js"
import { endSignInsOf } from "../sessions/Sessions.js"
import { IdentityConfig } from "../shared/IdentityConfig.js"
import type { Refused } from "../shared/Refused.js"
import { refused, retryAfter } from "../shared/Refused.js"
import type { User } from "../users/Users.js"
import type { Pending } from "./PendingSignIn.js"
import { PendingSignIn } from "./PendingSignIn.js"
import type { OpenedSecret } from "./TotpSecrets.js"
import { makeTotpCipher, SealedSecret } from "./TotpSecrets.js"

/**
 * The signed-in account a change is for and the session it is made from: an `EndUser`
 * (src/identity/auth/EndUsers.ts) as the handlers pass it. Named by what is read of it, because
 * sign-in (src/identity/auth/) asks this module for the second factor, not the other way round.
 */
interface SignedInAccount {
  readonly user: User
  readonly session: Session
}

/** RFC 6238 section 4 parameters every authenticator app supports. */
const ALGORITHM = "SHA1"
const DIGITS = 6
const PERIOD_SECONDS = 30
/** RFC 4226 section 4 asks for at least 128 bits and recommends 160. */
const SECRET_BYTES = 20
/** Steps accepted either side of the current one. */
const WINDOW = 1
/** A set-up not confirmed within this is forgotten. */
const PENDING_TTL_SECONDS = 15 * 60
export const RECOVERY_CODE_COUNT = 10
/** 10 bytes = 80 bits = 16 base32 characters, shown as `xxxx-xxxx-xxxx-xxxx`. */
const RECOVERY_CODE_BYTES = 10
/** The name authenticator apps show next to the account. */
const OTP_ISSUER = "shiori"
/**
 * Wrong current passwords per account: the bucket (`password-change:<id>`) and the policy of a
 * password change (src/identity/account/Account.ts), so guesses add up whichever change makes them.
 */
const currentPasswordBucket = (userId: number) => `password-change:${userId}`
const currentPasswordGuesses: BucketPolicy = { capacity: 5, refillPerSecond: 1 / 60 }

/** What a change of the factor is proven with: a code (or recovery code) and the current password. */
export interface ChangeProof {
  readonly code: string
  readonly password: string
}

const changeMail = (state: "on" | "off") => {
  const what = `Two-factor authentication was turned ${state} for your shiori account`
  return {
    subject: what,
    text: `${what}, and every other sign-in was ended.\n\nIf you did not do this, reply to this mail at once.\n`,
    html: `<p>${what}, and every other sign-in was ended.</p><p>If you did not do this, reply to this mail at once.</p>`
  }
}

/** The authentication methods of a sign-in (RFC 8176 section 2). */
export type Amr = ReadonlyArray<"pwd" | "otp">
export const PASSWORD_ONLY: Amr = ["pwd"]
export const PASSWORD_AND_OTP: Amr = ["pwd", "otp"]

const Id = Schema.Union([Schema.Number, Schema.NumberFromString])

const TotpRow = Schema.Struct({
  secret: Schema.NullOr(SealedSecret),
  pending_secret: Schema.NullOr(SealedSecret),
  pending_live: Schema.Boolean,
  last_step: Schema.NullOr(Id),
  confirmed_at: Schema.NullOr(Schema.Date)
})
type TotpRow = typeof TotpRow.Type

const StatusRow = Schema.Struct({
  confirmed_at: Schema.NullOr(Schema.Date),
  pending_live: Schema.Boolean,
  recovery_left: Id
})

export interface TwoFactorStatus {
  /** When the factor was confirmed; none without one. */
  readonly enabledAt: Option.Option<Date>
  /** A set-up is waiting for its first code. */
  readonly pending: boolean
  /** Unused recovery codes. */
  readonly recoveryCodesLeft: number
}

/** What set-up shows the user, once. */
export interface SetupInfo {
  /** The key in base32 (RFC 4648), for typing into an app. */
  readonly secret: string
  readonly otpauthUri: string
  /** The URI as a QR code, an SVG document fragment. */
  readonly qrSvg: string
}

/** What the user typed: a 6-digit TOTP, or else a recovery code. */
type Presented =
  | { readonly _tag: "Totp"; readonly code: string }
  | { readonly _tag: "Recovery"; readonly normalized: string | undefined }

/** A recovery code without its dashes and spaces, lower-case; undefined when it cannot be one. */
const recoveryForm = (code: string): string | undefined => {
  const normalized = code.replace(/[\s-]+/g, "").toLowerCase()
  return /^[a-z2-7]{16}$/.test(normalized) ? normalized : undefined
}

/** Apps show a code with a space in the middle; six digits are a TOTP, anything else a recovery code. */
const classify = (code: string): Presented => {
  const compact = code.replace(/\s+/g, "")
  return /^[0-9]{6}$/.test(compact)
    ? { _tag: "Totp", code: compact }
    : { _tag: "Recovery", normalized: recoveryForm(compact) }
}

const base32 = (bytes: Uint8Array) => new OTPAuth.Secret({ buffer: new Uint8Array(bytes).buffer }).base32

const newRecoveryCodes = () =>
  Array.from({ length: RECOVERY_CODE_COUNT }, () => {
    const code = base32(Crypto.randomBytes(RECOVERY_CODE_BYTES)).toLowerCase()
    return `${code.slice(0, 4)}-${code.slice(4, 8)}-${code.slice(8, 12)}-${code.slice(12, 16)}`
  })

const recoveryHash = (code: string) => sha256Hex(recoveryForm(code)!)

export class TwoFactor extends Context.Service<TwoFactor>()("identity/TwoFactor", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const config = yield* IdentityConfig
    const limiter = yield* RateLimiter
    const passwords = yield* Passwords
    const mailer = yield* Mailer
    const pendingSignIns = yield* PendingSignIn
    const { ring } = yield* AppSecret
    const cipher = makeTotpCipher(ring)
    const decodeTotp = Schema.decodeUnknownEffect(Schema.Array(TotpRow))
    const decodeStatus = Schema.decodeUnknownEffect(Schema.Array(StatusRow))

    const seal = cipher.seal
    const open = (userId: number, sealed: SealedSecret) =>
      Effect.gen(function*() {
        const opened = cipher.open(userId, sealed)
        if (Option.isNone(opened)) {
          yield* Effect.logWarning(
            "a TOTP secret does not decrypt: was SHIORI_SECRET changed without listing the earlier one in " +
              "SHIORI_SECRET_PREVIOUS?"
          ).pipe(Effect.annotateLogs({ userId }))
        }
        return opened
      })
    /** The stored form of an opened secret under the current key when it was opened under a previous one. */
    const resealed = (userId: number, opened: OpenedSecret) => opened.stale ? seal(userId, opened.secret) : null

    const setupInfo = (secret: string, label: string) =>
      Effect.gen(function*() {
        const totp = new OTPAuth.TOTP({
          issuer: OTP_ISSUER,
          label,
          algorithm: ALGORITHM,
          digits: DIGITS,
          period: PERIOD_SECONDS,
          secret: OTPAuth.Secret.fromBase32(secret)
        })
        const otpauthUri = totp.toString()
        const qrSvg = yield* Effect.promise(() =>
          QRCode.toString(otpauthUri, { type: "svg", errorCorrectionLevel: "M", margin: 2 })
        )
        return { secret, otpauthUri, qrSvg } satisfies SetupInfo
      })

    /**
     * The time step `code` belongs to, when it is a code of `secret` within the window and later
     * than `lastStep`. Every candidate is computed and compared in constant time.
     */
    const matchingStep = (secret: string, code: string, lastStep: number | null) =>
      Effect.map(Clock.currentTimeMillis, (now) => {
        const key = OTPAuth.Secret.fromBase32(secret)
        const current = Math.floor(now / 1000 / PERIOD_SECONDS)
        let matched: number | undefined
        for (let step = current - WINDOW; step <= current + WINDOW; step++) {
          const expected = OTPAuth.HOTP.generate({ secret: key, algorithm: ALGORITHM, digits: DIGITS, counter: step })
          if (constantTimeEquals(expected, code)) matched = step
        }
        return matched !== undefined && (lastStep === null || matched > lastStep) ? matched : undefined
      })

    const lockRow = (userId: number) =>
      sql`
        SELECT secret, pending_secret, pending_secret IS NOT NULL AND pending_expires_at > now() AS pending_live,
               last_step, confirmed_at
        FROM two_factor_totp WHERE user_id = ${userId}
        FOR UPDATE
      `.pipe(Effect.flatMap(decodeTotp), Effect.map((rows) => Option.fromNullishOr(rows[0])), Effect.orDie)

    const replaceRecoveryCodes = (userId: number) =>
      Effect.gen(function*() {
        const codes = newRecoveryCodes()
        yield* sql`DELETE FROM two_factor_recovery_codes WHERE user_id = ${userId}`
        yield* sql`
          INSERT INTO two_factor_recovery_codes (user_id, code_hash)
          SELECT ${userId}, unnest(${codes.map(recoveryHash)}::text[])
        `
        return codes
      }).pipe(Effect.orDie)

    /**
     * Throttles a code check like a password guess. `check` fails with `TWO_FACTOR_INVALID` for a
     * wrong code, which stays counted; anything else takes the attempt back.
     */
    const throttled = <A, R>(userId: number, ip: string, check: Effect.Effect<A, Refused, R>) =>
      Effect.gen(function*() {
        const attempt: Attempt = {
          bucket: `2fa:failures:${addressBucket(ip)}|${userId}`,
          bucketPolicy: config.rateLimits.loginFailures,
          backoff: `2fa:delay:${userId}`,
          backoffPolicy: config.rateLimits.loginAccount
        }
        const admitted = yield* limiter.admit(attempt)
        if (!admitted.allowed) return yield* refused("TOO_MANY_ATTEMPTS", retryAfter(admitted.retryAfterSeconds))
        return yield* check.pipe(
          Effect.tapErrorTag(
            "Refused",
            (failure) => failure.code === "TWO_FACTOR_INVALID" ? Effect.void : limiter.succeeded(attempt)
          ),
          Effect.tap(() => limiter.succeeded(attempt))
        )
      })

    /**
     * Inside a transaction holding the row: spends `code` (a TOTP of the confirmed secret, or an
     * unused recovery code), or fails with `TWO_FACTOR_INVALID`.
     */
    const spend = (userId: number, row: TotpRow, presented: Presented) =>
      Effect.gen(function*() {
        if (presented._tag === "Recovery") {
          if (presented.normalized === undefined) return yield* refused("TWO_FACTOR_INVALID")
          const used = yield* sql`
            UPDATE two_factor_recovery_codes SET used_at = now()
            WHERE user_id = ${userId} AND code_hash = ${sha256Hex(presented.normalized)} AND used_at IS NULL
            RETURNING 1 AS one
          `.pipe(Effect.orDie)
          if (used.length === 0) return yield* refused("TWO_FACTOR_INVALID")
          return
        }
        if (row.secret === null) return yield* refused("TWO_FACTOR_INVALID")
        const secret = yield* open(userId, row.secret)
        if (Option.isNone(secret)) return yield* refused("TWO_FACTOR_INVALID")
        const step = yield* matchingStep(secret.value.secret, presented.code, row.last_step)
        if (step === undefined) return yield* refused("TWO_FACTOR_INVALID")
        // A secret sealed under a previous SHIORI_SECRET is sealed anew with the accepted code.
        yield* sql`
          UPDATE two_factor_totp
          SET last_step = ${step}, secret = coalesce(${resealed(userId, secret.value)}::jsonb, secret),
              updated_at = now()
          WHERE user_id = ${userId}
        `.pipe(Effect.orDie)
      })

    /**
     * The account's current password, counted in the password change's bucket whether right or
     * wrong: 401 10011 when wrong, 429 10012 past the bucket.
     */
    const requirePassword = (endUser: SignedInAccount, password: string) =>
      Effect.gen(function*() {
        const guesses = yield* limiter.take(currentPasswordBucket(endUser.user.id), currentPasswordGuesses)
        if (!guesses.allowed) return yield* refused("TOO_MANY_ATTEMPTS", retryAfter(guesses.retryAfterSeconds))
        if (!(yield* passwords.verify(password, endUser.user.passwordHash))) return yield* refused("WRONG_PASSWORD")
      })

    /**
     * In the transaction of a change that turned the factor on or off: every other session ends,
     * every refresh family is revoked, half-done sign-ins are cancelled and the owner is told.
     */
    const afterChange = (endUser: SignedInAccount, state: "on" | "off") =>
      Effect.gen(function*() {
        yield* endSignInsOf(sql, endUser.user.id, "two_factor_changed", endUser.session.id)
        yield* pendingSignIns.cancel(endUser.user.id)
        yield* mailer.send({ to: endUser.user.email, ...changeMail(state) })
      })

    const status = Effect.fn("TwoFactor.status")(function*(userId: number) {
      const rows = yield* sql`
        SELECT t.confirmed_at, coalesce(t.pending_secret IS NOT NULL AND t.pending_expires_at > now(), false)
                 AS pending_live,
               (SELECT count(*) FROM two_factor_recovery_codes r WHERE r.user_id = u.id AND r.used_at IS NULL)
                 AS recovery_left
        FROM users u LEFT JOIN two_factor_totp t ON t.user_id = u.id
        WHERE u.id = ${userId}
      `.pipe(Effect.flatMap(decodeStatus), Effect.orDie)
      const row = rows[0]
      return {
        enabledAt: Option.fromNullishOr(row?.confirmed_at ?? null),
        pending: row?.pending_live ?? false,
        recoveryCodesLeft: row?.recovery_left ?? 0
      } satisfies TwoFactorStatus
    })

    const isEnabled = (userId: number) => Effect.map(status(userId), (s) => Option.isSome(s.enabledAt))

    /**
     * Starts (or restarts) a set-up with a new secret; refused with `CONFLICT` while a factor is on.
     * `label` names the account in the app (the email).
     */
    const setup = Effect.fn("TwoFactor.setup")(function*(userId: number, label: string) {
      const secret = base32(Crypto.randomBytes(SECRET_BYTES))
      // One statement: a row with a confirmed secret is left alone and answers nothing.
      const rows = yield* sql`
        INSERT INTO two_factor_totp (user_id, pending_secret, pending_expires_at)
        VALUES (${userId}, ${seal(userId, secret)}::jsonb, now() + make_interval(secs => ${PENDING_TTL_SECONDS}))
        ON CONFLICT (user_id) DO UPDATE
        SET pending_secret = EXCLUDED.pending_secret, pending_expires_at = EXCLUDED.pending_expires_at,
            updated_at = now()
        WHERE two_factor_totp.secret IS NULL
        RETURNING user_id
      `.pipe(Effect.orDie)
      if (rows.length === 0) return yield* refused("CONFLICT")
      return yield* setupInfo(secret, label)
    })

    /** The set-up under way, shown again (the set-up page on reload), or a new one. */
    const currentSetup = Effect.fn("TwoFactor.currentSetup")(function*(userId: number, label: string) {
      const rows = yield* sql`
        SELECT secret, pending_secret, pending_secret IS NOT NULL AND pending_expires_at > now() AS pending_live,
               last_step, confirmed_at
        FROM two_factor_totp WHERE user_id = ${userId}
      `.pipe(Effect.flatMap(decodeTotp), Effect.orDie)
      const row = rows[0]
      if (row !== undefined && row.secret !== null) return yield* refused("CONFLICT")
      if (row !== undefined && row.pending_live && row.pending_secret !== null) {
        const secret = yield* open(userId, row.pending_secret)
        if (Option.isSome(secret)) return yield* setupInfo(secret.value.secret, label)
      }
      return yield* setup(userId, label)
    })

    /**
     * Confirms the pending secret with a first code, after the current password: the factor is on,
     * every other sign-in ended; answers the recovery codes.
     */
    const enable = Effect.fn("TwoFactor.enable")(function*(endUser: SignedInAccount, proof: ChangeProof, ip: string) {
      const userId = endUser.user.id
      yield* requirePassword(endUser, proof.password)
      const before = yield* status(userId)
      if (Option.isSome(before.enabledAt) || !before.pending) return yield* refused("CONFLICT")
      const presented = classify(proof.code)
      return yield* throttled(
        userId,
        ip,
        Effect.gen(function*() {
          const row = yield* lockRow(userId)
          if (Option.isNone(row) || row.value.secret !== null || !row.value.pending_live) {
            return yield* refused("CONFLICT")
          }
          if (presented._tag !== "Totp" || row.value.pending_secret === null) {
            return yield* refused("TWO_FACTOR_INVALID")
          }
          const secret = yield* open(userId, row.value.pending_secret)
          if (Option.isNone(secret)) return yield* refused("TWO_FACTOR_INVALID")
          const step = yield* matchingStep(secret.value.secret, presented.code, null)
          if (step === undefined) return yield* refused("TWO_FACTOR_INVALID")
          yield* sql`
            UPDATE two_factor_totp
            SET secret = coalesce(${
            resealed(userId, secret.value)
          }::jsonb, pending_secret), pending_secret = NULL, pending_expires_at = NULL, last_step = ${step},
                confirmed_at = now(), updated_at = now()
            WHERE user_id = ${userId}
          `.pipe(Effect.orDie)
          yield* sql`UPDATE users SET totp_enabled_at = now() WHERE id = ${userId}`.pipe(Effect.orDie)
          const codes = yield* replaceRecoveryCodes(userId)
          yield* afterChange(endUser, "on")
          return codes
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
      )
    })

    /**
     * After the current password, spends a code of the enabled factor, then runs `then` in the same
     * transaction.
     */
    const withCode = <A>(
      endUser: SignedInAccount,
      proof: ChangeProof,
      ip: string,
      then: Effect.Effect<A, never, never>
    ) =>
      Effect.gen(function*() {
        const userId = endUser.user.id
        yield* requirePassword(endUser, proof.password)
        const before = yield* status(userId)
        if (Option.isNone(before.enabledAt)) return yield* refused("CONFLICT")
        const presented = classify(proof.code)
        return yield* throttled(
          userId,
          ip,
          Effect.gen(function*() {
            const row = yield* lockRow(userId)
            if (Option.isNone(row) || row.value.secret === null) return yield* refused("CONFLICT")
            yield* spend(userId, row.value, presented)
            return yield* then
          }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
        )
      })

    /**
     * Removes the factor and its recovery codes, after the current password and a current code or a
     * recovery code; every other sign-in ends.
     */
    const disable = Effect.fn("TwoFactor.disable")(function*(endUser: SignedInAccount, proof: ChangeProof, ip: string) {
      const userId = endUser.user.id
      return yield* withCode(
        endUser,
        proof,
        ip,
        Effect.gen(function*() {
          yield* sql`DELETE FROM two_factor_totp WHERE user_id = ${userId}`
          yield* sql`DELETE FROM two_factor_recovery_codes WHERE user_id = ${userId}`
          yield* sql`UPDATE users SET totp_enabled_at = NULL WHERE id = ${userId}`
          yield* afterChange(endUser, "off")
        }).pipe(Effect.orDie)
      )
    })

    /**
     * Ten new recovery codes in place of the old ones, after the current password and a current
     * code or a recovery code.
     */
    const regenerateRecoveryCodes = Effect.fn("TwoFactor.regenerateRecoveryCodes")(
      function*(endUser: SignedInAccount, proof: ChangeProof, ip: string) {
        return yield* withCode(endUser, proof, ip, replaceRecoveryCodes(endUser.user.id))
      }
    )

    /**
     * The second step of a sign-in whose password was right: the methods of the sign-in, `pwd`
     * alone without a factor; with one, `TWO_FACTOR_REQUIRED` when no code came, else the code is
     * spent (`TWO_FACTOR_INVALID` when wrong or used).
     *
     * `pending`: the sign-in page's half-done sign-in this step completes. It is spent in the
     * transaction that spends the code; when it was already spent or cancelled, nothing is spent and
     * the step is refused with `TOKEN_INVALID` (the sign-in starts again), which is not counted as a
     * wrong code.
     */
    const verifySignIn = Effect.fn("TwoFactor.verifySignIn")(function*(userId: number, input: {
      readonly otp?: string | undefined
      readonly recoveryCode?: string | undefined
      readonly ip: string
      readonly pending?: Pending | undefined
    }) {
      const claim = input.pending === undefined
        ? Effect.void
        : Effect.flatMap(
          pendingSignIns.consume(input.pending),
          (spent) => spent ? Effect.void : refused("TOKEN_INVALID")
        )
      // The factor may have been removed since the password step: the password alone signs in.
      if (!(yield* isEnabled(userId))) return yield* Effect.as(claim, PASSWORD_ONLY)
      const code = input.otp ?? input.recoveryCode
      if (code === undefined || code.trim() === "") return yield* refused("TWO_FACTOR_REQUIRED")
      // Each field is read as what it names: a recovery code sent as `otp` is simply wrong.
      const presented: Presented = input.otp !== undefined
        ? { _tag: "Totp", code: input.otp.replace(/\s+/g, "") }
        : { _tag: "Recovery", normalized: recoveryForm(code) }
      yield* throttled(
        userId,
        input.ip,
        Effect.gen(function*() {
          const row = yield* lockRow(userId)
          if (Option.isNone(row) || row.value.secret === null) return yield* refused("TWO_FACTOR_INVALID")
          yield* spend(userId, row.value, presented)
          // After the code: a wrong code leaves the half-done sign-in usable for the right one.
          yield* claim
        }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die))
      )
      return PASSWORD_AND_OTP
    })

    return {
      status,
      isEnabled,
      setup,
      currentSetup,
      enable,
      disable,
      regenerateRecoveryCodes,
      verifySignIn
    } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
