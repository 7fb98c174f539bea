/**
 * Operator commands for news sources (docs/writing.md, "News"): `news-source create --source <s>
 * --site <site>` binds a new source to a site, whose credentials may then post under it;
 * `news-source disable --source <s>` stops every post under it (items already posted stay). A name
 * is bound once: a source cannot move to another site, and a disabled one stays disabled.
 */
import { Effect, Schema } from "effect"
import { Command, Flag } from "effect/cli"
import { Site } from "../../schema/Catalog/Claim.js"
import { NewsSourceName } from "../../schema/Catalog/News.js"
import { NewsRepo, type SourceRow } from "../catalog/news/NewsRepo.js"
import { emit, fail } from "./Output.js"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print one JSON object on stdout"), Flag.withDefault(false))

const sourceFlag = Flag.String("source").pipe(
  Flag.withDescription("The news source (^[a-z][a-z0-9_]*$, at most 64 characters)")
)

const checkSource = (source: string) =>
  Schema.is(NewsSourceName)(source)
    ? Effect.void
    : fail(`not a news source name: ${source} (lower-case letters, digits and _, starting with a letter)`)

const sourceJson = (row: SourceRow) => ({
  source: row.source,
  site: row.site,
  active: row.active,
  created_at: row.created_at,
  updated_at: row.updated_at
})

const create = Command.make("create", {
  source: sourceFlag,
  site: Flag.String("site").pipe(Flag.withDescription("The site whose credentials post under it")),
  json
}, (args) =>
  Effect.gen(function*() {
    yield* checkSource(args.source)
    if (!Schema.is(Site)(args.site)) {
      return yield* fail(`not a site name: ${args.site} (lower-case letters, digits and _, starting with a letter)`)
    }
    const repo = yield* NewsRepo
    const created = yield* repo.createSource(args.source, args.site)
    if (created === undefined) return yield* fail(`news source ${args.source} already exists`)
    yield* emit(args.json, sourceJson(created), `Created news source ${created.source} for site ${created.site}.`)
  }).pipe(Effect.provide(NewsRepo.layer))).pipe(
    Command.withDescription("Bind a new news source to a site")
  )

const disable = Command.make("disable", { source: sourceFlag, json }, (args) =>
  Effect.gen(function*() {
    yield* checkSource(args.source)
    const repo = yield* NewsRepo
    const disabled = yield* repo.disableSource(args.source)
    if (disabled === undefined) return yield* fail(`no news source ${args.source}`)
    yield* emit(
      args.json,
      sourceJson(disabled),
      `Disabled news source ${disabled.source} (site ${disabled.site}); posts under it are refused.`
    )
  }).pipe(Effect.provide(NewsRepo.layer))).pipe(
    Command.withDescription("Disable a news source: posts under it are refused from now on")
  )

export const newsSourceCommand = Command.make("news-source").pipe(
  Command.withDescription("Manage news sources"),
  Command.withSubcommands([create, disable])
)
