/**
 * `reencrypt-secrets`: after a rotation of `SHIORI_SECRET` (docs/deploying.md, "Rotating
 * SHIORI_SECRET"), seals everything stored under a key derived from a previous secret anew under the
 * current one: the signing keys' private halves (src/identity/keys/SigningKeyCipher.ts) and the TOTP
 * secrets (src/identity/twofactor/TotpSecrets.ts). Idempotent: a second run re-encrypts nothing.
 * Once it reports nothing unreadable, `SHIORI_SECRET_PREVIOUS` can be dropped.
 */
import { Console, Effect, Layer, Redacted } from "effect"
import { Command, Flag } from "effect/cli"
import { SigningKeyCipher } from "../identity/keys/SigningKeyCipher.js"
import { resealSigningKeys } from "../identity/keys/SigningKeys.js"
import { makeTotpCipher, reencryptTotpSecrets } from "../identity/twofactor/TotpSecrets.js"
import { AppSecret } from "../platform/Config.js"
import { secretWeakness } from "../platform/SecretPolicy.js"
import { emit, fail } from "./Output.js"

const json = Flag.Boolean("json").pipe(Flag.withDescription("Print one JSON object on stdout"), Flag.withDefault(false))

export const reencryptSecretsCommand = Command.make("reencrypt-secrets", {
  batchSize: Flag.Int("batch-size").pipe(
    Flag.withDefault(500),
    Flag.withDescription("TOTP rows read and re-encrypted at a time")
  ),
  json
}, (args) =>
  Effect.gen(function*() {
    if (args.batchSize < 1 || args.batchSize > 100_000) return yield* fail("--batch-size must be between 1 and 100000.")
    const appSecret = yield* AppSecret
    // Everything is sealed anew under the current secret: a public or short one would give it away.
    const weakness = secretWeakness(Redacted.value(appSecret.secret))
    if (weakness !== undefined) return yield* fail(`${weakness}: nothing is re-encrypted under it.`)
    const signingKeys = yield* resealSigningKeys(yield* SigningKeyCipher).pipe(
      Effect.catchTag("SigningKeysUndecryptable", (e) => fail(e.message))
    )
    const totp = yield* reencryptTotpSecrets(makeTotpCipher(appSecret.ring), args.batchSize)
    if (totp.unreadable > 0) {
      yield* Console.error(
        `warning: ${totp.unreadable} TOTP secret(s) open under no configured secret (SHIORI_SECRET or ` +
          "SHIORI_SECRET_PREVIOUS) and were left as they are; their owners sign in with a recovery code."
      )
    }
    yield* emit(
      args.json,
      {
        signing_keys: { reencrypted: signingKeys },
        totp_secrets: { reencrypted: totp.reencrypted, current: totp.current, unreadable: totp.unreadable }
      },
      `Re-encrypted ${signingKeys} signing key(s) and ${totp.reencrypted} TOTP secret(s) under SHIORI_SECRET ` +
        `(${totp.current} already under it, ${totp.unreadable} unreadable).`
    )
  }).pipe(Effect.provide(SigningKeyCipher.layerWithoutDependencies.pipe(Layer.provideMerge(AppSecret.layer))))).pipe(
    Command.withDescription(
      "Re-encrypt signing keys and TOTP secrets sealed under a SHIORI_SECRET_PREVIOUS secret under SHIORI_SECRET"
    )
  )
