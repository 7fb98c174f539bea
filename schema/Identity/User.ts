/**
 * Identity values shared by tokens, userinfo and the account records.
 */
import { Schema } from "effect"

/** The integer user id: the key downstream tables should store. */
export const UserId = Schema.Int.pipe(
  Schema.positive(),
  Schema.brand("UserId"),
  Schema.annotate({ description: "Integer user id, the key downstream tables should store." })
)
export type UserId = typeof UserId.Type

/** The UUID subject identifier of the same user. */
export const Subject = Schema.UUID.pipe(
  Schema.brand("Subject"),
  Schema.annotate({ description: "UUID identifying the same user as `id`." })
)
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
export const SiteRole = Schema.String.pipe(
  Schema.pattern(/^[a-z][a-z0-9_-]{0,31}$/),
  Schema.filter((role) => role !== "user" && role !== "admin" && role !== "ren", {
    message: () => "site role names may not be user, admin or ren"
  }),
  Schema.annotate({ description: "A role name scoped to the site of the issuing client.", examples: ["editor"] })
)
export type SiteRole = typeof SiteRole.Type

/**
 * An email address as accepted at sign-in and registration (RFC 5321 length limit; no NUL, which
 * PostgreSQL text cannot hold).
 */
export const Email = Schema.String.pipe(
  Schema.trimmed(),
  Schema.maxLength(254),
  Schema.pattern(/^[^\s@\u0000]+@[^\s@\u0000]+$/),
  Schema.annotate({ description: "Email address.", examples: ["reader@example.com"] })
)
