/**
 * Every PostgreSQL advisory lock the project takes, each in a key space of its own.
 *
 * All of them use the two-integer form, `pg_advisory_xact_lock(class int4, key int4)` (or its
 * `pg_try_` variant), with one class per use below. PostgreSQL keeps the two forms apart (a lock
 * taken with one bigint never conflicts with one taken with two integers) and two-integer locks
 * conflict only when both integers are equal, so a key chosen by a client (an `Idempotency-Key`)
 * can only ever meet other keys of its own class: no crafted key can block the claim-event lock,
 * the change-feed lock or any other.
 *
 * | class | use | key |
 * |---|---|---|
 * | 1 `catalogFeed` | numbering the change feed at commit (`catalog_feed_publish()`, migrations/0010) | 0 |
 * | 2 `claimEvents` | handing out claim-event ids in commit order (`claim_event_lock()`, migrations/0021) | 0 |
 * | 3 `idempotency` | one running request per credential and `Idempotency-Key` (src/catalog/writes/Writes.ts) | `hashtext(owner \n key)` |
 * | 4 `catalogSeed` | one seed at a time (src/demo/Seed.ts) | 0 |
 * | 5 `signingKeys` | creating, sealing and rotating signing keys (src/identity/keys/SigningKeys.ts) | 0 |
 * | 6 `rateLimitAdmit` | one sign-in admission per backoff (`rate_limit_admit()`, migrations/0020) | `hashtext(backoff)` |
| 7 `avatarFile` | storing an avatar's file against removing it (src/identity/account/Avatars.ts, src/identity/cleanup/Cleanup.ts) | `hashtext(sha256)` |
 *
 * The SQL functions hold their class as a literal, written by migrations/0023, which reads it from
 * here: a class is never renumbered or reused (changing one needs a migration that redefines the
 * function), and a new use takes the next free number.
 */
export const AdvisoryLockClass = {
  catalogFeed: 1,
  claimEvents: 2,
  idempotency: 3,
  catalogSeed: 4,
  signingKeys: 5,
  rateLimitAdmit: 6,
  avatarFile: 7
} as const

export type AdvisoryLockClass = (typeof AdvisoryLockClass)[keyof typeof AdvisoryLockClass]
