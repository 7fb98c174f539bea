/**
 * Password hashing with scrypt.
 *
 * The hash string carries its own parameters, `scrypt$N$r$p$salt$hash` (salt and hash base64url),
 * so the cost can be raised through `IDENTITY_SCRYPT_LOG_N` without invalidating stored hashes;
 * `needsRehash` tells sign-in when to upgrade one (src/identity/users/Users.ts `rehashIfNeeded`,
 * after a correct password). The default is the OWASP Password Storage Cheat Sheet's minimum,
 * N = 2^17, r = 8, p = 1: 128 MiB and 300 to 450 ms per hash on the 2-core development machine.
 *
 * Hashes run on libuv's thread pool, which also serves file access, DNS lookups and compression.
 * At most `IDENTITY_SCRYPT_CONCURRENCY` (2) run at once per process, so a burst of sign-ins waits in
 * line as cheap fibers instead of holding 128 MiB each or taking every thread of the pool.
 */
import { Config, Context, Effect, Layer, Schema, Semaphore } from "effect"
import * as Crypto from "node:crypto"

/** N = 2^17: the OWASP Password Storage Cheat Sheet's minimum for scrypt (r = 8, p = 1). */
export const DEFAULT_LOG_N = 17
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

/** What scrypt allocates (128 * N * r bytes for its table, 128 * r * p for its blocks), plus slack. */
const memoryOf = (params: ScryptParams) => 128 * params.N * params.r + 128 * params.r * params.p + 1024 * 1024

/** Runs on libuv's thread pool, so the event loop stays free while a hash is computed. */
const scrypt = (password: string, salt: Buffer, keyLength: number, params: ScryptParams) =>
  Effect.callback<Buffer>((resume) => {
    // Unicode passwords are compared in NFC so the same characters typed on different systems match.
    Crypto.scrypt(
      password.normalize("NFC"),
      salt,
      keyLength,
      { N: params.N, r: params.r, p: params.p, maxmem: memoryOf(params) },
      (error, key) => resume(error ? Effect.die(error) : Effect.succeed(key))
    )
  })

export class Passwords extends Context.Service<Passwords>()("identity/Passwords", {
  make: Effect.gen(function*() {
    // Below 17 only for tests, which hash many passwords (test/identity/Passwords.test.ts checks the default).
    const logN = yield* Config.schema(
      Schema.Int.check(Schema.isBetween({ minimum: 10, maximum: 20 }, {
        message: "IDENTITY_SCRYPT_LOG_N must be between 10 and 20"
      })),
      "IDENTITY_SCRYPT_LOG_N"
    ).pipe(Config.withDefault(DEFAULT_LOG_N))
    const concurrency = yield* Config.schema(
      Schema.Int.check(Schema.isGreaterThanOrEqualTo(1, { message: "IDENTITY_SCRYPT_CONCURRENCY must be at least 1" })),
      "IDENTITY_SCRYPT_CONCURRENCY"
    ).pipe(Config.withDefault(2))
    const permits = yield* Semaphore.make(concurrency)
    const params: ScryptParams = { N: 2 ** logN, r: BLOCK_SIZE, p: PARALLELISM }
    const bounded = (password: string, salt: Buffer, keyLength: number, cost: ScryptParams) =>
      permits.withPermits(1)(scrypt(password, salt, keyLength, cost))
    // Verified against when the account does not exist, so an unknown email costs the same time
    // as a wrong password and sign-in does not reveal which emails are registered.
    const dummy: ParsedHash = { ...params, salt: Buffer.alloc(SALT_BYTES), hash: Buffer.alloc(HASH_BYTES) }

    const hash = Effect.fn("Passwords.hash")(function*(password: string) {
      const salt = Crypto.randomBytes(SALT_BYTES)
      const key = yield* bounded(password, salt, HASH_BYTES, params)
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
      const key = yield* bounded(password, parsed.salt, parsed.hash.length, parsed)
      return stored !== null && Crypto.timingSafeEqual(key, parsed.hash)
    })

    /** True when `stored` was made with other parameters than the configured ones. */
    const needsRehash = (stored: string): boolean => {
      const parsed = parseHash(stored)
      return parsed === undefined || parsed.N !== params.N || parsed.r !== params.r || parsed.p !== params.p
    }

    // `concurrency`: the pool threads hashing may hold at once, which image work leaves free
    // (src/identity/account/Avatars.ts).
    return { hash, verify, needsRehash, params, concurrency } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
