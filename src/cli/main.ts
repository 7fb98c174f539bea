/**
 * The operator CLI: `npm run --silent cli -- <command> [--json]`.
 */
import { NodeRuntime, NodeServices } from "@effect/platform-node"
import { Console, Effect, Layer, Logger, References } from "effect"
import { CliError, Command, Flag } from "effect/cli"
import { ApiKeys } from "../catalog/auth/ApiKeys.js"
import { Merges } from "../catalog/merge/Merges.js"
import { Clients } from "../identity/clients/Clients.js"
import { UserStandingLive } from "../identity/users/Standing.js"
import { Users } from "../identity/users/Users.js"
import { DatabaseUrlLive, MigratorLive, SqlLive } from "../platform/Database.js"
import { MediaStore } from "../platform/MediaStore.js"
import { apiKeyCommand } from "./ApiKeyCommands.js"
import { claimCommand, claimsCommand } from "./ClaimCommands.js"
import { creatorCommand } from "./CreatorCommands.js"
import { clientCommand, keysCommand, roleCommand, userCommand } from "./IdentityCommands.js"
import { mergeCommand } from "./MergeCommand.js"
import { newsSourceCommand } from "./NewsSourceCommands.js"
import { emit } from "./Output.js"
import { reencryptSecretsCommand } from "./SecretCommands.js"
import { seedCommand } from "./SeedCommand.js"

const json = Flag.Boolean("json").pipe(
  Flag.withDescription("Print one JSON object on stdout"),
  Flag.withDefault(false)
)

const migrate = Command.make(
  "migrate",
  { json },
  (args) => emit(args.json, { migrated: true }, "Migrations are up to date.")
).pipe(
  Command.withDescription("Apply pending migrations (every command does this first)")
)

const cli = Command.make("shiori").pipe(
  Command.withDescription("shiori operator commands"),
  Command.withSubcommands([
    migrate,
    seedCommand,
    apiKeyCommand,
    userCommand,
    roleCommand,
    clientCommand,
    keysCommand,
    reencryptSecretsCommand,
    creatorCommand,
    mergeCommand,
    claimsCommand,
    claimCommand,
    newsSourceCommand
  ])
)

// The migrations may need the `MediaStore` (migrations/0030 moves avatars into it).
const DatabaseLive = MigratorLive.pipe(
  Layer.provideMerge(SqlLive),
  Layer.provideMerge(MediaStore.layer),
  Layer.provideMerge(DatabaseUrlLive)
)

// `UserStandingLive`: the catalog's claims (claim commands) read users' roles through src/platform/IdentityPort.ts.
const ServicesLive = Layer.mergeAll(ApiKeys.layer, Users.layer, Clients.layer, Merges.layer, UserStandingLive).pipe(
  Layer.provideMerge(DatabaseLive)
)

const StderrLogger = Logger.layer([Logger.withConsoleError(Logger.formatLogFmt)])

cli.pipe(
  Command.run({ version: "0.1.0" }),
  Effect.catchTag(
    "CliError",
    (e) => Console.error(`error: ${e.message}`).pipe(Effect.andThen(Effect.sync(() => process.exitCode = 1)))
  ),
  // effect/cli has already printed what was wrong with the arguments (with the help), or the help
  // of a command given without its subcommand.
  Effect.catchIf(CliError.isCliError, () => Effect.sync(() => process.exitCode = 2)),
  Effect.provide(ServicesLive),
  Effect.provide(NodeServices.layer),
  Effect.provide(Layer.merge(StderrLogger, Layer.succeed(References.MinimumLogLevel, "Warn"))),
  NodeRuntime.runMain
)
