/**
 * Scope strings (RFC 6749 section 3.3) and the scope rules of userinfo (`userInfoFor`).
 */
import { Scopes as CatalogScopes } from "../../../schema/Annotations.js"
import { GrantedRole, Subject, UserId } from "../../../schema/Identity/User.js"
import { UserInfo } from "../../../schema/Identity/UserInfo.js"

/** The OpenID Connect scopes (OIDC Core section 5.4, 11). */
export const OIDC_SCOPES = ["openid", "profile", "email", "offline_access"] as const

/**
 * The scopes this provider knows; an authorize request with any other is `invalid_scope`. The
 * catalog scopes (docs/api-contract.md, "Credentials, scopes and the content limit") are OAuth
 * scopes of the same name: a user token granted `catalog:read` may read the catalog on the user's
 * behalf, and nothing else maps to a catalog scope.
 */
export const SUPPORTED_SCOPES = [...OIDC_SCOPES, ...CatalogScopes] as const

/** What each scope lets a client do, as the consent page says it. */
export const SCOPE_DESCRIPTIONS: Record<(typeof SUPPORTED_SCOPES)[number], string> = {
  openid: "Sign you in with your shiori account.",
  profile: "See your name and avatar.",
  email: "See your email address.",
  offline_access: "Stay connected while you are away (refresh tokens).",
  "catalog:read": "Read the catalog on your behalf.",
  "catalog:write": "Propose and amend catalog edits on your behalf.",
  "claims:write": "Claim works for a site on your behalf.",
  moderation: "Use your moderator rights (decide claims and proposals).",
  "media:write": "Upload images on your behalf.",
  "votes:write": "Vote on covers on your behalf.",
  "news:write": "Submit news items on your behalf.",
  "playtimes:write": "Report your playtimes."
}

export const isSupportedScope = (scope: string): scope is (typeof SUPPORTED_SCOPES)[number] =>
  (SUPPORTED_SCOPES as ReadonlyArray<string>).includes(scope)

/**
 * What an empty scope releases: userinfo answers `name`, `picture` and `email` for a token with an
 * empty scope (`userInfoFor` below), which is what `profile` and `email` release (OIDC Core section
 * 5.4). An authorization request without a scope is therefore handled as a request for these
 * (RFC 6749 section 3.3 lets the server apply a pre-defined default), so the consent page shows
 * them, consent is compared against them, and the client's allowed scopes must include them.
 */
export const EMPTY_SCOPE_IMPLIES = ["profile", "email"] as const

/** The scopes a request releases: its own, or what the empty scope implies. */
export const effectiveScopes = (scopes: ReadonlyArray<string>): ReadonlyArray<string> =>
  scopes.length === 0 ? EMPTY_SCOPE_IMPLIES : scopes

/**
 * The scopes a client may request unless an operator registered it with others (`client create
 * --scope`): signing in, the profile, refresh tokens and reading the catalog. The catalog's write
 * scopes and `moderation` act for the user and need an explicit grant.
 */
export const DEFAULT_CLIENT_SCOPES = ["openid", "profile", "email", "offline_access", "catalog:read"] as const

/**
 * Scopes a public client (RFC 6749 section 2.1: no secret, so anyone can present its id) may never
 * hold: a moderator's rights must not be obtainable through a client that cannot authenticate.
 */
export const CONFIDENTIAL_ONLY_SCOPES = ["moderation"] as const

/** RFC 6749 section 3.3: `scope-token = 1*( %x21 / %x23-5B / %x5D-7E )`. */
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]+$/

/**
 * Splits a space-delimited scope string into distinct tokens in first-seen order; `undefined` and
 * "" are the empty scope. Answers `undefined` when a token is malformed.
 */
export const parseScope = (scope: string | undefined): ReadonlyArray<string> | undefined => {
  if (scope === undefined || scope === "") return []
  const tokens = scope.split(" ")
  if (tokens.some((token) => !SCOPE_TOKEN.test(token))) return undefined
  return [...new Set(tokens)]
}

export const formatScope = (scopes: ReadonlyArray<string>): string => scopes.join(" ")

/** Whether every scope of `requested` is in `granted` (consent reuse; refresh narrowing, RFC 6749 section 6). */
export const isSubset = (requested: ReadonlyArray<string>, granted: ReadonlyArray<string>): boolean => {
  const set = new Set(granted)
  return requested.every((scope) => set.has(scope))
}

export interface UserInfoSource {
  readonly id: number
  readonly sub: string
  readonly name: string
  readonly email: string
  readonly emailVerified: boolean
  readonly picture: string
  readonly roles: ReadonlyArray<GrantedRole>
  readonly updatedAt: Date
}

/**
 * Userinfo claims: `id`, `sub`, `roles`, `updated_at` always; `name` and `picture` with scope
 * `profile` or an empty scope; `email` and `email_verified` (OIDC Core section 5.1) with scope
 * `email` or an empty scope; `site_roles` (already scoped to the token's site by the caller) omitted
 * when none are granted.
 */
export const userInfoFor = (
  user: UserInfoSource,
  scopes: ReadonlyArray<string>,
  siteRoles: ReadonlyArray<string>
): UserInfo => {
  const all = scopes.length === 0
  return new UserInfo({
    id: UserId.make(user.id),
    sub: Subject.make(user.sub),
    ...(all || scopes.includes("profile") ? { name: user.name, picture: user.picture } : {}),
    ...(all || scopes.includes("email") ? { email: user.email, email_verified: user.emailVerified } : {}),
    roles: user.roles,
    ...(siteRoles.length > 0 ? { site_roles: siteRoles } : {}),
    updated_at: Math.floor(user.updatedAt.getTime() / 1000)
  })
}
