import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Layer } from "effect"
import { parseHash, Passwords } from "../../src/identity/crypto/Passwords.js"

const settings = (env: Record<string, string>) => ConfigProvider.layer(ConfigProvider.fromEnv({ env }))

// Small costs keep the suite fast; the parameters travel in the hash string either way. Fresh: a
// `Passwords` built by an enclosing `Effect.provide` (with other settings) is not reused.
const withLogN = (logN: number) =>
  Layer.fresh(Passwords.layer.pipe(Layer.provide(settings({ IDENTITY_SCRYPT_LOG_N: String(logN) }))))

describe("Passwords (docs/decisions.md, \"Identity: tokens and sessions\")", () => {
  it.effect("hashes to scrypt$N$r$p$salt$hash and verifies the right password only", () =>
    Effect.gen(function*() {
      const passwords = yield* Passwords
      const stored = yield* passwords.hash("correct horse battery staple")
      expect(stored).toMatch(/^scrypt\$1024\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/)
      expect(yield* passwords.verify("correct horse battery staple", stored)).toBe(true)
      expect(yield* passwords.verify("correct horse battery stapl", stored)).toBe(false)
      expect(yield* passwords.verify("", stored)).toBe(false)
    }).pipe(Effect.provide(withLogN(10))))

  it.effect("salts every hash", () =>
    Effect.gen(function*() {
      const passwords = yield* Passwords
      expect(yield* passwords.hash("same")).not.toBe(yield* passwords.hash("same"))
    }).pipe(Effect.provide(withLogN(10))))

  it.effect("reads the parameters from the stored string, so raising the cost keeps old hashes valid", () =>
    Effect.gen(function*() {
      const old = yield* Effect.flatMap(Passwords, (p) => p.hash("pw")).pipe(Effect.provide(withLogN(10)))
      const passwords = yield* Passwords
      expect(passwords.params.N).toBe(2048)
      expect(yield* passwords.verify("pw", old)).toBe(true)
      expect(passwords.needsRehash(old)).toBe(true)
      expect(passwords.needsRehash(yield* passwords.hash("pw"))).toBe(false)
      expect(parseHash(old)).toMatchObject({ N: 1024, r: 8, p: 1 })
    }).pipe(Effect.provide(withLogN(11))))

  it.effect("compares Unicode passwords in NFC", () =>
    Effect.gen(function*() {
      const passwords = yield* Passwords
      const stored = yield* passwords.hash("caf\u00e9")
      expect(yield* passwords.verify("cafe\u0301", stored)).toBe(true)
    }).pipe(Effect.provide(withLogN(10))))

  it.effect("answers false for an unknown account after doing the same work", () =>
    Effect.gen(function*() {
      const passwords = yield* Passwords
      expect(yield* passwords.verify("anything", null)).toBe(false)
    }).pipe(Effect.provide(withLogN(10))))

  it.effect("never matches a malformed or out-of-bounds stored hash", () =>
    Effect.gen(function*() {
      const passwords = yield* Passwords
      const stored = yield* passwords.hash("pw")
      const parts = stored.split("$")
      expect(yield* passwords.verify("pw", "plaintext")).toBe(false)
      expect(yield* passwords.verify("pw", ["argon2", ...parts.slice(1)].join("$"))).toBe(false)
      expect(parseHash(["scrypt", String(2 ** 30), ...parts.slice(2)].join("$"))).toBeUndefined()
      expect(parseHash(["scrypt", "1000", ...parts.slice(2)].join("$"))).toBeUndefined()
    }).pipe(Effect.provide(withLogN(10))))

  it.effect("OWASP password storage: defaults to N = 2^17, r = 8, p = 1, and a new hash carries them", () =>
    Effect.gen(function*() {
      const passwords = yield* Passwords
      expect(passwords.params).toEqual({ N: 131072, r: 8, p: 1 })
      // One real hash at the default cost: 128 MiB fits the `maxmem` given to scrypt.
      const stored = yield* passwords.hash("correct horse battery staple")
      expect(parseHash(stored)!.N).toBeGreaterThanOrEqual(131072)
      expect(stored).toMatch(/^scrypt\$131072\$8\$1\$/)
      expect(yield* passwords.verify("correct horse battery staple", stored)).toBe(true)
    }).pipe(
      Effect.provide(Passwords.layer.pipe(Layer.provide(settings({}))))
    ))

  it.effect("IDENTITY_SCRYPT_CONCURRENCY=1: concurrent hashes wait their turn and all complete", () =>
    Effect.gen(function*() {
      const passwords = yield* Passwords
      const hashes = yield* Effect.all(Array.from({ length: 6 }, (_, i) => passwords.hash(`pw-${i}`)), {
        concurrency: "unbounded"
      })
      for (const [i, stored] of hashes.entries()) expect(yield* passwords.verify(`pw-${i}`, stored)).toBe(true)
    }).pipe(
      Effect.provide(Passwords.layer.pipe(
        Layer.provide(settings({ IDENTITY_SCRYPT_LOG_N: "10", IDENTITY_SCRYPT_CONCURRENCY: "1" }))
      ))
    ))
})
