/**
 * CLI output: human text by default; with `--json`, exactly one JSON object on stdout.
 * Logs go to stderr so stdout stays machine-readable.
 */
import { Console, Data, Effect } from "effect"

export class CliError extends Data.TaggedError("CliError")<{ readonly message: string }> {}

export const emit = (json: boolean, value: Record<string, unknown>, human: string) =>
  json ? Console.log(JSON.stringify(value)) : Console.log(human)

export const fail = (message: string) => Effect.fail(new CliError({ message }))
