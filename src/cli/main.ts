/**
 * The operator CLI: `npm run --silent cli -- <command> [--json]`.
 */
import { Command, Flag, CliError } from "effect/cli"
import { NodeServices, NodeRuntime } from "@effect/platform-node"
import { Console, Effect, Layer, Logger, LogLevel } from "effect"
import { ApiKeys } from "../catalog/auth/ApiKeys.js"
import { Merges } from "../catalog/merge/Merges.js"
import { Clients } from "../identity/clients/Clients.js"
import { Users } from "../identity/users/Users.js"
import { DatabaseUrlLive, MigratorLive, SqlLive } from "../platform/Database.js"
import { apiKeyCommand } from "./ApiKeyCommands.js"
import { claimCommand, claimsCommand } from "./ClaimCommands.js"
import { creatorCommand } from "./CreatorCommands.js"
import { clientCommand, keysCommand, roleCommand, userCommand } from "./IdentityCommands.js"
import { mergeCommand } from "./MergeCommand.js"
import { emit } from "./Output.js"
import { seedCommand } from "./SeedCommand.js"

const json = Options.boolean("json").pipe(Options.withDescription("Print one JSON object on stdout"))

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
    creatorCommand,
    mergeCommand,
    claimsCommand,
    claimCommand
  ])
)

const run = Command.run(cli, { name: "shiori", version: "0.1.0" })

const DatabaseLive = MigratorLive.pipe(Layer.provideMerge(SqlLive), Layer.provideMerge(DatabaseUrlLive))

const ServicesLive = Layer.mergeAll(ApiKeys.layer, Users.layer, Clients.layer, Merges.layer).pipe(
  Layer.provideMerge(DatabaseLive)
)

const StderrLogger = Logger.replace(Logger.defaultLogger, Logger.withConsoleError(Logger.logfmtLogger))

run(process.argv).pipe(
  Effect.catchTag(
    "CliError",
    (e) => Console.error(`error: ${e.message}`).pipe(Effect.andThen(Effect.sync(() => process.exitCode = 1)))
  ),
  // @effect/cli has already printed what was wrong with the arguments.
  Effect.catchIf(ValidationError.isValidationError, () => Effect.sync(() => process.exitCode = 2)),
  Effect.provide(ServicesLive),
  Effect.provide(NodeContext.layer),
  Effect.provide(Layer.merge(StderrLogger, Logger.minimumLogLevel(LogLevel.Warning))),
  NodeRuntime.runMain({ disablePrettyLogger: true })
)
