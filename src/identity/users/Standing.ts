/**
 * A user's standing as the catalog needs it: current roles and whether the account is banned. The
 * one module through which the catalog reads identity accounts; read on every request that acts
 * for a user, so a role granted or revoked (or a ban) applies at once, whatever the credential.
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"

export interface Standing {
  readonly roles: ReadonlyArray<string>
  readonly banned: boolean
}

const Row = Schema.Struct({ roles: Schema.Array(Schema.String), banned: Schema.Boolean })

export class UserStanding extends Context.Service<UserStanding>()("identity/UserStanding", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const find = SqlSchema.findOneOption({
      Request: Schema.Number,
      Result: Row,
      execute: (id) => sql`SELECT roles, banned FROM users WHERE id = ${id}`
    })
    /** The user's standing; none when the account no longer exists. */
    const of = (userId: number): Effect.Effect<Option.Option<Standing>> =>
      find(userId).pipe(Effect.orDie, Effect.withSpan("UserStanding.of"))
    return { of } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
