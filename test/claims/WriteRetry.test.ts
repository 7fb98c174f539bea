/**
 * A write that PostgreSQL aborts for a deadlock runs again (docs/writing.md, "The write runner"):
 * the whole transaction rolled back, so the retry is a fresh attempt and the client sees one answer,
 * never a 500 (5xx only for the server's own failures: docs/api-contract.md, "Errors: catalog problem documents").
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Redacted } from "effect"
import { SqlClient } from "effect/sql"
import Pg from "pg"
import { DatabaseUrl } from "../../src/platform/Database.js"
import { ClaimsFixture, ClaimsFixtureLive } from "../support/Claims.js"
import { eventually } from "../support/Eventually.js"
import { serverLayerOptions } from "../support/TestServers.js"

describe("write retries (docs/api-contract.md, \"Errors: catalog problem documents\")", () => {
  it.layer(ClaimsFixtureLive(), serverLayerOptions())((it) => {
    it.effect("a submission aborted by a deadlock runs again and answers 200, with one event (docs/api-contract.md, \"Errors: catalog problem documents\")", () =>
      Effect.gen(function*() {
        const f = yield* ClaimsFixture
        const sql = yield* SqlClient.SqlClient
        const url = Redacted.value(yield* DatabaseUrl)
        const minted = yield* f.call("POST", "/v2/claims", {
          key: f.siteUser.key,
          body: { site_work_id: "501", display_name: "Retry me" }
        })
        expect(minted.status, JSON.stringify(minted.body)).toBe(201)
        const work: string = minted.body.id

        // Another transaction takes the event lock, the submission then locks the claim row and waits
        // for the event lock, and the other transaction asks for the row: a deadlock. The submission
        // waited first, so PostgreSQL's detector aborts it (40P01).
        const other = new Pg.Client({ connectionString: url })
        other.on("error", () => {})
        yield* Effect.promise(() => other.connect())
        yield* Effect.addFinalizer(() => Effect.promise(() => other.end().catch(() => {})))
        yield* Effect.promise(() => other.query("BEGIN"))
        yield* Effect.promise(() => other.query("SELECT claim_event_lock()"))

        const waiting = (pattern: string) =>
          eventually(
            Effect.flatMap(
              sql<{ n: number }>`
                SELECT count(*)::int AS n FROM pg_stat_activity
                WHERE datname = current_database() AND wait_event_type = 'Lock' AND query ILIKE ${pattern}`,
              (rows) => Effect.sync(() => expect(rows[0]!.n).toBe(1))
            ),
            { timeoutMs: 10_000, intervalMs: 20 }
          )

        const submission = yield* Effect.forkChild(
          f.call("POST", `/v2/claims/${work}/submission`, { key: f.siteUser.key })
        )
        yield* waiting("%claim_event_lock%nextval%")
        const blocked = Effect.promise(() =>
          other.query("SELECT 1 FROM claims WHERE work_id = $1::bigint FOR UPDATE", [work]).then(
            () => "locked",
            (error: { code?: string }) => `failed ${error.code}`
          )
        )
        const otherOutcome = yield* Effect.forkChild(blocked)
        // The submission is aborted and retried; its retry now waits for the row the other holds.
        expect(yield* Fiber.join(otherOutcome)).toBe("locked")
        yield* Effect.promise(() => other.query("COMMIT"))

        const answered = yield* Fiber.join(submission)
        expect(answered.status, JSON.stringify(answered.body)).toBe(200)
        expect(answered.body.state).toBe("pending")
        const events = yield* sql<{ to_state: string }>`
          SELECT to_state FROM claim_events WHERE work_id = ${work}::bigint ORDER BY id`
        expect(events.map((e) => e.to_state)).toEqual(["draft", "pending"])
      }).pipe(Effect.scoped))
  })
})
