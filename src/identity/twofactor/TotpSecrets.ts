/**
 * TOTP secrets at rest (`two_factor_totp.secret` and `.pending_secret`, migrations/0018): AES-256-GCM
 * (src/identity/keys/SigningKeyCipher.ts helpers) under a key derived from `SHIORI_SECRET`, the user
 * id authenticated alongside, so a ciphertext copied into another user's row does not open.
 *
 * A secret is sealed under the key of the current `SHIORI_SECRET` and opened under any key of the
 * ring (src/platform/Config.ts, `AppSecret`): one sealed before a rotation opens under the key of its
 * `SHIORI_SECRET_PREVIOUS` entry and is reported `stale`, so the sign-in or confirmation that read it
 * seals it anew under the current key (src/identity/twofactor/TwoFactor.ts); `reencryptTotpSecrets`
 * does so for every row (docs/deploying.md, "Rotating SHIORI_SECRET").
 */
import { Effect, Option, type Redacted, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { deriveSecretKey, gcmOpen, gcmSeal } from "../keys/SigningKeyCipher.js"

const HKDF_INFO = "shiori totp-secret encryption v1"

export const SealedSecret = Schema.Struct({
  v: Schema.Literal(1),
  alg: Schema.Literal("A256GCM"),
  iv: Schema.String,
  tag: Schema.String,
  ct: Schema.String
})
export type SealedSecret = typeof SealedSecret.Type

/** A secret opened: its base32 text, and whether it was sealed under a previous key of the ring. */
export interface OpenedSecret {
  readonly secret: string
  readonly stale: boolean
}

/** Seals under the first secret of `ring`; opens under any. */
export const makeTotpCipher = (ring: ReadonlyArray<Redacted.Redacted<string>>) => {
  const keys = ring.map((secret) => deriveSecretKey(secret, HKDF_INFO))

  /** The stored (jsonb) form of `secret` for `userId`, under the current key. */
  const seal = (userId: number, secret: string): string =>
    JSON.stringify({ v: 1, alg: "A256GCM", ...gcmSeal(keys[0]!, String(userId), secret) })

  /** The secret, when a key of the ring opens it: another key, tampering or another row's ciphertext do not. */
  const open = (userId: number, sealed: SealedSecret): Option.Option<OpenedSecret> => {
    for (const [index, key] of keys.entries()) {
      const secret = gcmOpen(key, String(userId), sealed)
      if (secret !== undefined) return Option.some({ secret, stale: index > 0 })
    }
    return Option.none()
  }

  return { seal, open } as const
}

export type TotpCipher = ReturnType<typeof makeTotpCipher>

const Id = Schema.Union([Schema.Number, Schema.NumberFromString])
const StoredRow = Schema.Struct({ user_id: Id, secret: Schema.Unknown, pending_secret: Schema.Unknown })
const decodeStored = Schema.decodeUnknownEffect(Schema.Array(StoredRow))
const decodeSealed = Schema.decodeUnknownOption(SealedSecret)

/** What `reencryptTotpSecrets` found, counted per stored secret (a confirmed one or a pending set-up). */
export interface TotpReencryption {
  /** Sealed under a previous key, now under the current one. */
  readonly reencrypted: number
  /** Already under the current key. */
  readonly current: number
  /** Opened by no key of the ring (or not an envelope): left as they are. */
  readonly unreadable: number
}

/**
 * Seals every stored TOTP secret that opens only under a previous key of `cipher`'s ring anew under
 * the current key, `batchSize` rows at a time in user id order. Each row is written only if it still
 * holds what was read, so a concurrent sign-in or set-up is never overwritten, and running it again
 * changes nothing.
 */
export const reencryptTotpSecrets = (cipher: TotpCipher, batchSize = 500) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const counts = { reencrypted: 0, current: 0, unreadable: 0 }
    let after = 0
    while (true) {
      const rows = yield* sql`
        SELECT user_id, secret, pending_secret FROM two_factor_totp
        WHERE user_id > ${after}
        ORDER BY user_id
        LIMIT ${batchSize}
      `.pipe(Effect.flatMap(decodeStored))
      for (const row of rows) {
        const userId = row.user_id
        for (const column of ["secret", "pending_secret"] as const) {
          const stored = row[column]
          if (stored === null) continue
          const opened = Option.flatMap(decodeSealed(stored), (sealed) => cipher.open(userId, sealed))
          if (Option.isNone(opened)) {
            counts.unreadable++
            continue
          }
          if (!opened.value.stale) {
            counts.current++
            continue
          }
          const fresh = cipher.seal(userId, opened.value.secret)
          const written = yield* sql`
            UPDATE two_factor_totp SET ${sql(column)} = ${fresh}::jsonb
            WHERE user_id = ${userId} AND ${sql(column)} = ${JSON.stringify(stored)}::jsonb
            RETURNING user_id
          `
          if (written.length > 0) counts.reencrypted++
        }
      }
      if (rows.length < batchSize) break
      after = rows[rows.length - 1]!.user_id
    }
    return counts satisfies TotpReencryption
  }).pipe(Effect.catchTags({ SqlError: Effect.die, SchemaError: Effect.die }))
