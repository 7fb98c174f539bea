/**
 * Operator commands of the identity provider (issue 4 item 1): accounts, roles, OAuth clients and
 * signing keys. Each prints one JSON object with `--json`.
 */
import { Args, Command, Options } from "@effect/cli"
import { Effect, Option, Redacted } from "effect"
import type { Client } from "../identity/clients/Clients.js"
import { Clients } from "../identity/clients/Clients.js"
import { SigningKeys } from "../identity/keys/SigningKeys.js"
import { DEFAULT_CLIENT_SCOPES } from "../identity/oauth/Scopes.js"
import { isUserId, Users } from "../identity/users/Users.js"
import { emit, fail } from "./Output.js"

const json = Options.boolean("json").pipe(Options.withDescription("Print one JSON object on stdout"))

const userIdArg = Args.text({ name: "user-id" }).pipe(Args.withDescription("The integer user id"))

const parseUserId = (raw: string) => isUserId(raw) ? Effect.succeed(Number(raw)) : fail(`not a user id: ${raw}`)

// ---------------------------------------------------------------------------------------------
// user
// ---------------------------------------------------------------------------------------------

const userCreate = Command.make("create", {
  email: Options.text("email").pipe(Options.withDescription("Sign-in email (unique, case-insensitive)")),
  password: Options.redacted("password").pipe(Options.withDescription("Initial password (8 to 1024 characters)")),
  name: Options.text("name").pipe(Options.withDescription("Display name")),
  role: Options.text("role").pipe(
    Options.repeated,
    Options.withDescription("A granted role: creator, moderator, admin or ren (repeatable; user is implicit)")
  ),
  json
}, (args) =>
  Effect.gen(function*() {
    const users = yield* Users
    const created = yield* users.create({
      email: args.email,
      password: Redacted.value(args.password),
      name: args.name,
      roles: args.role,
      // The operator vouches for the address of an account they create (`email_verified`,
      // migrations/0012).
      emailVerified: true
    }).pipe(Effect.catchTag("UserInputError", (e) => fail(e.message)))
    yield* emit(args.json, { id: created.id, sub: created.sub }, `Created user ${created.id} (sub ${created.sub}).`)
  })).pipe(Command.withDescription("Create an account"))

const setBanned = (banned: boolean) => (args: { readonly userId: string; readonly json: boolean }) =>
  Effect.gen(function*() {
    const users = yield* Users
    const id = yield* parseUserId(args.userId)
    if (!(yield* users.setBanned(id, banned))) return yield* fail(`No user with id ${id}.`)
    yield* emit(
      args.json,
      { id, banned },
      banned ? `Banned user ${id}; their sessions and refresh tokens are revoked.` : `Unbanned user ${id}.`
    )
  })

const userBan = Command.make("ban", { userId: userIdArg, json }, setBanned(true)).pipe(
  Command.withDescription("Ban an account: sign-in refused, sessions ended, refresh token families revoked")
)
const userUnban = Command.make("unban", { userId: userIdArg, json }, setBanned(false)).pipe(
  Command.withDescription("Lift a ban")
)

export const userCommand = Command.make("user").pipe(
  Command.withDescription("Manage identity accounts"),
  Command.withSubcommands([userCreate, userBan, userUnban])
)

// ---------------------------------------------------------------------------------------------
// role
// ---------------------------------------------------------------------------------------------

const roleOptions = {
  userId: userIdArg,
  role: Args.text({ name: "role" }).pipe(
    Args.withDescription("creator, moderator, admin or ren; with --site a site role (not user, admin or ren)")
  ),
  site: Options.text("site").pipe(Options.optional, Options.withDescription("Grant a site role at this site")),
  json
}

const roleChange = (grant: boolean) =>
(args: {
  readonly userId: string
  readonly role: string
  readonly site: Option.Option<string>
  readonly json: boolean
}) =>
  Effect.gen(function*() {
    const users = yield* Users
    const id = yield* parseUserId(args.userId)
    const changed =
      yield* (grant ? users.grantRole(id, args.role, args.site) : users.revokeRole(id, args.role, args.site))
        .pipe(Effect.catchTag("UserInputError", (e) => fail(e.message)))
    if (!changed) return yield* fail(`No user with id ${id}.`)
    const where = Option.match(args.site, { onNone: () => "", onSome: (site) => ` at site ${site}` })
    yield* emit(
      args.json,
      { id, role: args.role, site: Option.getOrNull(args.site), granted: grant },
      `${grant ? "Granted" : "Revoked"} ${args.role}${where} ${grant ? "to" : "from"} user ${id}. ` +
        "New tokens carry it; tokens already out keep their claims until they expire (15 minutes)."
    )
  })

const roleGrant = Command.make("grant", roleOptions, roleChange(true)).pipe(
  Command.withDescription("Grant a global role, or a site role with --site")
)
const roleRevoke = Command.make("revoke", roleOptions, roleChange(false)).pipe(
  Command.withDescription("Revoke a global role, or a site role with --site")
)

export const roleCommand = Command.make("role").pipe(
  Command.withDescription("Manage roles (SPEC 5): global roles and site roles"),
  Command.withSubcommands([roleGrant, roleRevoke])
)

// ---------------------------------------------------------------------------------------------
// client
// ---------------------------------------------------------------------------------------------

const clientIdOption = Options.text("client-id").pipe(Options.withDescription("Client id (^[A-Za-z0-9._~-]{1,128}$)"))

