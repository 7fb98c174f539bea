/**
 * Accounts: integer `id`, UUID `sub`, email, name, picture, granted roles (`user` is implicit),
 * site roles per site, banned flag; passwords hashed with scrypt (README.md, "Security").
 */
import { Context, Data, Effect, Layer, Option, Schema } from "effect"
import { SqlClient } from "effect/sql"
import * as Crypto from "node:crypto"
import { Email, GrantedRole, SiteRole } from "../../../schema/Identity/User.js"
import { Passwords } from "../crypto/Passwords.js"

export interface User {
  readonly id: number
  readonly sub: string
  readonly email: string
  /** OpenID Connect Core section 5.1 `email_verified`: someone vouched that the address is the user's. */
  readonly emailVerified: boolean
  readonly name: string
  readonly picture: string
  readonly passwordHash: string
  readonly roles: ReadonlyArray<GrantedRole>
  readonly banned: boolean
  readonly updatedAt: Date
}

export class UserInputError extends Data.TaggedError("UserInputError")<{ readonly message: string }> {}

const UserRow = Schema.Struct({
  id: Schema.Union([Schema.Number, Schema.NumberFromString]),
  sub: Schema.String,
  email: Schema.String,
  email_verified: Schema.Boolean,
  name: Schema.String,
  picture: Schema.String,
  password_hash: Schema.String,
  roles: Schema.Array(GrantedRole),
  banned: Schema.Boolean,
  updated_at: Schema.Date
})

const toUser = (row: typeof UserRow.Type): User => ({
  id: row.id,
  sub: row.sub,
  email: row.email,
  emailVerified: row.email_verified,
  name: row.name,
  picture: row.picture,
  passwordHash: row.password_hash,
  roles: row.roles,
  banned: row.banned,
  updatedAt: row.updated_at
})

/**
 * Statements that read a user next to something else (a redeemed code, a rotated refresh token, a
 * live family): `columns` selects what `UserRow` reads from `users u`, `siteRoles` the user's roles
 * on `site` as a `site_roles` column (`userId` names the column holding the user's id), and `first`
 * decodes such rows, `fields` being the rest, into the first row with its `User` and site roles.
 */
export const userAlongside = (sql: SqlClient.SqlClient) => ({
  columns: sql.literal(
    "u.id, u.sub, u.email, u.email_verified, u.name, u.picture, u.password_hash, u.roles, u.banned, u.updated_at"
  ),
  siteRoles: (userId: string, site: string | null) =>
    sql`ARRAY(SELECT r.role FROM user_site_roles r WHERE r.user_id = ${sql.literal(userId)} AND r.site = ${site}
              ORDER BY r.role) AS site_roles`,
  first: <Fields extends Schema.Struct.Fields>(fields: Fields) => {
    const decode = Schema.decodeUnknownEffect(
      Schema.Array(Schema.Struct({ ...fields, ...UserRow.fields, site_roles: Schema.Array(Schema.String) }))
    )
    return (rows: ReadonlyArray<unknown>) =>
      Effect.map(decode(rows), (decoded) =>
        Option.map(Option.fromNullishOr(decoded[0]), (row) => ({
          row,
          user: toUser(row as unknown as typeof UserRow.Type),
          siteRoles: (row as unknown as { readonly site_roles: ReadonlyArray<string> }).site_roles
        })))
  }
})

/** Passwords shorter than this are refused at creation (NIST SP 800-63B 5.1.1.2 minimum). */
export const MIN_PASSWORD_LENGTH = 8
const MAX_PASSWORD_LENGTH = 1024

export const isUserId = (id: string): boolean => /^[1-9][0-9]{0,17}$/.test(id)

/** A user as the service-to-service lookup answers them: no email, no password hash. */
export interface DirectoryEntry {
  readonly id: number
  readonly sub: string
  readonly name: string
  readonly picture: string
  readonly roles: ReadonlyArray<GrantedRole>
  /** Roles at the calling client's site; none for a client without a site. */
  readonly siteRoles: ReadonlyArray<string>
}

const DirectoryRow = Schema.Struct({
  id: Schema.Union([Schema.Number, Schema.NumberFromString]),
  sub: Schema.String,
  name: Schema.String,
  picture: Schema.String,
  roles: Schema.Array(GrantedRole),
  site_roles: Schema.Array(Schema.String)
})

const toDirectoryEntry = (row: typeof DirectoryRow.Type): DirectoryEntry => ({
  id: row.id,
  sub: row.sub,
  name: row.name,
  picture: row.picture,
  roles: row.roles,
  siteRoles: row.site_roles
})

