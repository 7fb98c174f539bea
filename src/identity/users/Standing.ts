/**
 * `UserStanding` of the catalog's contract (src/platform/IdentityPort.ts): a user's roles and ban,
 * one row of `users` read on every request that acts for a user.
 */
import { Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import { type Standing, UserStanding } from "../../platform/IdentityPort.js"

const Row = Schema.Struct({ roles: Schema.Array(Schema.String), banned: Schema.Boolean })

export const UserStandingLive = Layer.effect(
  UserStanding,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const find = SqlSchema.findOneOption({
      Request: Schema.Number,
      Result: Row,
      execute: (id) => sql`SELECT roles, banned FROM users WHERE id = ${id}`
    })
    const of = (userId: number): Effect.Effect<Option.Option<Standing>> =>
      find(userId).pipe(Effect.orDie, Effect.withSpan("UserStanding.of"))
    return UserStanding.of({ of })
  })
)