const scopeOption = Options.text("scope").pipe(
  Options.repeated,
  Options.withDescription(
    `A scope the client may request (repeatable; replaces the default ${DEFAULT_CLIENT_SCOPES.join(" ")}). ` +
      "Write scopes and moderation are granted only this way; a public client never gets moderation"
  )
)

const clientJson = (client: Client) => ({
  client_id: client.clientId,
  public: client.secretHash === null,
  redirect_uris: client.redirectUris,
  auto_consent: client.autoConsent,
  site: client.site,
  scopes: client.allowedScopes
})

const clientCreate = Command.make("create", {
  clientId: clientIdOption,
  secret: Options.redacted("secret").pipe(
    Options.optional,
    Options.withDescription("Client secret (24+ characters; stored hashed). Omit with --public")
  ),
  redirectUri: Options.text("redirect-uri").pipe(
    Options.repeated,
    Options.withDescription("Registered redirect URI, matched exactly (repeatable)")
  ),
  name: Options.text("name").pipe(Options.optional, Options.withDescription("Name shown on the consent page")),
  logoUrl: Options.text("logo-url").pipe(Options.optional, Options.withDescription("Logo shown on the consent page")),
  autoConsent: Options.boolean("auto-consent").pipe(Options.withDescription("First-party: skip the consent page")),
  site: Options.text("site").pipe(
    Options.optional,
    Options.withDescription("The site its tokens act for: scopes site_roles and the catalog tenant")
  ),
  isPublic: Options.boolean("public").pipe(Options.withDescription("Public client: no secret, PKCE required")),
  refreshTtl: Options.integer("refresh-ttl").pipe(
    Options.optional,
    Options.withDescription("Refresh token lifetime in seconds (default 90 days)")
  ),
  contentLimit: Options.choice("content-limit", ["sfw", "nsfw"]).pipe(
    Options.withDefault("sfw" as const),
    Options.withDescription("Catalog content gate of its users' tokens")
  ),
  scope: scopeOption,
  json
}, (args) =>
  Effect.gen(function*() {
    const clients = yield* Clients
    if (args.isPublic && Option.isSome(args.secret)) return yield* fail("a --public client has no --secret")
    if (!args.isPublic && Option.isNone(args.secret)) return yield* fail("--secret is required (or use --public)")
    const client = yield* clients.create({
      clientId: args.clientId,
      name: Option.getOrElse(args.name, () => args.clientId),
      secret: Option.match(args.secret, { onNone: () => null, onSome: Redacted.value }),
      redirectUris: args.redirectUri,
      autoConsent: args.autoConsent,
      site: Option.getOrNull(args.site),
      logoUrl: Option.getOrElse(args.logoUrl, () => ""),
      refreshTtlSeconds: Option.getOrNull(args.refreshTtl),
      contentLimit: args.contentLimit,
      allowedScopes: args.scope.length > 0 ? args.scope : undefined
    }).pipe(Effect.catchTag("ClientInputError", (e) => fail(e.message)))
    yield* emit(
      args.json,
      clientJson(client),
      `Created ${client.secretHash === null ? "public" : "confidential"} client ${client.clientId} ` +
        `(scopes: ${client.allowedScopes.join(" ")}).`
    )
  })).pipe(Command.withDescription("Register an OAuth client"))

const clientUpdate = Command.make("update", {
  clientId: clientIdOption,
  scope: scopeOption,
  json
}, (args) =>
  Effect.gen(function*() {
    const clients = yield* Clients
    if (args.scope.length === 0) return yield* fail("nothing to update: give the client's scopes with --scope")
    const client = yield* clients.updateScopes(args.clientId, args.scope).pipe(
      Effect.catchTag("ClientInputError", (e) => fail(e.message))
    )
    yield* emit(
      args.json,
      clientJson(client),
      `Client ${client.clientId} may now request: ${client.allowedScopes.join(" ")}. Servers apply it within ` +
        "30 seconds; a refresh issues only allowed scopes."
    )
  })).pipe(Command.withDescription("Change a registered OAuth client: the scopes it may request (--scope)"))

export const clientCommand = Command.make("client").pipe(
  Command.withDescription("Manage OAuth clients"),
  Command.withSubcommands([clientCreate, clientUpdate])
)

// ---------------------------------------------------------------------------------------------
// keys
// ---------------------------------------------------------------------------------------------

const keysRotate = Command.make("rotate", {
  grace: Options.integer("grace").pipe(
    Options.optional,
    Options.withDescription("Seconds before the new key signs (default 120: every process and client sees it first)")
  ),
  json
}, (args) =>
  Effect.gen(function*() {
    const keys = yield* SigningKeys
    const rotated = yield* keys.rotate(
      Option.match(args.grace, { onNone: () => undefined, onSome: (graceSeconds) => ({ graceSeconds }) })
    )
    yield* emit(
      args.json,
      { kid: rotated.kid, activates_at: rotated.activatesAt.toISOString() },
      `Added signing key ${rotated.kid}; it signs from ${rotated.activatesAt.toISOString()}. ` +
        "The old key stays in the JWKS until every token it signed has expired."
    )
  }).pipe(Effect.provide(SigningKeys.Default))).pipe(
    Command.withDescription("Add a new RS256 signing key (DECISIONS 13)")
  )

export const keysCommand = Command.make("keys").pipe(
  Command.withDescription("Manage the identity provider's signing keys"),
  Command.withSubcommands([keysRotate])
)
