/**
 * The `media` quota counts bytes of uploaded images (src/catalog/writes/Writes.ts, schema/Api/Writes.ts
 * `QuotaUnits`), which may pass what an `integer` holds in a day.
 */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  yield* sql`ALTER TABLE catalog_quota_usage ALTER COLUMN used TYPE bigint`
})
