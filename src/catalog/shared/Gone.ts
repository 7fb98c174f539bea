/**
 * A merged-away entity read by id is 404 ENTITY_MERGED naming the surviving id (never a redirect);
 * anything else that is not visible is 404 NOT_FOUND (docs/api-contract.md,
 * "Errors: catalog problem documents").
 */
import { Context, Effect, Layer, Option, Schema } from "effect"
import { SqlClient, SqlSchema } from "effect/sql"
import type { EntityObject } from "../../../schema/Api/Paths.js"
import { EntityMerged, NotFound } from "../../../schema/Problem.js"
import { bigintId } from "./Lanes.js"

const Redirect = Schema.Struct({ from_id: Schema.String, current_id: Schema.String })

export class Gone extends Context.Service<Gone>()("catalog/Gone", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const redirectOf = SqlSchema.findOneOption({
      Request: Schema.Struct({ object: Schema.String, id: Schema.String }),
      Result: Redirect,
      execute: ({ id, object }) =>
        sql`
          SELECT from_id::text AS from_id, current_id::text AS current_id FROM catalog_redirects
          WHERE target_object = ${object} AND from_id = ${id}
        `
    })
    const redirectsAmong = SqlSchema.findAll({
      Request: Schema.Struct({ object: Schema.String, ids: Schema.Array(Schema.String) }),
      Result: Redirect,
      execute: ({ ids, object }) =>
        sql`
          SELECT from_id::text AS from_id, current_id::text AS current_id FROM catalog_redirects
          WHERE target_object = ${object} AND from_id = ANY(${ids}::bigint[])
        `
    })

    /**
     * The failure for an id that did not resolve to a visible row. An id beyond PostgreSQL's
     * bigint (the wire allows 20 digits) cannot exist: NOT_FOUND without asking the database.
     */
    const missing = Effect.fn("Gone.missing")(function*(object: EntityObject, id: string) {
      const key = bigintId(id)
      const found = key === undefined
        ? Option.none()
        : yield* redirectOf({ object, id: key }).pipe(Effect.orDie)
      if (Option.isSome(found)) {
        const redirect = found.value
        return yield* new EntityMerged({
          detail: `This ${object} was merged into ${redirect.current_id}.`,
          object,
          current_id: redirect.current_id
        })
      }
      return yield* new NotFound({ detail: `No ${object} with id ${id}.` })
    })

    /** Many ids at once: which of `ids` were merged, for `missing[]` bookkeeping. */
    const mergedAmong = Effect.fn("Gone.mergedAmong")(function*(object: EntityObject, ids: ReadonlyArray<string>) {
      if (ids.length === 0) return new Map<string, string>()
      const rows = yield* redirectsAmong({ object, ids }).pipe(Effect.orDie)
      return new Map(rows.map((r) => [r.from_id, r.current_id]))
    })

    return { missing, mergedAmong } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
