/**
 * A merged-away entity read by id is 404 ENTITY_MERGED naming the surviving id (never a redirect);
 * anything else that is not visible is 404 NOT_FOUND (docs/api-contract.md,
 * "Errors: catalog problem documents").
 */
import { Context, Effect, Layer } from "effect"
import { SqlClient } from "effect/sql"
import type { EntityObject } from "../../../schema/Api/Paths.js"
import { EntityMerged, NotFound } from "../../../schema/Problem.js"
import { bigintId } from "./Lanes.js"

export class Gone extends Context.Service<Gone>()("catalog/Gone", {
  make: Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient

    /**
     * The failure for an id that did not resolve to a visible row. An id beyond PostgreSQL's
     * bigint (the wire allows 20 digits) cannot exist: NOT_FOUND without asking the database.
     */
    const missing = Effect.fn("Gone.missing")(function*(object: EntityObject, id: string) {
      const key = bigintId(id)
      const rows = key === undefined ? [] : yield* sql<{ current_id: string }>`
        SELECT current_id::text AS current_id FROM catalog_redirects
        WHERE target_object = ${object} AND from_id = ${key}
      `.pipe(Effect.orDie)
      const redirect = rows[0]
      if (redirect !== undefined) {
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
      const rows = yield* sql<{ from_id: string; current_id: string }>`
        SELECT from_id::text AS from_id, current_id::text AS current_id FROM catalog_redirects
        WHERE target_object = ${object} AND from_id = ANY(${ids}::bigint[])
      `.pipe(Effect.orDie)
      return new Map(rows.map((r) => [r.from_id, r.current_id]))
    })

    return { missing, mergedAmong } as const
  })
}) {
  static readonly layer = Layer.effect(this, this.make)
}
