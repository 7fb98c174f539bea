/**
 * Avatars' bytes move out of PostgreSQL into the `MediaStore` (src/platform/MediaStore.ts, area
 * `avatars`), where the editor images are kept already; `avatars` (migrations/0019) keeps what the
 * references and the cleanup job need: the name (`sha256`), the type, the size (`size_bytes`, new
 * here), the dimensions and `created_at`.
 *
 * Every row's bytes are written to the store under its `sha256`, `BATCH` rows at a time in `sha256`
 * order (so a large table is never loaded whole), then `bytes` is dropped. The migration runs in a
 * transaction: if it fails the column and its bytes stay, and the files written meanwhile are named
 * by their content, so they are the same files the next attempt writes (and an unreferenced one is
 * harmless).
 */
import { Effect, Schema } from "effect"
import { SqlClient } from "effect/sql"
import { MediaStore } from "../src/platform/MediaStore.js"

/** Rows read (and files written) at a time. */
const BATCH = 100

const decodeRows = Schema.decodeUnknownEffect(Schema.Array(Schema.Struct({
  sha256: Schema.String,
  bytes: Schema.Uint8Array
})))

export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const media = yield* MediaStore

  let after = ""
  for (;;) {
    const rows = yield* sql`
      SELECT sha256, bytes FROM avatars WHERE sha256 > ${after} ORDER BY sha256 LIMIT ${BATCH}
    `.pipe(Effect.flatMap(decodeRows))
    // Every avatar is a WebP (migrations/0019 checks `content_type = 'image/webp'`).
    yield* Effect.forEach(rows, (row) => media.put("avatars", row.sha256, row.bytes, "image/webp"), {
      concurrency: 4,
      discard: true
    })
    if (rows.length < BATCH) break
    after = rows[rows.length - 1]!.sha256
  }

  yield* sql`ALTER TABLE avatars ADD COLUMN size_bytes integer`
  yield* sql`UPDATE avatars SET size_bytes = octet_length(bytes)`
  yield* sql`
    ALTER TABLE avatars
      ALTER COLUMN size_bytes SET NOT NULL,
      ADD CONSTRAINT avatars_size_bytes CHECK (size_bytes BETWEEN 0 AND 1048576),
      DROP COLUMN bytes
  `
})
