import { Duration, Effect, Fiber } from "effect"
import type { HttpApiGroup } from "effect/http-api"
import { SqlClient } from "effect/sql"
import { ServiceUnavailable } from "../../schema/Problem.js"
import { ListenerDraining } from "./HttpListener.js"

/** Handlers of the `health` group, shared by both servers. */
export const healthHandlers = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const listener = yield* ListenerDraining
  return {
    healthz: () => Effect.succeed({ status: "ok" } as const),
    readyz: () =>
      // A draining process (SIGTERM) is going away: not ready, whatever the database says, so that
      // a proxy stops sending it requests (docs/deploying.md, "The topology, step by step").
      listener.draining() ?
        Effect.fail(new ServiceUnavailable({ detail: "The server is shutting down.", retry_after: 1 })) :
        // The ping runs on its own and is only waited for up to 2 s (README, "Operating it"): stopping
        // a statement waits for the database to acknowledge it, which a frozen one never does. An
        // abandoned ping ends with its connection (src/platform/DatabaseDeadline.ts).
        Effect.forkDetach(sql`SELECT 1`).pipe(
          Effect.flatMap(Fiber.join),
          // Requests run uninterruptibly (HttpListener.completeOnHangUp); this wait may be cut short.
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
