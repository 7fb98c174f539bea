/**
 * Identity values shared by tokens, userinfo and the account records.
 */
import { Schema } from "effect"
import { isStorable } from "../Text.js"
import { MaxLength } from "./Limits.js"

/** The integer user id: the key downstream tables should store. */
export const UserId = Schema.Int.check(Schema.isGreaterThan(0)).pipe(Schema.brand("UserId")).annotate({
  description: "Integer user id, the key downstream tables should store."
})
export type UserId = typeof UserId.Type

/** The UUID subject identifier of the same user. */
export const Subject = Schema.String.check(Schema.isUUID()).pipe(Schema.brand("Subject")).annotate({
  description: "UUID identifying the same user as `id`."
})
export type Subject = typeof Subject.Type

/** The five role names. `user` is implicit and never appears in a `roles` claim. */
export const Role = Schema.Literals(["user", "creator", "moderator", "admin", "ren"])
export type Role = typeof Role.Type

/** The roles that can be granted and therefore appear in `roles`; an ordinary user has `[]`. */
export const GrantedRole = Schema.Literals(["creator", "moderator", "admin", "ren"]).annotate({
  description: "A granted role. `user` is implicit, so clients must not test for it."
})
export type GrantedRole = typeof GrantedRole.Type

/** A role scoped to the site of the issuing client; `user`, `admin` and `ren` are reserved. */
export const SiteRole = Schema.String.annotate({
  // On the string itself: a predicate filter has no JSON Schema form, so annotations on it would
  // not reach the OpenAPI document.
  description: "A role name scoped to the site of the issuing client.",
  examples: ["editor"]
}).check(
  Schema.isPattern(/^[a-z][a-z0-9_-]{0,31}$/u),
  Schema.makeFilter((role: string) => role !== "user" && role !== "admin" && role !== "ren", {
    message: "site role names may not be user, admin or ren"
  })
)
export type SiteRole = typeof SiteRole.Type

/**
 * The WHATWG HTML Standard's "valid email address" (section 4.10.5.1.5, the grammar an
 * `<input type=email>` checks), as the regular expression the standard gives:
 *
 *   1*( atext / "." ) "@" label *( "." label )
 *   label = let-dig [ [ ldh-str ] let-dig ]   ; at most 63 characters, RFC 1034 section 3.5
 *
 * with `atext` of RFC 5322 section 3.2.3 (letters, digits and ``!#$%&'*+/=?^_`{|}~-``). ASCII only:
 * an internationalized domain is written in punycode (`xn--`), and no quoting, comment, space or
 * angle bracket gets through, so `<svg/onload=alert(1)>"'@evil.test` is refused. (The `u` flag changes
 * nothing for ASCII; it lets the pattern into the OpenAPI document, whose patterns are Unicode ones.)
 */
export const EMAIL_PATTERN =
  /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$/u

/** True when `value` is an address `Email` accepts: the grammar above, at most 254 characters (Limits.ts). */
export const isEmailAddress = (value: string): boolean => value.length <= MaxLength.email && EMAIL_PATTERN.test(value)

/**
 * An email address wherever one is taken: sign-in, registration and its code, an email change, the
 * operator's `user create` (text the database can store, schema/Text.ts, which the grammar implies).
 */
export const Email = Schema.String.annotate({
  // On the string itself: annotations on the last pattern would land in the `allOf` that the
  // OpenAPI document needs for a second pattern.
  description: "Email address: a \"valid email address\" of the WHATWG HTML Standard " +
    "(https://html.spec.whatwg.org/multipage/input.html#valid-e-mail-address), at most " +
    `${MaxLength.email} characters; ASCII only, an internationalized domain in punycode.`,
  examples: ["reader@example.com"]
}).check(
  Schema.isMaxLength(MaxLength.email),
  Schema.isPattern(EMAIL_PATTERN, { message: "a valid email address (WHATWG HTML)" }),
  isStorable
)
