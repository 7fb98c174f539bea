/**
 * Operator commands for creator applications (src/identity/creator/CreatorApplications.ts): the
 * queue (`creator list [--pending]`) and the decision (`creator decide <id> --approve|--decline`).
 * An approval grants `creator` and the applicant is mailed either way, in the decision's transaction.
 */
import { Effect, Layer } from "effect"
import { Argument, CliError, Command, Flag } from "effect/cli"
import * as Os from "node:os"
import type { ApplicationEntry, Decision } from "../identity/creator/CreatorApplications.js"
import { CreatorApplications } from "../identity/creator/CreatorApplications.js"
import { Mailer } from "../identity/mail/Mailer.js"
import { emit, fail } from "./Output.js"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print one JSON object on stdout"), Flag.withDefault(false))

/** Users and the SQL pool come from the CLI's own services (src/cli/main.ts). */
const CreatorLive = CreatorApplications.layer.pipe(Layer.provide(Mailer.layer))

const iso = (unixSeconds: number | null) => unixSeconds === null ? null : new Date(unixSeconds * 1000).toISOString()

const entryJson = (entry: ApplicationEntry) => ({
  id: entry.application.id,
  user_id: entry.userId,
  email: entry.email,
  name: entry.name,
  status: entry.application.status,
  statement: entry.application.statement,
  portfolio_url: entry.application.portfolio_url,
  created_at: iso(entry.application.created_at),
  decided_at: iso(entry.application.decided_at),
  decided_by: entry.decidedBy
})

/** One line per application; the statement's first 80 characters on one line. */
const entryLine = (entry: ApplicationEntry) => {
  const statement = entry.application.statement.replace(/\s+/g, " ")
  return [
    entry.application.id,
    entry.application.status.padEnd(8),
    iso(entry.application.created_at),
    `user ${entry.userId} <${entry.email}>`,
    entry.application.portfolio_url ?? "-",
    statement.length > 80 ? `${statement.slice(0, 79)}…` : statement
  ].join("  ")
}

const creatorList = Command.make("list", {
  pending: Flag.Boolean("pending").pipe(
    Flag.withDescription("Only the applications awaiting a decision"),
    Flag.withDefault(false)
  ),
  json
}, (args) =>
  Effect.gen(function*() {
    const applications = yield* CreatorApplications
    const entries = yield* applications.list({ pendingOnly: args.pending })
    yield* emit(
      args.json,
      { items: entries.map(entryJson) },
      entries.length === 0
        ? `No ${args.pending ? "pending " : ""}creator applications.`
        : entries.map(entryLine).join("\n")
    )
  }).pipe(Effect.provide(CreatorLive))).pipe(
    Command.withDescription("List creator applications, oldest first")
  )

/** Exactly one of `--approve` and `--decline`; anything else is a usage error, like a bad flag. */
const decision = {
  approve: Flag.Boolean("approve").pipe(
    Flag.withDescription("Approve: grant the creator role"),
    Flag.withDefault(false)
  ),
  decline: Flag.Boolean("decline").pipe(
    Flag.withDescription("Decline: the user may apply again in 30 days"),
    Flag.withDefault(false)
  )
}

const decisionOf = (flags: { readonly approve: boolean }): Decision => flags.approve ? "approve" : "decline"

/** Who decided: the operator's account on this host. */
const operator = () => {
  try {
    return `cli:${Os.userInfo().username}`.slice(0, 256)
  } catch {
    return "cli"
  }
}

const creatorDecide = Command.make("decide", {
  id: Argument.String("application-id").pipe(Argument.withDescription("The application's id (a UUID)")),
  decision,
  json
}, (args) =>
  Effect.gen(function*() {
    const applications = yield* CreatorApplications
    const entry = yield* applications.decide(args.id, decisionOf(args.decision), operator()).pipe(
      Effect.catchTags({
        Refused: () => fail(`no such application: ${args.id}`),
        AlreadyDecided: (decided) =>
          fail(
            `application ${args.id} was already ${decided.status}` +
              (decided.decidedAt === null ? "" : ` on ${decided.decidedAt.toISOString()}`) + "; nothing changed"
          )
      })
    )
    const approved = entry.application.status === "approved"
    yield* emit(
      args.json,
      entryJson(entry),
      `${approved ? "Approved" : "Declined"} application ${entry.application.id} of user ${entry.userId} ` +
        `<${entry.email}>${approved ? "; they now hold the creator role" : ""}. They will be mailed.`
    )
  }).pipe(Effect.provide(CreatorLive))).pipe(
    Command.validate(({ decision }) =>
      decision.approve === decision.decline
        ? Effect.fail(new CliError.ValidationError({ message: "give exactly one of --approve or --decline" }))
        : Effect.void
    ),
    Command.withDescription("Approve or decline a pending creator application; the applicant is mailed")
  )

export const creatorCommand = Command.make("creator").pipe(
  Command.withDescription("Review creator applications"),
  Command.withSubcommands([creatorList, creatorDecide])
)
