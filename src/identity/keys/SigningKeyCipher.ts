/**
 * Encryption at rest of the signing keys' private JWKs (`signing_keys.private_jwk_encrypted`,
 * migrations/0011): AES-256-GCM under a key-encryption key (KEK), so a database dump or backup
 * alone cannot forge tokens.
 *
 * The KEK is `SIGNING_KEY_ENCRYPTION_KEY` when set (32 bytes, base64 or hex; anything else refuses
 * to start), else derived from `SHIORI_SECRET` with HKDF-SHA256 (RFC 5869) under its own info label,
 * so it is independent of every other key taken from that secret (cursors, CSRF tokens).
 *
 * A stored key is a self-describing envelope `{v, alg, kek, iv, tag, ct}`: `kek` names the KEK that
 * sealed it (an HMAC fingerprint, which reveals nothing about the key), so a changed secret is
 * reported as such instead of being mistaken for corruption, and rows can be re-sealed under a new
 * KEK. The row's `kid` is the additional authenticated data: a ciphertext copied into another row
 * does not decrypt there.
 *
 * A row sealed under the key derived from `SHIORI_SECRET` still opens after
 * `SIGNING_KEY_ENCRYPTION_KEY` is introduced, and `SigningKeys` re-seals it under the new KEK; so
 * does a row sealed under the key derived from a secret of `SHIORI_SECRET_PREVIOUS` after a rotation
 * (docs/deploying.md, "Rotating SHIORI_SECRET"). Any other KEK is an error, never a reason to make a
 * new key.
 */
import { Config, Context, Data, Effect, Layer, Option, Redacted, Result, Schema, SchemaIssue } from "effect"
import type * as Jose from "jose"
import * as Crypto from "node:crypto"
import { AppSecret } from "../../platform/Config.js"

const ENVELOPE_VERSION = 1
const ALG = "A256GCM"
const HKDF_INFO = "shiori signing-key encryption v1"
const FINGERPRINT_LABEL = "shiori signing-key kek id v1"
/** 96-bit nonces, the size GCM is specified for (NIST SP 800-38D section 5.2.1.1); random per seal. */
const IV_BYTES = 12
const TAG_BYTES = 16

/** The stored form of a private JWK. */
export const SealedKey = Schema.Struct({
  v: Schema.Literal(ENVELOPE_VERSION),
  alg: Schema.Literal(ALG),
  kek: Schema.String,
  iv: Schema.String,
  tag: Schema.String,
  ct: Schema.String
})
export type SealedKey = typeof SealedKey.Type

/** Start-up stops on this: the configured KEK cannot open a stored key. */
export class SigningKeysUndecryptable extends Data.TaggedError("SigningKeysUndecryptable")<{
  readonly kid: string
  readonly detail: string
}> {
  override readonly message =
    `cannot decrypt signing keys: SHIORI_SECRET or SIGNING_KEY_ENCRYPTION_KEY changed? (key ${this.kid}: ${this.detail}); ` +
    "after a change of SHIORI_SECRET, list the earlier one in SHIORI_SECRET_PREVIOUS"
}

/**
 * 32 bytes from 64 hex digits or from base64 / base64url (43 characters, or 44 with one `=`).
 * Nothing is trimmed or guessed: a key that is not exactly one of these is refused.
 */
export const parseEncryptionKey = (text: string): Result.Result<Buffer, string> => {
  if (/^[0-9a-fA-F]{64}$/.test(text)) return Result.succeed(Buffer.from(text, "hex"))
  if (/^[A-Za-z0-9+/_-]{43}=?$/.test(text)) {
    const bytes = Buffer.from(text.replace(/-/g, "+").replace(/_/g, "/"), "base64")
    if (bytes.length === 32) return Result.succeed(bytes)
  }
  return Result.fail(
    "SIGNING_KEY_ENCRYPTION_KEY must be 32 bytes written as 64 hex digits or as base64 " +
      "(e.g. `openssl rand -base64 32`)"
  )
}

const encryptionKeyConfig = Config.Redacted("SIGNING_KEY_ENCRYPTION_KEY").pipe(
  Config.mapEffect((value) =>
    parseEncryptionKey(Redacted.value(value)).pipe(
      // The key itself is not reported, only what is wrong with it.
      Result.mapError((message) =>
        new Config.ConfigError(new Schema.SchemaError(new SchemaIssue.InvalidValue({ message })))
      ),
      Effect.fromResult
    )
  ),
  Config.option
)

interface Kek {
  readonly id: string
  readonly key: Buffer
}

const kekOf = (key: Buffer): Kek => ({
  id: Crypto.createHmac("sha256", key).update(FINGERPRINT_LABEL).digest().subarray(0, 8).toString("hex"),
  key
})

/**
 * A 32-byte key derived from `SHIORI_SECRET` for the one use `info` names (RFC 5869, no salt: the
 * secret is the only input). Distinct labels give independent keys.
 */
