/**
 * A fresh database per test file, cloned from the migrated template of the run; or an empty one, for
 * a test of the migrations themselves.
 */
import { NodeServices } from "@effect/platform-node"
import { PgMigrator } from "@effect/sql-pg"
import { ConfigProvider, Effect, Layer, Redacted } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs/promises"
import * as Os from "node:os"
import * as Path from "node:path"
import { inject } from "vitest"
import { DatabaseUrl, migrationLoader, quoteIdentifier, SqlLive, withPgClient } from "../../src/platform/Database.js"
import { MediaStore } from "../../src/platform/MediaStore.js"

const withDatabase = (url: string, name: string) => {
  const u = new URL(url)
  u.pathname = `/${name}`
  return u.toString()
}

/**
 * The url of a new database, a copy of `template` or empty (to be migrated by the test), dropped
 * when the scope closes.
 */
export const newTestDatabase = (template?: string) =>
  Effect.gen(function*() {
    const admin = Redacted.make(inject("pgAdminUrl"))
    const name = `shiori_test_${Crypto.randomBytes(6).toString("hex")}`
    const from = template === undefined ? "" : ` TEMPLATE ${quoteIdentifier(template)}`
    yield* Effect.acquireRelease(
      withPgClient(admin, (c) => c.query(`CREATE DATABASE ${quoteIdentifier(name)}${from}`)),
      () =>
        withPgClient(admin, (c) => c.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(name)} WITH (FORCE)`)).pipe(
          Effect.ignore
        )
    )
    return Redacted.make(withDatabase(inject("pgAdminUrl"), name))
  })

/** `DatabaseUrl` of a new database cloned from the migrated template; dropped when the layer is released. */
export const TestDatabaseUrlLive = Layer.effect(
  DatabaseUrl,
  Effect.suspend(() => newTestDatabase(inject("pgTemplate")))
)

/**
 * The servers' pool (`SqlLive`: prepared statements, statement timeout) over the database `url`
 * names, plus its url. The pool size is laid over the settings in force (`testConfig`'s), not in
 * place of them.
 */
export const testSqlOver = <E>(url: Layer.Layer<DatabaseUrl, E>) =>
  Layer.fresh(SqlLive).pipe(
    Layer.provide(
      ConfigProvider.layerAdd(ConfigProvider.fromEnv({ env: { DATABASE_POOL_SIZE: "10" } }), { asPrimary: true })
    ),
    Layer.provideMerge(url)
  )

/** `testSqlOver` a fresh database (`TestDatabaseUrlLive`). */
export const TestSqlLive = testSqlOver(TestDatabaseUrlLive)

/** A new temporary directory, removed with everything in it when the scope closes. */
export const temporaryDirectory = (prefix: string) =>
  Effect.acquireRelease(
    Effect.promise(() => Fs.mkdtemp(Path.join(Os.tmpdir(), prefix))),
    (directory) => Effect.promise(() => Fs.rm(directory, { recursive: true, force: true }))
  )

/** A `MediaStore` of files in a temporary directory, for migrations whose files no test looks at. */
export const TemporaryMediaStoreLive = Layer.unwrap(Effect.map(temporaryDirectory("shiori-media-"), MediaStore.files))

/**
 * Applies the migrations numbered up to `last` that the database of the `SqlClient` lacks (with the
 * `MediaStore` given to migrations, src/platform/Database.ts); answers those it applied.
 */
export const migrateUpTo = (last: number) =>
  PgMigrator.run({ loader: Effect.map(migrationLoader, (all) => all.filter(([id]) => id <= last)) }).pipe(
    Effect.provide(NodeServices.layer)
  )
