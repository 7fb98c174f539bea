/**
 * Operator commands of the identity provider: accounts, roles, OAuth clients and
 * signing keys. Each prints one JSON object with `--json`.
 */
import { Effect, Option, Redacted } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { isBlankName } from "../../schema/Text.js"
import type { Client, ClientListing } from "../identity/clients/Clients.js"
import { Clients } from "../identity/clients/Clients.js"
import { SigningKeys } from "../identity/keys/SigningKeys.js"
import { DEFAULT_CLIENT_SCOPES } from "../identity/shared/Scopes.js"
import { isUserId, Users } from "../identity/users/Users.js"
import { emit, fail } from "./Output.js"
import { requireSiteForWrites } from "./WriteScopes.js"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print one JSON object on stdout"), Flag.withDefault(false))

const userIdArg = Argument.String("user-id").pipe(Argument.withDescription("The integer user id"))

const parseUserId = (raw: string) => isUserId(raw) ? Effect.succeed(Number(raw)) : fail(`not a user id: ${raw}`)

// ---------------------------------------------------------------------------------------------
// user
// ---------------------------------------------------------------------------------------------

const userCreate = Command.make("create", {
  email: Flag.String("email").pipe(Flag.withDescription(
    "Sign-in email (unique, case-insensitive): a valid email address as the WHATWG HTML Standard defines it"
  )),
  password: Flag.Redacted("password").pipe(Flag.withDescription("Initial password (8 to 1024 characters)")),
  name: Flag.String("name").pipe(Flag.withDescription("Display name")),
  role: Flag.String("role").pipe(
    Flag.atLeast(0),
    Flag.withDescription("A granted role: creator, moderator, admin or ren (repeatable; user is implicit)")
  ),
  json
}, (args) =>
  Effect.gen(function*() {
    const users = yield* Users
    if (isBlankName(args.name)) return yield* fail("--name must show something, not only whitespace")
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
  role: Argument.String("role").pipe(
    Argument.withDescription("creator, moderator, admin or ren; with --site a site role (not user, admin or ren)")
  ),
  site: Flag.String("site").pipe(Flag.optional, Flag.withDescription("Grant a site role at this site")),
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
  Command.withDescription("Manage roles: global roles and site roles"),
  Command.withSubcommands([roleGrant, roleRevoke])
)

// ---------------------------------------------------------------------------------------------
// client
// ---------------------------------------------------------------------------------------------

const clientIdOption = Flag.String("client-id").pipe(Flag.withDescription("Client id (^[A-Za-z0-9._~-]{1,128}$)"))

const scopeOption = Flag.String("scope").pipe(
  Flag.atLeast(0),
  Flag.withDescription(
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
  scopes: client.allowedScopes,
  name: client.name,
  logo_url: client.logoUrl,
  tagline: client.tagline,
  homepage_url: client.homepageUrl,
  display_order: client.displayOrder,
  listed: client.listed
})

/** The application directory's fields (GET /oauth/client-info, /oauth/ecosystem), on create and update. */
const listingOptions = {
  name: Flag.String("name").pipe(
    Flag.optional,
    Flag.withDescription("Name shown on the consent page and in the directory (1 to 128 characters)")
  ),
  logoUrl: Flag.String("logo-url").pipe(
    Flag.optional,
    Flag.withDescription("Logo: https (or http on 127.0.0.1/localhost), at most 2048 characters; \"\" clears")
  ),
  tagline: Flag.String("tagline").pipe(
    Flag.optional,
    Flag.withDescription("One line about the application (at most 200 characters)")
  ),
  homepageUrl: Flag.String("homepage-url").pipe(
    Flag.optional,
    Flag.withDescription("The application's homepage: https (or http on 127.0.0.1/localhost); \"\" clears")
  ),
  displayOrder: Flag.Int("display-order").pipe(
    Flag.optional,
    Flag.withDescription("Position in the directory (ascending, then client id; default 0)")
  ),
  listed: Flag.Boolean("listed").pipe(Flag.withDescription("Show it in the public directory"), Flag.withDefault(false)),
  unlisted: Flag.Boolean("unlisted").pipe(
    Flag.withDescription("Leave it out of the public directory"),
    Flag.withDefault(false)
  )
}

const listingOf = (args: {
  readonly name: Option.Option<string>
  readonly logoUrl: Option.Option<string>
  readonly tagline: Option.Option<string>
  readonly homepageUrl: Option.Option<string>
  readonly displayOrder: Option.Option<number>
  readonly listed: boolean
  readonly unlisted: boolean
}) =>
  args.listed && args.unlisted
    ? fail("give --listed or --unlisted, not both")
    : Effect.succeed<ClientListing>({
      name: Option.getOrUndefined(args.name),
      logoUrl: Option.getOrUndefined(args.logoUrl),
      tagline: Option.getOrUndefined(args.tagline),
      homepageUrl: Option.getOrUndefined(args.homepageUrl),
      displayOrder: Option.getOrUndefined(args.displayOrder),
      listed: args.listed ? true : args.unlisted ? false : undefined
    })

const clientCreate = Command.make("create", {
  clientId: clientIdOption,
  secret: Flag.Redacted("secret").pipe(
    Flag.optional,
    Flag.withDescription("Client secret (24+ characters; stored hashed). Omit with --public")
  ),
  redirectUri: Flag.String("redirect-uri").pipe(
    Flag.atLeast(0),
    Flag.withDescription("Registered redirect URI, matched exactly (repeatable)")
  ),
  ...listingOptions,
  autoConsent: Flag.Boolean("auto-consent").pipe(
    Flag.withDescription("First-party: skip the consent page"),
    Flag.withDefault(false)
  ),
  site: Flag.String("site").pipe(
    Flag.optional,
    Flag.withDescription("The site its tokens act for: scopes site_roles and the catalog tenant")
  ),
  isPublic: Flag.Boolean("public").pipe(
    Flag.withDescription("Public client: no secret, PKCE required"),
    Flag.withDefault(false)
  ),
  refreshTtl: Flag.Int("refresh-ttl").pipe(
    Flag.optional,
    Flag.withDescription("Refresh token lifetime in seconds (default 90 days)")
  ),
  contentLimit: Flag.Literals("content-limit", ["sfw", "nsfw"]).pipe(
    Flag.withDefault("sfw"),
    Flag.withDescription("Catalog content gate of its users' tokens")
  ),
  scope: scopeOption,
  json
}, (args) =>
  Effect.gen(function*() {
    const clients = yield* Clients
    if (args.isPublic && Option.isSome(args.secret)) return yield* fail("a --public client has no --secret")
    if (!args.isPublic && Option.isNone(args.secret)) return yield* fail("--secret is required (or use --public)")
    yield* requireSiteForWrites("a client", args.scope, args.site)
    const listing = yield* listingOf(args)
    const client = yield* clients.create({
      clientId: args.clientId,
      name: listing.name ?? args.clientId,
      secret: Option.match(args.secret, { onNone: () => null, onSome: Redacted.value }),
      redirectUris: args.redirectUri,
      autoConsent: args.autoConsent,
      site: Option.getOrNull(args.site),
      logoUrl: listing.logoUrl ?? "",
      tagline: listing.tagline,
      homepageUrl: listing.homepageUrl,
      displayOrder: listing.displayOrder,
      listed: listing.listed,
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
  ...listingOptions,
  json
}, (args) =>
  Effect.gen(function*() {
    const clients = yield* Clients
    const listing = yield* listingOf(args)
    if (args.scope.length === 0 && Object.values(listing).every((value) => value === undefined)) {
      return yield* fail(
        "nothing to update: give --scope, --name, --logo-url, --tagline, --homepage-url, --display-order, " +
          "--listed or --unlisted"
      )
    }
    if (args.scope.length > 0) {
      // Only the scopes change here, so a client without a site cannot be given a write scope.
      const current = yield* clients.find(args.clientId)
      if (Option.isSome(current)) yield* requireSiteForWrites("a client", args.scope, current.value.site)
    }
    const client = yield* clients.update(args.clientId, {
      scopes: args.scope.length > 0 ? args.scope : undefined,
      listing
    }).pipe(Effect.catchTag("ClientInputError", (e) => fail(e.message)))
    yield* emit(
      args.json,
      clientJson(client),
      `Updated client ${client.clientId} (scopes: ${client.allowedScopes.join(" ")}; ` +
        `${client.listed ? `listed at ${client.displayOrder}` : "unlisted"}). Servers apply it within 30 seconds; ` +
        "a refresh issues only allowed scopes."
    )
  })).pipe(
    Command.withDescription(
      "Change a registered OAuth client: the scopes it may request (--scope replaces them) and its directory entry"
    )
  )

export const clientCommand = Command.make("client").pipe(
  Command.withDescription("Manage OAuth clients"),
  Command.withSubcommands([clientCreate, clientUpdate])
)

// ---------------------------------------------------------------------------------------------
// keys
// ---------------------------------------------------------------------------------------------

const keysRotate = Command.make("rotate", {
  grace: Flag.Int("grace").pipe(
    Flag.optional,
    Flag.withDescription("Seconds before the new key signs (default 120: every process and client sees it first)")
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
  }).pipe(Effect.provide(SigningKeys.layer))).pipe(
    Command.withDescription("Add a new RS256 signing key")
  )

export const keysCommand = Command.make("keys").pipe(
  Command.withDescription("Manage the identity provider's signing keys"),
  Command.withSubcommands([keysRotate])
)
