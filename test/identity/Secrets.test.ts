import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import {
  checkPkce,
  constantTimeEquals,
  isValidCodeChallenge,
  isValidCodeVerifier,
  matchesHash,
  s256Challenge,
  Secrets,
  sha256Hex
} from "../../src/identity/crypto/Secrets.js"

// RFC 7636 Appendix B.
const RFC7636_VERIFIER = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
const RFC7636_CHALLENGE = "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"

describe("Secrets", () => {
  it.effect("random tokens are 256-bit base64url (docs/decisions.md, \"Identity: tokens and sessions\") and codes are 64 hex (docs/decisions.md, \"Identity: protocol\")", () =>
    Effect.gen(function*() {
      const secrets = yield* Secrets
      const token = yield* secrets.token
      expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/)
      expect(Buffer.from(token, "base64url")).toHaveLength(32)
      const code = yield* secrets.authorizationCode
      expect(code).toMatch(/^[0-9a-f]{64}$/)
      expect(yield* secrets.token).not.toBe(token)
    }).pipe(Effect.provide(Secrets.layer)))

  it("stores secrets as SHA-256 hex and matches them back (FIPS 180-4 'abc' vector)", () => {
    expect(sha256Hex("abc")).toBe("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    expect(matchesHash("abc", sha256Hex("abc"))).toBe(true)
    expect(matchesHash("abd", sha256Hex("abc"))).toBe(false)
    expect(matchesHash("abc", "not-hex")).toBe(false)
  })

  it("compares any two strings in constant time without throwing on length (README, \"Security\")", () => {
    expect(constantTimeEquals("secret", "secret")).toBe(true)
    expect(constantTimeEquals("secret", "secret-but-longer")).toBe(false)
    expect(constantTimeEquals("", "")).toBe(true)
  })
})

describe("PKCE (RFC 7636)", () => {
  it("derives the S256 challenge of RFC 7636 Appendix B", () => {
    expect(s256Challenge(RFC7636_VERIFIER)).toBe(RFC7636_CHALLENGE)
    expect(checkPkce({ challenge: RFC7636_CHALLENGE, method: "S256" }, RFC7636_VERIFIER)).toBe("ok")
  })

  it("checks verifier syntax: 43..128 unreserved characters (RFC 7636 section 4.1)", () => {
    expect(isValidCodeVerifier("a".repeat(43))).toBe(true)
    expect(isValidCodeVerifier("a".repeat(128))).toBe(true)
    expect(isValidCodeVerifier("a".repeat(42))).toBe(false)
    expect(isValidCodeVerifier("a".repeat(129))).toBe(false)
    expect(isValidCodeVerifier("a".repeat(42) + "+")).toBe(false)
    expect(isValidCodeVerifier("-._~" + "A0".repeat(20))).toBe(true)
    expect(checkPkce({ challenge: RFC7636_CHALLENGE, method: "S256" }, "short")).toBe("verifier_malformed")
  })

  it("checks challenge syntax per method (RFC 7636 section 4.2)", () => {
    expect(isValidCodeChallenge(RFC7636_CHALLENGE, "S256")).toBe(true)
    expect(isValidCodeChallenge(RFC7636_CHALLENGE + "A", "S256")).toBe(false)
    expect(isValidCodeChallenge(RFC7636_VERIFIER, "plain")).toBe(true)
    expect(isValidCodeChallenge("too-short", "plain")).toBe(false)
  })

  it("rejects a wrong verifier (RFC 7636 section 4.6)", () => {
    expect(checkPkce({ challenge: RFC7636_CHALLENGE, method: "S256" }, "x".repeat(43))).toBe("verifier_mismatch")
  })

  it("applies the method bound to the code: an S256 challenge sent back as the verifier fails (docs/decisions.md, \"Identity: protocol\")", () => {
    expect(checkPkce({ challenge: RFC7636_CHALLENGE, method: "S256" }, RFC7636_CHALLENGE)).toBe("verifier_mismatch")
  })

  it("accepts plain only when plain was bound to the code (RFC 7636 section 4.2; docs/decisions.md, \"Identity: protocol\")", () => {
    expect(checkPkce({ challenge: RFC7636_VERIFIER, method: "plain" }, RFC7636_VERIFIER)).toBe("ok")
    expect(checkPkce({ challenge: RFC7636_VERIFIER, method: "plain" }, "y".repeat(43))).toBe("verifier_mismatch")
  })

  it("requires a verifier when a challenge was sent (downgrade by omission, RFC 9700 section 4.8.2)", () => {
    expect(checkPkce({ challenge: RFC7636_CHALLENGE, method: "S256" }, undefined)).toBe("verifier_missing")
  })

  it("refuses a verifier for a code issued without a challenge (docs/decisions.md, \"Identity: protocol\")", () => {
    expect(checkPkce(null, RFC7636_VERIFIER)).toBe("verifier_unexpected")
    expect(checkPkce(null, undefined)).toBe("ok")
  })
})
