import { Effect, Option, Redacted } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { ApiKeys } from "../catalog/auth/ApiKeys.js"
import { emit, fail } from "./Output.js"
import { requireSiteForWrites } from "./WriteScopes.js"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print one JSON object on stdout"), Flag.withDefault(false))

const create = Command.make("create", {
  site: Flag.String("site").pipe(
    Flag.optional,
    Flag.withDescription("The site the key acts for (^[a-z][a-z0-9_]*$); required")
  ),
  scopes: Flag.String("scopes").pipe(
    Flag.withDescription("Comma-separated scopes, e.g. catalog:read,claims:write")
  ),
  contentLimit: Flag.Literals("content-limit", ["sfw", "nsfw"]).pipe(Flag.withDefault("sfw")),
  user: Flag.Int("user").pipe(Flag.optional, Flag.withDescription("Identity user id the key acts for")),
  json
}, (args) =>
  Effect.gen(function*() {
    const keys = yield* ApiKeys
    const scopes = args.scopes.split(",").map((s) => s.trim()).filter((s) => s !== "")
    yield* requireSiteForWrites("an API key", scopes, args.site)
    if (Option.isNone(args.site)) return yield* fail("--site is required: every API key acts for a site")
    const created = yield* keys.create({
      site: args.site.value,
      scopes,
      contentLimit: args.contentLimit,
      userId: Option.getOrNull(args.user)
    }).pipe(Effect.catchTag("ApiKeyInputError", (e) => fail(e.message)))
    const key = Redacted.value(created.key)
    const { record } = created
    yield* emit(
      args.json,
      { key, id: record.id, site: record.site, scopes: record.scopes },
      `Created API key ${record.id} for site ${record.site} (scopes: ${record.scopes.join(", ")}; ` +
        `content limit: ${record.contentLimit}).\n\n  ${key}\n\nStore it now: it is shown only once.`
    )
  })).pipe(Command.withDescription("Create an API key; the key is printed once"))

const list = Command.make("list", { json }, (args) =>
  Effect.gen(function*() {
    const keys = yield* ApiKeys
    const records = yield* keys.list()
    const items = records.map((r) => ({
      id: r.id,
      prefix: `sk_${r.prefix}`,
      site: r.site,
      scopes: r.scopes,
      content_limit: r.contentLimit,
      user_id: r.userId,
      created_at: r.createdAt.toISOString(),
      revoked_at: r.revokedAt?.toISOString() ?? null
    }))
    const lines = items.map((i) =>
      `${i.id.padStart(4)}  ${i.prefix}…  ${i.site.padEnd(16)} ${i.content_limit}  ${i.scopes.join(",")}` +
      (i.revoked_at ? `  (revoked ${i.revoked_at})` : "")
    )
    yield* emit(args.json, { items }, items.length === 0 ? "No API keys." : lines.join("\n"))
  })).pipe(Command.withDescription("List API keys (never the secrets)"))

const revoke = Command.make("revoke", { id: Argument.String("id"), json }, (args) =>
  Effect.gen(function*() {
    const keys = yield* ApiKeys
    const revoked = yield* keys.revoke(args.id)
    if (Option.isNone(revoked)) return yield* fail(`No API key with id ${args.id}.`)
    yield* emit(args.json, { id: revoked.value.id, revoked: true }, `Revoked API key ${revoked.value.id}.`)
  })).pipe(Command.withDescription("Revoke an API key; servers stop accepting it at once"))

export const apiKeyCommand = Command.make("api-key").pipe(
  Command.withDescription("Manage catalog API keys"),
  Command.withSubcommands([create, list, revoke])
)
