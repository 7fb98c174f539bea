/**
 * The shape of each configured rate limit as last set (src/platform/RateLimiter.ts, "Shapes across
 * processes"; docs/deploying.md, "Limits across processes and outages"): a process writes its own
 * capacity and refill here at start, and warns when the row held another shape, set by another
 * process. Buckets themselves never depend on this table: a bucket's key names its shape.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    CREATE TABLE rate_limit_policies (
      name text PRIMARY KEY,
      capacity double precision NOT NULL,
      refill_per_second double precision NOT NULL,
      set_at timestamptz NOT NULL DEFAULT now(),
      set_by text NOT NULL
    )
  `
})
