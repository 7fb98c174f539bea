/**
 * Process-level settings, read once through Effect `Config` (every key is in `.env.example`).
 */
import { Config, Context, Effect, Layer, Option, Redacted, Schema } from "effect"

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

/**
 * `SHIORI_SECRET_PREVIOUS`: earlier secrets, comma-separated, newest first. Each entry is trimmed and
 * empty entries are dropped, so a secret that is to stay readable must not contain a comma.
 */
const previousSecrets = Config.Redacted("SHIORI_SECRET_PREVIOUS").pipe(
  Config.option,
  Config.map(Option.match({
    onNone: () => [],
    onSome: (list) =>
      Redacted.value(list).split(",").map((entry) => entry.trim()).filter((entry) => entry !== "").map((entry) =>
        Redacted.make(entry)
      )
  }))
)

/**
 * The server-side secret behind cursors, CSRF tokens and the other keys derived from it, as a key
 * ring (docs/deploying.md, "Rotating SHIORI_SECRET"): `secret` (`SHIORI_SECRET`) signs and encrypts;
 * `ring` is `secret` then the `previous` ones (`SHIORI_SECRET_PREVIOUS`), which are only ever used to
 * verify and decrypt what was made before a rotation.
 */
export class AppSecret extends Context.Service<AppSecret>()("platform/AppSecret", {
  make: Effect.gen(function*() {
    const secret = yield* Config.Redacted("SHIORI_SECRET").pipe(
      Config.withDefault(Redacted.make(developmentSecret))
    )
    const current = Redacted.value(secret)
    // The current secret listed again adds nothing; neither does a repeated one.
    const seen = new Set([current])
    const previous = (yield* previousSecrets).filter((entry) => {
      const value = Redacted.value(entry)
      if (seen.has(value)) return false
      seen.add(value)
      return true
    })
    const ring: ReadonlyArray<Redacted.Redacted<string>> = [secret, ...previous]
    return { secret, previous: previous as ReadonlyArray<Redacted.Redacted<string>>, ring } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
