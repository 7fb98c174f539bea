/**
 * Process-level settings, read once through Effect `Config` (every key is in `.env.example`).
 */
import { Config, Context, Effect, Layer, Redacted, Schema } from "effect"

export type ServeMode = "catalog" | "identity" | "all"

const bodyLimit = (name: string, fallback: number) =>
  Config.schema(Schema.Int.check(Schema.isGreaterThan(0, { message: "must be a positive number of bytes" })), name)
    .pipe(Config.withDefault(fallback))

/**
 * Request body limits of the two servers (src/platform/BodyLimit.ts). The catalog takes JSON writes;
 * the identity server only small forms and JSON, so its bodies are bounded far lower. Each server's
 * stack reads its own (the identity server's, like the rest of its settings, when it is built).
 */
export const catalogMaxBodyBytes = bodyLimit("MAX_JSON_BODY_BYTES", 1024 * 1024)
export const identityMaxBodyBytes = bodyLimit("IDENTITY_MAX_BODY_BYTES", 64 * 1024)
/** `POST /auth/me/avatar`, the identity server's one upload: an image of at most 5 MiB by default. */
export const identityMaxAvatarBytes = bodyLimit("IDENTITY_MAX_AVATAR_BYTES", 5 * 1024 * 1024)

export class ServerConfig extends Context.Service<ServerConfig>()("platform/ServerConfig", {
  make: Effect.gen(function*() {
    const host = yield* Config.String("HOST").pipe(Config.withDefault("127.0.0.1"))
    const catalogPort = yield* Config.Port("CATALOG_PORT").pipe(Config.withDefault(8080))
    const identityPort = yield* Config.Port("IDENTITY_PORT").pipe(Config.withDefault(8081))
    const serve = yield* Config.Literals(["catalog", "identity", "all"], "SHIORI_SERVE").pipe(Config.withDefault("all"))
    const catalogPublicUrl = yield* Config.String("CATALOG_PUBLIC_URL").pipe(
      Config.withDefault(`http://${host}:${catalogPort}`)
    )
    const docsUrl = yield* Config.String("DOCS_URL").pipe(Config.withDefault(`${catalogPublicUrl}/v2/docs`))
    const maxBodyBytes = yield* catalogMaxBodyBytes
    return {
      host,
      catalogPort,
      identityPort,
      serve,
      catalogPublicUrl: catalogPublicUrl.replace(/\/+$/, ""),
      docsUrl: docsUrl.replace(/\/+$/, ""),
      maxBodyBytes
    } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}

/**
 * `SHIORI_SECRET` when unset. It is published in this repository, so the servers accept it only on a
 * loopback address (src/platform/SecretPolicy.ts).
 */
export const developmentSecret = "shiori-development-secret-change-me"

/** The server-side secret behind cursors and CSRF tokens (HMAC keys are derived from it per use). */
export class AppSecret extends Context.Service<AppSecret>()("platform/AppSecret", {
  make: Effect.gen(function*() {
    const secret = yield* Config.Redacted("SHIORI_SECRET").pipe(
      Config.withDefault(Redacted.make(developmentSecret))
    )
    return { secret } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
