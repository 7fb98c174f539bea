/**
 * Settings of the identity provider's mail (every key is in `.env.example` under `# identity`).
 *
 * - `SMTP_URL` (secret): where the delivery worker sends the outbox (src/identity/mail/MailDelivery.ts),
 *   e.g. `smtps://user:password@smtp.example:465` or `smtp://127.0.0.1:1025`. Unset: nothing is sent
 *   and messages stay in the outbox.
 * - `MAIL_FROM`: the `From` of every message.
 * - `SHIORI_DEV_MAILBOX`: whether the development mailbox (src/identity/http/DevHttp.ts) answers.
 *   Unset, it answers exactly when no `SMTP_URL` is set and the process is not in production, so a
 *   developer can read the codes the provider mails without an SMTP server. A process counts as in
 *   production when `NODE_ENV=production` or when `HOST` is not a loopback address (other machines
 *   can reach it: the same rule as `SHIORI_SECRET`, src/platform/SecretPolicy.ts); the mailbox shows
 *   every message, codes included, to whoever asks, so it never opens there unless asked for.
 */
import { Config, Context, Effect, Layer, Option, Redacted } from "effect"
import { isLoopbackHost } from "../../platform/SecretPolicy.js"

export const DEFAULT_MAIL_FROM = "shiori <no-reply@localhost>"

export class MailConfig extends Context.Service<MailConfig>()("identity/MailConfig", {
  make: Effect.gen(function*() {
    const smtpUrl = yield* Config.option(Config.Redacted("SMTP_URL")).pipe(
      // An empty value (a blank line of an env file) is no server.
      Config.map(Option.filter((url) => Redacted.value(url).trim() !== ""))
    )
    const from = yield* Config.String("MAIL_FROM").pipe(Config.withDefault(DEFAULT_MAIL_FROM))
    const host = yield* Config.String("HOST").pipe(Config.withDefault("127.0.0.1"))
    const nodeEnv = yield* Config.String("NODE_ENV").pipe(Config.withDefault(""))
    const explicit = yield* Config.option(Config.Boolean("SHIORI_DEV_MAILBOX"))
    const production = nodeEnv === "production" || !isLoopbackHost(host)
    const devMailbox = Option.getOrElse(explicit, () => Option.isNone(smtpUrl) && !production)
    return { smtpUrl, from, production, devMailbox } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