/** `value` as a LIKE pattern matching itself literally (`\` is PostgreSQL's default escape). */
const likeLiteral = (value: string) => value.replace(/[\\%_]/g, (c) => `\\${c}`)

export class Users extends Context.Service<Users>()("identity/Users", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const passwords = yield* Passwords
    const decodeRows = Schema.decodeUnknownEffect(Schema.Array(UserRow))
    const one = <E, R>(query: Effect.Effect<ReadonlyArray<unknown>, E, R>) =>
      query.pipe(
        Effect.flatMap(decodeRows),
        Effect.map((rows) => Option.map(Option.fromNullishOr(rows[0]), toUser)),
        Effect.orDie
      )

    const create = Effect.fn("Users.create")(function*(input: {
      readonly email: string
      readonly password: string
      readonly name: string
      readonly roles: ReadonlyArray<string>
      /**
       * Whether the address counts as verified (`email_verified`). The operator CLI, which creates
       * accounts for addresses the operator vouches for, passes true (migrations/0012).
       */
      readonly emailVerified: boolean
    }) {
      const email = input.email.trim()
      if (!Schema.is(Email)(email)) return yield* new UserInputError({ message: `not an email address: ${email}` })
      if (input.password.length < MIN_PASSWORD_LENGTH || input.password.length > MAX_PASSWORD_LENGTH) {
        return yield* new UserInputError({
          message: `the password must be ${MIN_PASSWORD_LENGTH} to ${MAX_PASSWORD_LENGTH} characters`
        })
      }
      const roles = [...new Set(input.roles)]
      const bad = roles.filter((role) => !Schema.is(GrantedRole)(role))
      if (bad.length > 0) {
        return yield* new UserInputError({
          message: `unknown role ${bad.join(", ")}; roles are creator, moderator, admin, ren (user is implicit)`
        })
      }
      const passwordHash = yield* passwords.hash(input.password)
      const sub = Crypto.randomUUID()
      const rows = yield* sql<{ id: string }>`
        INSERT INTO users (sub, email, email_verified, name, password_hash, roles)
        VALUES (${sub}, ${email}, ${input.emailVerified}, ${input.name}, ${passwordHash}, ${roles}::text[])
        ON CONFLICT DO NOTHING
        RETURNING id
      `.pipe(Effect.orDie)
      if (rows.length === 0) return yield* new UserInputError({ message: `email already registered: ${email}` })
      return { id: Number(rows[0]!.id), sub }
    })

    const findById = (id: number) => one(sql`SELECT * FROM users WHERE id = ${id}`)
    const findByEmail = (email: string) => one(sql`SELECT * FROM users WHERE lower(email) = lower(${email.trim()})`)

    /** Upgrades a hash made with older scrypt parameters after a successful sign-in. */
    const rehashIfNeeded = (user: User, password: string) =>
      passwords.needsRehash(user.passwordHash)
        ? Effect.flatMap(passwords.hash(password), (hash) =>
          sql`UPDATE users SET password_hash = ${hash} WHERE id = ${user.id}`.pipe(Effect.orDie, Effect.asVoid))
        : Effect.void

    /**
     * Bans (or unbans) an account. A ban also ends every session and revokes every refresh family
     * of the user, so tokens already out stop working at userinfo and the catalog.
     */
    const setBanned = Effect.fn("Users.setBanned")(function*(id: number, banned: boolean) {
      return yield* Effect.gen(function*() {
        const rows = yield* sql`UPDATE users SET banned = ${banned}, updated_at = now() WHERE id = ${id} RETURNING id`
        if (rows.length === 0) return false
        if (banned) {
          yield* sql`UPDATE sessions SET ended_at = now() WHERE user_id = ${id} AND ended_at IS NULL`
          yield* sql`
            UPDATE refresh_families SET revoked_at = now(), revoked_reason = 'banned'
            WHERE user_id = ${id} AND revoked_at IS NULL
          `
        }
        return true
      }).pipe(sql.withTransaction, Effect.orDie)
    })

    const grantRole = Effect.fn("Users.grantRole")(function*(id: number, role: string, site: Option.Option<string>) {
      if (Option.isSome(site)) {
        if (!Schema.is(SiteRole)(role)) {
          return yield* new UserInputError({
            message: `site role must match ^[a-z][a-z0-9_-]{0,31}$ and not be user, admin or ren: ${role}`
          })
        }
        const rows = yield* sql`
          INSERT INTO user_site_roles (user_id, site, role)
          SELECT id, ${site.value}, ${role} FROM users WHERE id = ${id}
          ON CONFLICT DO NOTHING
          RETURNING user_id
        `.pipe(Effect.orDie)
        if (rows.length === 0 && Option.isNone(yield* findById(id))) return false
        yield* sql`UPDATE users SET updated_at = now() WHERE id = ${id}`.pipe(Effect.orDie)
        return true
      }
      if (!Schema.is(GrantedRole)(role)) {
        return yield* new UserInputError({ message: `role must be creator, moderator, admin or ren: ${role}` })
      }
      const rows = yield* sql`
        UPDATE users SET roles = CASE WHEN ${role} = ANY(roles) THEN roles ELSE array_append(roles, ${role}) END,
                         updated_at = now()
        WHERE id = ${id} RETURNING id
      `.pipe(Effect.orDie)
      return rows.length > 0
    })

    const revokeRole = Effect.fn("Users.revokeRole")(function*(id: number, role: string, site: Option.Option<string>) {
      if (Option.isSome(site)) {
        yield* sql`DELETE FROM user_site_roles WHERE user_id = ${id} AND site = ${site.value} AND role = ${role}`.pipe(
          Effect.orDie
        )
      }
      const rows = yield* (Option.isSome(site)
        ? sql`UPDATE users SET updated_at = now() WHERE id = ${id} RETURNING id`
        : sql`UPDATE users SET roles = array_remove(roles, ${role}), updated_at = now() WHERE id = ${id} RETURNING id`)
        .pipe(Effect.orDie)
      return rows.length > 0
    })

    /** The user's roles at `site`; none without a site (site roles are scoped to the issuing client's site). */
    const siteRoles = (id: number, site: string | null | undefined) =>
      site === null || site === undefined
        ? Effect.succeed<ReadonlyArray<string>>([])
        : sql<{ role: string }>`
            SELECT role FROM user_site_roles WHERE user_id = ${id} AND site = ${site} ORDER BY role
          `.pipe(Effect.map((rows) => rows.map((row) => row.role)), Effect.orDie)

    const decodeDirectory = Schema.decodeUnknownEffect(Schema.Array(DirectoryRow))
    // `r.site = NULL` is never true: a client without a site sees no site roles.
    const directoryColumns = (site: string | null) =>
      sql`u.id, u.sub, u.name, u.picture, u.roles,
          ARRAY(SELECT r.role FROM user_site_roles r WHERE r.user_id = u.id AND r.site = ${site}
                ORDER BY r.role) AS site_roles`

    /** The users with these ids (banned ones too), in no particular order, for `site`. */
    const directoryByIds = Effect.fn("Users.directoryByIds")(function*(
      ids: ReadonlyArray<number>,
      site: string | null
    ) {
      if (ids.length === 0) return []
      // As decimal text: numbers past 32 bits would bind as int8 and the others as int4, and the
      // driver sends an array of one element type only.
      const rows = yield* sql`SELECT ${directoryColumns(site)} FROM users u WHERE u.id = ANY(${
        ids.map(String)
      }::bigint[])`.pipe(
        Effect.flatMap(decodeDirectory),
        Effect.orDie
      )
      return rows.map(toDirectoryEntry)
    })

    /**
     * At most `limit` users (banned ones too) for `site`: the one whose email equals `query` first
     * (case-insensitive, `users_email_lower_key`), then those whose name starts with it
     * (case-insensitive, migrations/0015), by name and id.
     */
    const directorySearch = Effect.fn("Users.directorySearch")(function*(
      query: string,
      site: string | null,
      limit: number
    ) {
      const rows = yield* sql`
        SELECT ${directoryColumns(site)} FROM (
          (SELECT id, 0 AS rank FROM users WHERE lower(email) = lower(${query}) LIMIT 1)
          UNION ALL
          (SELECT id, 1 AS rank FROM users WHERE lower(name) LIKE lower(${likeLiteral(query)}) || '%'
           ORDER BY lower(name), id LIMIT ${limit})
        ) m
        JOIN users u ON u.id = m.id
        ORDER BY m.rank, lower(u.name), u.id
      `.pipe(Effect.flatMap(decodeDirectory), Effect.orDie)
      const seen = new Set<number>()
      return rows.map(toDirectoryEntry).filter((entry) => !seen.has(entry.id) && seen.add(entry.id)).slice(0, limit)
    })

    return {
      create,
      findById,
      findByEmail,
      rehashIfNeeded,
      setBanned,
      grantRole,
      revokeRole,
      siteRoles,
      directoryByIds,
      directorySearch
    } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make).pipe(Layer.provide([Passwords.layer]))
  static readonly layerWithoutDependencies = Layer.effect(this, this.make)
}
