import { Config, Effect, Layer, Logger, type LogLevel, References, Schema } from "effect"

const levels: Record<string, LogLevel.LogLevel> = {
  all: "All",
  trace: "Trace",
  debug: "Debug",
  info: "Info",
  warn: "Warn",
  warning: "Warn",
  error: "Error",
  fatal: "Fatal",
  none: "None",
  off: "None"
}

/** A level name of `levels`, in any case. */
const LevelName = Schema.String.check(
  Schema.makeFilter((raw: string) => Object.hasOwn(levels, raw.toLowerCase()), {
    message: `LOG_LEVEL must be one of ${Object.keys(levels).join(", ")}`
  })
)

/** `LOG_LEVEL`: trace, debug, info, warning, error, fatal or none (any case). */
export const LogLevelConfig = Config.schema(LevelName, "LOG_LEVEL").pipe(
  Config.withDefault("info"),
  // `LevelName` admits only keys of `levels`.
  Config.map((raw) => levels[raw.toLowerCase()]!)
)

/** Structured logs: logfmt by default, JSON with `LOG_FORMAT=json`; level from `LOG_LEVEL`. */
export const LoggingLive = Layer.unwrap(
  Effect.gen(function*() {
    const format = yield* Config.Literals(["logfmt", "json", "pretty"], "LOG_FORMAT").pipe(
      Config.withDefault("logfmt")
    )
    const level = yield* LogLevelConfig
    // The format replaces the default logger; spans keep getting log events (`tracerLogger`).
    const logger = format === "json"
      ? Logger.consoleJson
      : format === "pretty"
      ? Logger.consolePretty()
      : Logger.consoleLogFmt
    return Layer.merge(
      Logger.layer([logger, Logger.tracerLogger]),
      Layer.succeed(References.MinimumLogLevel, level)
    )
  })
)
