import { Config, Effect, Layer, Logger, LogLevel } from "effect"

const levels: Record<string, LogLevel.LogLevel> = {
  all: LogLevel.All,
  trace: LogLevel.Trace,
  debug: LogLevel.Debug,
  info: LogLevel.Info,
  warn: LogLevel.Warning,
  warning: LogLevel.Warning,
  error: LogLevel.Error,
  fatal: LogLevel.Fatal,
  none: LogLevel.None,
  off: LogLevel.None
}

/** `LOG_LEVEL`: trace, debug, info, warning, error, fatal or none (any case). */
export const LogLevelConfig = Config.string("LOG_LEVEL").pipe(
  Config.withDefault("info"),
  Config.mapAttempt((raw) => {
    const level = levels[raw.toLowerCase()]
    if (level === undefined) throw new Error(`LOG_LEVEL must be one of ${Object.keys(levels).join(", ")}`)
    return level
  })
)

/** Structured logs: logfmt by default, JSON with `LOG_FORMAT=json`; level from `LOG_LEVEL`. */
export const LoggingLive = Layer.unwrap(
  Effect.gen(function*() {
    const format = yield* Config.literal("logfmt", "json", "pretty")("LOG_FORMAT").pipe(Config.withDefault("logfmt"))
    const level = yield* LogLevelConfig
    const logger = format === "json" ? Logger.json : format === "pretty" ? Logger.pretty : Logger.logFmt
    return Layer.merge(logger, Logger.minimumLogLevel(level))
  })
)
