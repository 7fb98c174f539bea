/**
 * Keys derived from the ring of `AppSecret` (src/platform/Config.ts): the current `SHIORI_SECRET`
 * first, then each of `SHIORI_SECRET_PREVIOUS`. What is signed is signed with the first key only;
 * what is verified is checked against every key, so values made before a rotation stay valid
 * (docs/deploying.md, "Rotating SHIORI_SECRET").
 */
import { Redacted } from "effect"
import * as Crypto from "node:crypto"

/**
 * The HMAC-SHA-256 key for the one use `label` names, derived from each secret of `ring` in order
 * (`HMAC(secret, label)`: distinct labels give independent keys).
 */
export const hmacKeys = (ring: ReadonlyArray<Redacted.Redacted<string>>, label: string): ReadonlyArray<Buffer> =>
  ring.map((secret) => Crypto.createHmac("sha256", Redacted.value(secret)).update(label).digest())

/**
 * Whether `matches` holds for any of `keys`. Every key is tried whatever the earlier ones gave (each
 * `matches` being a constant-time comparison), so the time taken does not tell which key matched.
 */
export const matchesAny = <K>(keys: ReadonlyArray<K>, matches: (key: K) => boolean): boolean =>
  keys.reduce<boolean>((found, key) => matches(key) || found, false)
