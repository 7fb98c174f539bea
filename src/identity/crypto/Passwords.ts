/**
 * Password hashing with scrypt (DECISIONS 11).
 *
 * The hash string carries its own parameters, `scrypt$N$r$p$salt$hash` (salt and hash base64url),
 * so the cost can be raised through `IDENTITY_SCRYPT_LOG_N` without invalidating stored hashes;
 * `needsRehash` tells sign-in when to upgrade one. N = 2^15, r = 8, p = 1 costs 32 MiB and about
 * 150 ms per hash on the 2-core development machine (2^14: about 55 ms).
 */
import { Config, Effect } from "effect"
import * as Crypto from "node:crypto"

const SALT_BYTES = 16
const HASH_BYTES = 32
const BLOCK_SIZE = 8
const PARALLELISM = 1

export interface ScryptParams {
  readonly N: number
  readonly r: number
  readonly p: number
}

export interface ParsedHash extends ScryptParams {
  readonly salt: Buffer
  readonly hash: Buffer
}

const isPowerOfTwo = (n: number) => Number.isInteger(n) && n > 1 && (n & (n - 1)) === 0

/**
 * Reads `scrypt$N$r$p$salt$hash`. Parameters outside sane bounds are refused, so a corrupted or
 * planted row cannot make one verification allocate gigabytes.
 */
export const parseHash = (stored: string): ParsedHash | undefined => {
  const parts = stored.split("$")
  if (parts.length !== 6 || parts[0] !== "scrypt") return undefined
  const [N, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])]
  if (!isPowerOfTwo(N) || N < 2 ** 10 || N > 2 ** 20) return undefined
  if (!Number.isInteger(r) || r < 1 || r > 32 || !Number.isInteger(p) || p < 1 || p > 16) return undefined
  const salt = Buffer.from(parts[4], "base64url")
  const hash = Buffer.from(parts[5], "base64url")
  if (salt.length < 16 || hash.length < 16) return undefined
  return { N, r, p, salt, hash }
}

export const formatHash = (params: ScryptParams, salt: Buffer, hash: Buffer): string =>
  `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString("base64url")}$${hash.toString("base64url")}`

/** Runs on libuv's thread pool, so the event loop stays free while a hash is computed. */
const scrypt = (password: string, salt: Buffer, keyLength: number, params: ScryptParams) =>
  Effect.async<Buffer>((resume) => {
    // Unicode passwords are compared in NFC so the same characters typed on different systems match.
    Crypto.scrypt(
      password.normalize("NFC"),
      salt,
      keyLength,
      { N: params.N, r: params.r, p: params.p, maxmem: 256 * params.N * params.r + 1024 * 1024 },
      (error, key) => resume(error ? Effect.die(error) : Effect.succeed(key))
    )
  })

export class Passwords extends Effect.Service<Passwords>()("identity/Passwords", {
  effect: Effect.gen(function*() {
    const logN = yield* Config.integer("IDENTITY_SCRYPT_LOG_N").pipe(
      Config.withDefault(15),
      Config.validate({
        message: "IDENTITY_SCRYPT_LOG_N must be between 10 and 20",
        validation: (n) => n >= 10 && n <= 20
      })
    )
    const params: ScryptParams = { N: 2 ** logN, r: BLOCK_SIZE, p: PARALLELISM }
    // Verified against when the account does not exist, so an unknown email costs the same time
    // as a wrong password and sign-in does not reveal which emails are registered.
    const dummy: ParsedHash = { ...params, salt: Buffer.alloc(SALT_BYTES), hash: Buffer.alloc(HASH_BYTES) }

    const hash = Effect.fn("Passwords.hash")(function*(password: string) {
      const salt = Crypto.randomBytes(SALT_BYTES)
      const key = yield* scrypt(password, salt, HASH_BYTES, params)
      return formatHash(params, salt, key)
    })

    /**
     * Whether `password` matches `stored`. `stored` null means "no such account": the work is done
     * anyway and the answer is false. A malformed stored hash never matches.
     */
    const verify = Effect.fn("Passwords.verify")(function*(password: string, stored: string | null) {
      const parsed = stored === null ? dummy : parseHash(stored)
      if (parsed === undefined) {
        yield* Effect.logWarning("stored password hash is malformed")
        return false
      }
      const key = yield* scrypt(password, parsed.salt, parsed.hash.length, parsed)
      return stored !== null && Crypto.timingSafeEqual(key, parsed.hash)
    })

    /** True when `stored` was made with other parameters than the configured ones. */
    const needsRehash = (stored: string): boolean => {
      const parsed = parseHash(stored)
      return parsed === undefined || parsed.N !== params.N || parsed.r !== params.r || parsed.p !== params.p
    }

    return { hash, verify, needsRehash, params } as const
  })
}) {}
