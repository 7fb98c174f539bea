/**
 * `merge <object> <from_id> <into_id>`: merges one catalog entity into another (src/catalog/merge).
 */
import { Effect } from "effect"
import { Argument, Command, Flag } from "effect/cli"
import { mergeableObjects, Merges } from "../catalog/merge/Merges.js"
import { emit, fail } from "./Output.js"

export const mergeCommand = Command.make("merge", {
  object: Argument.Literals("object", mergeableObjects).pipe(
    Argument.withDescription(`Entity type: ${mergeableObjects.join(", ")}`)
  ),
  fromId: Argument.String("from_id").pipe(Argument.withDescription("The id that goes away (becomes a redirect)")),
  intoId: Argument.String("into_id").pipe(Argument.withDescription("The id that survives")),
  json: Flag.Boolean("json").pipe(Flag.withDescription("Print one JSON object on stdout"), Flag.withDefault(false))
}, (args) =>
  Effect.gen(function*() {
    const merges = yield* Merges
    const result = yield* merges.merge(args.object, args.fromId, args.intoId).pipe(
      Effect.catchTag("MergeRefused", (e) => fail(e.message))
    )
    const moved = Object.entries(result.moved).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`)
    yield* emit(
      args.json,
      {
        object: result.object,
        from_id: result.fromId,
        into_id: result.intoId,
        redirects_repointed: result.redirectsRepointed,
        moved: result.moved,
        touched: result.touched
      },
      `Merged ${result.object} ${result.fromId} into ${result.intoId}` +
        (moved.length > 0 ? ` (moved ${moved.join(", ")})` : "") +
        `; ${result.redirectsRepointed} earlier redirects re-pointed, ${result.touched} changes recorded.`
    )
  })).pipe(
    Command.withDescription(
      "Merge one catalog entity into another in one transaction: the loser becomes a redirect and a gone change"
    )
  )
