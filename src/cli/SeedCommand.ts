import { Effect } from "effect"
import { Command, Flag } from "effect/cli"
import { seedCatalog } from "../demo/Seed.js"
import { emit, fail } from "./Output.js"

export const seedCommand = Command.make("seed", {
  works: Flag.Int("works").pipe(Flag.withDescription("How many works to generate")),
  seed: Flag.Int("seed").pipe(Flag.withDefault(1), Flag.withDescription("Generator seed (deterministic)")),
  json: Flag.Boolean("json").pipe(Flag.withDescription("Print one JSON object on stdout"), Flag.withDefault(false))
}, (args) =>
  Effect.gen(function*() {
    if (args.works < 1 || args.works > 10_000_000) return yield* fail("--works must be between 1 and 10000000.")
    const result = yield* seedCatalog({ works: args.works, seed: args.seed }).pipe(
      Effect.catchTag("SeedError", (e) => fail(e.message))
    )
    if (result.status === "skipped") {
      return yield* emit(args.json, { status: "skipped", reason: result.reason }, `Not seeded: ${result.reason}`)
    }
    const { durationMs, summary } = result
    yield* emit(
      args.json,
      {
        status: "seeded",
        works: summary.works,
        live_works: summary.liveWorks,
        duration_ms: durationMs,
        rows: summary.rows
      },
      `Seeded ${summary.works} works (${summary.liveWorks} live, ${summary.nsfwWorks} nsfw, ${summary.mergedWorks} ` +
        `merged, ${summary.withdrawnWorks} withdrawn) in ${(durationMs / 1000).toFixed(1)} s.`
    )
  })).pipe(Command.withDescription("Load the deterministic demo catalog into an empty database"))
