/**
 * The servers refuse a guessable `SHIORI_SECRET` where other machines can reach them. The secret
 * keys the HMACs of catalog cursors (src/catalog/pagination/Cursor.ts) and identity CSRF tokens
 * (src/identity/pages/forms/Csrf.ts): whoever knows it forges both. The development default is
 * published in this repository, so it is tolerated only on a loopback address, with a warning. Each
 * entry of `SHIORI_SECRET_PREVIOUS` is held to the same rules: it still verifies what it signed.
 *
 * Only the servers apply this (src/App.ts). The operator CLI serves nothing, so it may use
 * `AppSecret` on a developer's machine without one.
 */
import { Data, Effect, Layer, Redacted } from "effect"
import * as Net from "node:net"
import { AppSecret, developmentSecret, ServerConfig } from "./Config.js"

/** 32 characters: at least 128 bits of entropy even from a hex or base64 generator. */
export const minimumSecretLength = 32

const loopback = new Net.BlockList()
loopback.addSubnet("127.0.0.0", 8, "ipv4")
loopback.addAddress("::1", "ipv6")

/**
 * `localhost`, 127.0.0.0/8 or `::1` (in any spelling, IPv4-mapped included). `0.0.0.0` and `::`
 * listen on every interface, and a host name may resolve anywhere: neither is loopback.
 */
export const isLoopbackHost = (host: string): boolean => {
  const name = host.trim().toLowerCase()
  if (name === "localhost") return true
  const family = Net.isIP(name)
  return family !== 0 && loopback.check(name, family === 4 ? "ipv4" : "ipv6")
}

export class UnsafeSecretError extends Data.TaggedError("UnsafeSecretError")<{ readonly message: string }> {}

/**
 * What is wrong with `secret` for a server others can reach, if anything. `name` says which secret
 * it is in the message: `SHIORI_SECRET`, or an entry of `SHIORI_SECRET_PREVIOUS`.
 */
export const secretWeakness = (secret: string, name = "SHIORI_SECRET"): string | undefined =>
  secret === developmentSecret
    ? `${name} is ${name === "SHIORI_SECRET" ? "unset or " : ""}the development default, which is public`
    : secret.length < minimumSecretLength
    ? `${name} is ${secret.length} characters long, shorter than ${minimumSecretLength}`
    : undefined

/**
 * What is wrong with any secret of the ring: the current one, then each previous one (which still
 * verifies and decrypts, so a guessable one forges as well as a guessable current one).
 */
export const ringWeakness = (
  ring: { readonly secret: Redacted.Redacted<string>; readonly previous: ReadonlyArray<Redacted.Redacted<string>> }
): string | undefined =>
  [
    secretWeakness(Redacted.value(ring.secret)),
    ...ring.previous.map((secret, i) => secretWeakness(Redacted.value(secret), `SHIORI_SECRET_PREVIOUS entry ${i + 1}`))
  ].find((weakness) => weakness !== undefined)

/**
 * Fails on a weak secret when `HOST` is not a loopback address, before anything else starts;
 * on loopback the same finding is a warning.
 */
export const ServerSecretPolicyLive = Layer.effectDiscard(
  Effect.gen(function*() {
    const { host } = yield* ServerConfig
    const weakness = ringWeakness(yield* AppSecret)
    if (weakness === undefined) return
    if (isLoopbackHost(host)) {
      return yield* Effect.logWarning(
        `${weakness}: accepted only because HOST is a loopback address; set SHIORI_SECRET (and every entry of ` +
          `SHIORI_SECRET_PREVIOUS) to a random value of at least ${minimumSecretLength} characters before ` +
          "listening on any other address"
      ).pipe(Effect.annotateLogs({ host }))
    }
    return yield* new UnsafeSecretError({
      message: `${weakness}. Refusing to start on HOST=${host}, which is not a loopback address: set ` +
        `SHIORI_SECRET (and every entry of SHIORI_SECRET_PREVIOUS) to a random value of at least ` +
        `${minimumSecretLength} characters (for example \`openssl rand -base64 48\`).`
    })
  })
)
