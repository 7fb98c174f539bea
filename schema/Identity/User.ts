/**
 * Identity values shared by tokens, userinfo and the account records.
 */
import { Schema } from "effect"
import { isStorable } from "../Text.js"

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
 * An email address as accepted at sign-in and registration (RFC 5321 length limit; text the database
 * can store, schema/Text.ts).
 */
export const Email = Schema.String.annotate({
  // On the string itself: annotations on the last pattern would land in the `allOf` that the
  // OpenAPI document needs for a second pattern.
  description: "Email address.",
  examples: ["reader@example.com"]
}).check(
  Schema.isTrimmed(),
  Schema.isMaxLength(254),
  Schema.isPattern(/^[^\s@\u0000]+@[^\s@\u0000]+$/u),
  isStorable
)