export const deriveSecretKey = (secret: Redacted.Redacted<string>, info: string): Buffer =>
  Buffer.from(Crypto.hkdfSync("sha256", Redacted.value(secret), Buffer.alloc(0), info, 32))

/** The KEK derived from `SHIORI_SECRET`. */
export const derivedKek = (secret: Redacted.Redacted<string>): Buffer => deriveSecretKey(secret, HKDF_INFO)

const b64 = (bytes: Buffer) => bytes.toString("base64url")

/** The AES-256-GCM parts of an envelope, base64url. */
export interface GcmSealed {
  readonly iv: string
  readonly tag: string
  readonly ct: string
}

/** Encrypts `plaintext` under `key` with `aad` authenticated alongside; a fresh random IV each time. */
export const gcmSeal = (key: Buffer, aad: string, plaintext: string): GcmSealed => {
  const iv = Crypto.randomBytes(IV_BYTES)
  const cipher = Crypto.createCipheriv("aes-256-gcm", key, iv, { authTagLength: TAG_BYTES })
  cipher.setAAD(Buffer.from(aad, "utf8"))
  const ct = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
  return { iv: b64(iv), tag: b64(cipher.getAuthTag()), ct: b64(ct) }
}

/**
 * The plaintext of `sealed`, or undefined when GCM authentication fails: another key, a tampered
 * envelope, or a ciphertext moved from where its `aad` belongs.
 */
export const gcmOpen = (key: Buffer, aad: string, sealed: GcmSealed): string | undefined => {
  try {
    const decipher = Crypto.createDecipheriv("aes-256-gcm", key, Buffer.from(sealed.iv, "base64url"), {
      authTagLength: TAG_BYTES
    })
    decipher.setAAD(Buffer.from(aad, "utf8"))
    decipher.setAuthTag(Buffer.from(sealed.tag, "base64url"))
    return Buffer.concat([decipher.update(Buffer.from(sealed.ct, "base64url")), decipher.final()]).toString("utf8")
  } catch {
    return undefined
  }
}

/** Seal and open with `current`; `known` also opens rows sealed under an earlier KEK. */
export const makeCipher = (current: Buffer, previous: ReadonlyArray<Buffer> = []) => {
  const kek = kekOf(current)
  const known = new Map([...previous.map(kekOf), kek].map((k) => [k.id, k]))
  const decodeSealed = Schema.decodeUnknownResult(SealedKey)

  const seal = (kid: string, jwk: Jose.JWK): SealedKey => ({
    v: ENVELOPE_VERSION,
    alg: ALG,
    kek: kek.id,
    ...gcmSeal(kek.key, kid, JSON.stringify(jwk))
  })

  const open = (kid: string, stored: unknown): Effect.Effect<Jose.JWK, SigningKeysUndecryptable> => {
    const fail = (detail: string) => Effect.fail(new SigningKeysUndecryptable({ kid, detail }))
    const sealed = decodeSealed(stored)
    if (Result.isFailure(sealed)) return fail("not a version 1 A256GCM envelope")
    const by = known.get(sealed.success.kek)
    if (by === undefined) {
      return fail(`sealed under key-encryption key ${sealed.success.kek}, the configured one is ${kek.id}`)
    }
    const plain = gcmOpen(by.key, kid, sealed.success)
    // GCM authentication failed: another KEK with a colliding fingerprint, a tampered envelope, or
    // a ciphertext moved from another row (the kid is authenticated).
    if (plain === undefined) return fail("authentication failed")
    let jwk: unknown
    try {
      jwk = JSON.parse(plain)
    } catch {
      return fail("the decrypted value is not a private JWK")
    }
    if (typeof jwk !== "object" || jwk === null || typeof (jwk as Jose.JWK).d !== "string") {
      return fail("the decrypted value is not a private JWK")
    }
    return Effect.succeed(jwk as Jose.JWK)
  }

  return {
    /** The fingerprint stored with every envelope this cipher seals. */
    kekId: kek.id,
    seal,
    open
  } as const
}

export class SigningKeyCipher extends Context.Service<SigningKeyCipher>()("identity/SigningKeyCipher", {
  make: Effect.gen(function*() {
    const { previous, secret } = yield* AppSecret
    const configured = yield* encryptionKeyConfig
    const fromSecret = derivedKek(secret)
    // Rows sealed under a previous `SHIORI_SECRET` (`SHIORI_SECRET_PREVIOUS`) still open, and are
    // re-sealed under the current KEK at the next start or by `reencrypt-secrets`.
    const fromPrevious = previous.map(derivedKek)
    return Option.match(configured, {
      onNone: () => makeCipher(fromSecret, fromPrevious),
      // Rows sealed before the key was configured still open, and are re-sealed under it.
      onSome: (key) => makeCipher(key, [fromSecret, ...fromPrevious])
    })
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([AppSecret.layer]))
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
}
