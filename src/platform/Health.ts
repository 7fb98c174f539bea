import { Duration, Effect } from "effect"
import type { HttpApiGroup } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { ServiceUnavailable } from "../../schema/Problem.js"

/** Handlers of the `health` group, shared by both servers. */
export const healthHandlers = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  return {
    healthz: () => Effect.succeed({ status: "ok" } as const),
    readyz: () =>
      sql`SELECT 1`.pipe(
        // Requests run uninterruptibly (HttpListener.completeOnHangUp); this ping may be cut short.
        Effect.interruptible,
        Effect.timeout(Duration.seconds(2)),
        Effect.as({ status: "ready", database: "ok" } as const),
        Effect.catchCause(() =>
          Effect.fail(new ServiceUnavailable({ detail: "The database does not answer.", retry_after: 5 }))
        ),
        Effect.withSpan("Health.readyz")
      )
  }
})

export type HealthGroup = HttpApiGroup.HttpApiGroup<"health", any>
