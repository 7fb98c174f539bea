import { describe, expect, it } from "@effect/vitest"
import { makeDiscoveryDocument } from "../../src/identity/oauth/Discovery.js"
import { DEFAULT_ISSUER } from "../../src/identity/shared/IdentityConfig.js"
import { effectiveScopes, isSubset, parseScope, userInfoFor } from "../../src/identity/shared/Scopes.js"

const user = {
  id: 7,
  sub: "1b4e28ba-2fa1-4d3b-a3f5-ef19b5a7633b",
  name: "Rin",
  email: "rin@example.com",
  emailVerified: true,
  picture: "",
  roles: ["moderator"],
  updatedAt: new Date("2026-02-01T00:00:00Z")
} as const

describe("Scopes (RFC 6749 section 3.3)", () => {
  it("parses space-delimited scopes, dropping duplicates, and refuses malformed tokens", () => {
    expect(parseScope(undefined)).toEqual([])
    expect(parseScope("")).toEqual([])
    expect(parseScope("openid profile openid")).toEqual(["openid", "profile"])
    expect(parseScope("openid  profile")).toBeUndefined()
    expect(parseScope("open\"id")).toBeUndefined()
  })

  it("narrows but never widens (README, \"Flows\")", () => {
    expect(isSubset(["openid"], ["openid", "email"])).toBe(true)
    expect(isSubset(["openid", "profile"], ["openid", "email"])).toBe(false)
  })

  it("RFC 6749 3.3: an empty scope stands for what it releases (profile, email); consent for openid does not cover it", () => {
    expect(effectiveScopes([])).toEqual(["profile", "email"])
    expect(effectiveScopes(["openid"])).toEqual(["openid"])
    expect(isSubset(effectiveScopes([]), ["openid"])).toBe(false)
    expect(isSubset(effectiveScopes([]), ["openid", "profile", "email"])).toBe(true)
    // What the expansion stands for is exactly what userinfo releases for an empty scope.
    const released = (scopes: ReadonlyArray<string>) => Object.keys(userInfoFor(user, scopes, [])).sort()
    expect(released(effectiveScopes([]))).toEqual(released([]))
  })
})

describe("userinfo scope rules (README, \"Flows\")", () => {
  it("returns everything with an empty scope", () => {
    expect(userInfoFor(user, [], [])).toEqual({
      id: 7,
      sub: user.sub,
      name: "Rin",
      email: "rin@example.com",
      email_verified: true,
      picture: "",
      roles: ["moderator"],
      updated_at: 1769904000
    })
  })

  it("returns name and picture only with profile, email and email_verified only with email; id, sub, roles always", () => {
    expect(userInfoFor(user, ["openid"], [])).toEqual({
      id: 7,
      sub: user.sub,
      roles: ["moderator"],
      updated_at: 1769904000
    })
    expect(Object.keys(userInfoFor(user, ["openid", "profile"], []))).toEqual(
      ["id", "sub", "name", "picture", "roles", "updated_at"]
    )
    expect(Object.keys(userInfoFor(user, ["openid", "email"], []))).toEqual([
      "id",
      "sub",
      "email",
      "email_verified",
      "roles",
      "updated_at"
    ])
    // OIDC Core 5.1: email_verified says whether the address was vouched for.
    expect(userInfoFor({ ...user, emailVerified: false }, ["email"], []).email_verified).toBe(false)
  })

  it("includes site_roles only when some are granted", () => {
    expect(userInfoFor(user, ["openid"], ["editor"]).site_roles).toEqual(["editor"])
    expect("site_roles" in userInfoFor(user, ["openid"], [])).toBe(false)
  })
})

describe("discovery (docs/decisions.md, \"Identity: protocol\")", () => {
  it("uses the issuer byte-for-byte and advertises the JWKS at {issuer}/oauth/jwks (README, \"Identity provider\")", () => {
    const document = makeDiscoveryDocument(DEFAULT_ISSUER)
    expect(document.issuer).toBe("http://127.0.0.1:8081/api/v1")
    expect(document.jwks_uri).toBe("http://127.0.0.1:8081/api/v1/oauth/jwks")
    expect(document.code_challenge_methods_supported).toEqual(["S256", "plain"])
    expect(document.id_token_signing_alg_values_supported).toEqual(["RS256"])
  })

  it("OIDC Core 6.1 / 6.2 and Discovery 3: request objects are not supported, email_verified is a claim", () => {
    const document = makeDiscoveryDocument(DEFAULT_ISSUER)
    expect(document.request_parameter_supported).toBe(false)
    expect(document.request_uri_parameter_supported).toBe(false)
    expect(document.claims_supported).toContain("email_verified")
  })
})
