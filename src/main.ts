// First: sizes libuv's thread pool before any other module can use it (src/ThreadPool.ts).
import "./ThreadPool.js"

import { NodeRuntime } from "@effect/platform-node"
import { Cause, ConfigProvider, Duration, Effect, Exit, Layer } from "effect"
import * as V8 from "node:v8"
import { MainLive } from "./App.js"
import { DRAIN_GRACE } from "./platform/HttpListener.js"
import { LoggingLive } from "./platform/Logging.js"

/**
 * The heap policy (README "Operating it"). V8 lets the old generation grow to as much as four times
 * what survived its last full collection before collecting again; under load that is mostly
 * garbage (catalog bench: a 510 MB heap over about 140 MB of live data, 742 MB resident).
 * `HEAP_GROWING_PERCENT` (default 50) collects once the heap has grown by that share instead; `0`
 * keeps V8's own policy. A `--heap-growing-percent` given to node itself wins.
 */
const heapGrowingPercent = Number(process.env.HEAP_GROWING_PERCENT ?? "50")
if (!Number.isInteger(heapGrowingPercent) || heapGrowingPercent < 0 || heapGrowingPercent > 1000) {
  throw new Error(`HEAP_GROWING_PERCENT must be an integer from 0 to 1000, not ${process.env.HEAP_GROWING_PERCENT}`)
}
const givenToNode = [...process.execArgv, process.env.NODE_OPTIONS ?? ""].some((arg) =>
  arg.includes("heap-growing-percent")
)
if (heapGrowingPercent > 0 && !givenToNode) V8.setFlagsFromString(`--heap-growing-percent=${heapGrowingPercent}`)

/**
 * The command line, read here only: `npm start -- --demo` becomes the setting `SHIORI_DEMO=true`
 * (src/demo/DemoCatalog.ts), which the layers read like any other. Anything else is refused
 * rather than ignored, so a mistyped flag is not silently without effect.
 */
const argumentSettings = new Map<string, string>()
for (const arg of process.argv.slice(2)) {
  if (arg === "--demo") argumentSettings.set("SHIORI_DEMO", "true")
  else throw new Error(`unknown argument ${arg} (npm start accepts --demo)`)
}
const ConfigLive = ConfigProvider.layer(
  ConfigProvider.fromUnknown(Object.fromEntries(argumentSettings)).pipe(
    ConfigProvider.orElse(ConfigProvider.fromEnv())
  )
)

/**
 * A failure to start (a refused secret, an unreachable database) is logged like every other line, in
 * the configured format, and exits 1. A stop asked for by SIGTERM or SIGINT drains and exits 0: it
 * is how an operator or a supervisor ends the process, not a failure.
 */
const main = Layer.launch(MainLive).pipe(
  Effect.tapCause((cause) => Cause.hasInterruptsOnly(cause) ? Effect.void : Effect.logError(cause)),
  Effect.provide(LoggingLive),
  Effect.provide(ConfigLive)
)

/**
 * The stop is bounded whatever the database does: the drain gives in-flight requests
 * `DRAIN_GRACE` (src/platform/HttpListener.ts), and statements have their deadlines
 * (src/platform/DatabaseDeadline.ts); should releasing the rest still hang, the process exits 1
 * `SHUTDOWN_MARGIN` after that rather than wait for the database.
 */
const SHUTDOWN_MARGIN = Duration.seconds(5)
const boundShutdown = () => {
  setTimeout(() => {
    Effect.runFork(
      Effect.logError("shutdown did not finish in time; exiting").pipe(
        Effect.ensuring(Effect.sync(() => process.exit(1))),
        Effect.provide(LoggingLive),
        Effect.provide(ConfigLive)
      )
    )
  }, Duration.toMillis(Duration.sum(DRAIN_GRACE, SHUTDOWN_MARGIN))).unref()
}
process.once("SIGTERM", boundShutdown)
process.once("SIGINT", boundShutdown)

NodeRuntime.runMain(main, {
  disableErrorReporting: true,
  teardown: (exit, onExit) => onExit(Exit.isFailure(exit) && !Cause.hasInterruptsOnly(exit.cause) ? 1 : 0)
})
