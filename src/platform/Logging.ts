import { Config, Effect, Layer, Logger, LogLevel } from "effect"

/** Structured logs: logfmt by default, JSON with `LOG_FORMAT=json`; level from `LOG_LEVEL`. */
export const LoggingLive = Layer.unwrapEffect(
  Effect.gen(function*() {
    const format = yield* Config.literal("logfmt", "json", "pretty")("LOG_FORMAT").pipe(Config.withDefault("logfmt"))
    const level = yield* Config.logLevel("LOG_LEVEL").pipe(Config.withDefault(LogLevel.Info))
    const logger = format === "json" ? Logger.json : format === "pretty" ? Logger.pretty : Logger.logFmt
    return Layer.merge(logger, Logger.minimumLogLevel(level))
  })
)
