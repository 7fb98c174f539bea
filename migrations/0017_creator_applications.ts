/**
 * Creator applications (src/identity/creator/CreatorApplications.ts): a signed-in user asks for the
 * `creator` role, an operator decides with the CLI (`creator decide`).
 *
 * - `creator_applications`: one row per application, never deleted while its user exists.
 *   - `statement`: why the user asks, trimmed, 20 to 4000 characters (`length` counts characters,
 *     as the request schema does: schema/Identity/Creator.ts).
 *   - `portfolio_url`: an http(s) URL of at most 2048 characters, or null.
 *   - `status`: `pending` until decided, then `approved` or `declined` for good.
 *   - `decided_at`, `decided_by`: when and by whom (the operator's account on the CLI's host); set
 *     exactly when the application is no longer pending.
 * - At most one pending application per user: the partial unique index makes two simultaneous
 *   applications of one user end with one row (the other gets a unique violation, answered 17002).
 * - A user's newest application (`GET /creator/applications/me`, the 30-day wait after a decline)
 *   is read through `(user_id, created_at DESC)`; the CLI's pending queue through `created_at`
 *   of the pending rows.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  yield* sql`
    CREATE TABLE creator_applications (
      id uuid PRIMARY KEY DEFAULT gen_random_uuid(),
      user_id bigint NOT NULL REFERENCES users (id) ON DELETE CASCADE,
      statement text NOT NULL CHECK (length(statement) BETWEEN 20 AND 4000),
      portfolio_url text CHECK (length(portfolio_url) BETWEEN 1 AND 2048),
      status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'approved', 'declined')),
      created_at timestamptz NOT NULL DEFAULT now(),
      decided_at timestamptz,
      decided_by text CHECK (length(decided_by) <= 256),
      CHECK ((status = 'pending') = (decided_at IS NULL))
    )
  `
  yield* sql`
    CREATE UNIQUE INDEX creator_applications_pending_key ON creator_applications (user_id)
    WHERE status = 'pending'
  `
  yield* sql`CREATE INDEX creator_applications_user_newest_idx ON creator_applications (user_id, created_at DESC)`
  yield* sql`CREATE INDEX creator_applications_pending_idx ON creator_applications (created_at) WHERE status = 'pending'`
})
