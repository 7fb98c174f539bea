/**
 * Every advisory lock in a key space of its own (src/platform/AdvisoryLocks.ts, migrations/0023): a
 * client's `Idempotency-Key` is hashed into the idempotency class only, so whatever key a client
 * crafts, the lock it holds while its request runs cannot be the claim-event lock (docs/writing.md,
 * "The claim-event log never skips"), the change feed's, or any other.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type Pg from "pg"
import { idempotencyLockName } from "../../src/catalog/writes/Writes.js"
import { AdvisoryLockClass } from "../../src/platform/AdvisoryLocks.js"
import { DatabaseUrl, withPgClient } from "../../src/platform/Database.js"
import { TestSqlLive } from "../support/TestDatabase.js"

/**
 * Runs `use` with two connections of the test database: `holder` inside an open transaction (its
 * transaction-scoped locks held until `use` ends), `other` outside it.
 */
const twoSessions = <A>(use: (holder: Pg.Client, other: Pg.Client) => Promise<A>) =>
  Effect.gen(function*() {
    const url = yield* DatabaseUrl
    return yield* withPgClient(url, (holder) =>
      Effect.runPromise(withPgClient(url, async (other) => {
        await holder.query("BEGIN")
        try {
          return await use(holder, other)
        } finally {
          await holder.query("ROLLBACK")
        }
      })))
  })

/** Whether `other` can take the two-integer lock (class, key) now, without waiting (released at once). */
const free = async (other: Pg.Client, lockClass: number, key: number) => {
  await other.query("BEGIN")
  try {
    const { rows } = await other.query<{ ok: boolean }>("SELECT pg_try_advisory_xact_lock($1::int4, $2::int4) AS ok", [
      lockClass,
      key
    ])
    return rows[0]!.ok
  } finally {
    await other.query("ROLLBACK")
  }
}

/** The idempotency lock's key for (owner, key), as the write runner computes it. */
const idempotencyKeyHash = async (client: Pg.Client, owner: string, key: string) =>
  (await client.query<{ h: number }>("SELECT hashtext($1) AS h", [idempotencyLockName(owner, key)])).rows[0]!.h

describe("advisory lock classes (src/platform/AdvisoryLocks.ts)", () => {
  it("every use has its own class, a distinct int4", () => {
    const classes = Object.values(AdvisoryLockClass)
    expect(new Set(classes).size).toBe(classes.length)
    for (const value of classes) {
      expect(Number.isInteger(value)).toBe(true)
      expect(value).toBeGreaterThanOrEqual(-(2 ** 31))
      expect(value).toBeLessThan(2 ** 31)
    }
  })

  it.layer(TestSqlLive, { timeout: "60 seconds" })((it) => {
    it.effect("the database's functions lock in their own class, and no function uses the one-bigint form", () =>
      twoSessions(async (holder) => {
        const definition = async (name: string) =>
          (await holder.query<{ def: string }>("SELECT pg_get_functiondef($1::regproc) AS def", [name])).rows[0]!.def
        expect(await definition("claim_event_lock")).toContain(
          `pg_advisory_xact_lock(${AdvisoryLockClass.claimEvents}, 0)`
        )
        expect(await definition("catalog_feed_publish")).toContain(
          `pg_advisory_xact_lock(${AdvisoryLockClass.catalogFeed}, 0)`
        )
        expect(await definition("rate_limit_admit")).toContain(
          `pg_advisory_xact_lock(${AdvisoryLockClass.rateLimitAdmit}, hashtext(p_backoff))`
        )
        // Every advisory lock in a function body takes two arguments: (a literal class, a key).
        const { rows } = await holder.query<{ proname: string; prosrc: string }>(
          `SELECT p.proname, p.prosrc FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE n.nspname = 'public' AND p.prosrc LIKE '%advisory%'`
        )
        expect(rows.map((r) => r.proname).sort()).toEqual([
          "catalog_feed_publish",
          "claim_event_lock",
          "rate_limit_admit"
        ])
        for (const row of rows) {
          const calls = row.prosrc.split(/advisory_xact_lock\s*\(/).slice(1)
          expect(calls.length, row.proname).toBeGreaterThan(0)
          for (const args of calls) expect(args, row.proname).toMatch(/^\d+, /)
        }
      }))

    it.effect("an idempotency lock held for any key leaves claim_event_lock() free; the event lock itself is exclusive", () =>
      twoSessions(async (holder, other) => {
        // The runner's lock for an ordinary key, and the keys a client would aim at: the event lock's own
        // key (0) and the hashed names of the other locks, all in the idempotency class.
        const owner = "key:1"
        const aimed = [0, 1, AdvisoryLockClass.claimEvents, await idempotencyKeyHash(holder, owner, "retry-1")]
        for (const name of ["shiori.claims.events", "shiori.catalog.feed", "shiori.catalog.seed"]) {
          aimed.push((await holder.query<{ h: number }>("SELECT hashtext($1) AS h", [name])).rows[0]!.h)
        }
        for (const key of aimed) {
          const { rows } = await holder.query<{ ok: boolean }>(
            "SELECT pg_try_advisory_xact_lock($1::int4, $2::int4) AS ok",
            [AdvisoryLockClass.idempotency, key]
          )
          expect(rows[0]!.ok).toBe(true)
        }
        // Held: another request with the same key is refused (409 IDEMPOTENCY_REQUEST_IN_PROGRESS) ...
        expect(await free(other, AdvisoryLockClass.idempotency, aimed[3]!)).toBe(false)
        // ... and the claim-event lock is untouched: the function takes it at once.
        await other.query("BEGIN")
        try {
          // A lock that were held would fail the statement here instead of waiting.
          await other.query("SET LOCAL lock_timeout = '60s'")
          await other.query("SELECT claim_event_lock()")
          // Taken by `other` now: the holder's session cannot have it (the test sees a held lock).
          const { rows } = await holder.query<{ ok: boolean }>(
            "SELECT pg_try_advisory_xact_lock($1::int4, 0) AS ok",
            [AdvisoryLockClass.claimEvents]
          )
          expect(rows[0]!.ok).toBe(false)
        } finally {
          await other.query("ROLLBACK")
        }
        // Every other class is free too.
        for (const lockClass of Object.values(AdvisoryLockClass)) {
          if (lockClass !== AdvisoryLockClass.idempotency) {
            expect(await free(other, lockClass, 0), String(lockClass)).toBe(true)
          }
        }
      }))
  })
})
