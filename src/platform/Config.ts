/**
 * Process-level settings, read once through Effect `Config` (every key is in `.env.example`).
 */
import { Config, Effect, Redacted } from "effect"

export type ServeMode = "catalog" | "identity" | "all"

export class ServerConfig extends Effect.Service<ServerConfig>()("platform/ServerConfig", {
  effect: Effect.gen(function*() {
    const host = yield* Config.string("HOST").pipe(Config.withDefault("127.0.0.1"))
    const catalogPort = yield* Config.port("CATALOG_PORT").pipe(Config.withDefault(8080))
    const identityPort = yield* Config.port("IDENTITY_PORT").pipe(Config.withDefault(8081))
    const serve = yield* Config.literal("catalog", "identity", "all")("SHIORI_SERVE").pipe(Config.withDefault("all"))
    const catalogPublicUrl = yield* Config.string("CATALOG_PUBLIC_URL").pipe(
      Config.withDefault(`http://${host}:${catalogPort}`)
    )
    const docsUrl = yield* Config.string("DOCS_URL").pipe(Config.withDefault(`${catalogPublicUrl}/v2/docs`))
    const maxBodyBytes = yield* Config.integer("MAX_JSON_BODY_BYTES").pipe(Config.withDefault(1024 * 1024))
    return {
      host,
      catalogPort,
      identityPort,
      serve: serve as ServeMode,
      catalogPublicUrl: catalogPublicUrl.replace(/\/+$/, ""),
      docsUrl: docsUrl.replace(/\/+$/, ""),
      maxBodyBytes
    } as const
  })
}) {}

/**
 * `SHIORI_SECRET` when unset. It is published in this repository, so the servers accept it only on a
 * loopback address (src/platform/SecretPolicy.ts).
 */
export const developmentSecret = "shiori-development-secret-change-me"

/** The server-side secret behind cursors and CSRF tokens (HMAC keys are derived from it per use). */
export class AppSecret extends Effect.Service<AppSecret>()("platform/AppSecret", {
  effect: Effect.gen(function*() {
    const secret = yield* Config.redacted("SHIORI_SECRET").pipe(
      Config.withDefault(Redacted.make(developmentSecret))
    )
    return { secret } as const
  })
}) {}
