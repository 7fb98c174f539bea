/**
 * A fresh database per test file, cloned from the migrated template of the run.
 */
import { ConfigProvider, Effect, Layer, Redacted } from "effect"
import * as Crypto from "node:crypto"
import { inject } from "vitest"
import { DatabaseUrl, quoteIdentifier, SqlLive, withPgClient } from "../../src/platform/Database.js"

const withDatabase = (url: string, name: string) => {
  const u = new URL(url)
  u.pathname = `/${name}`
  return u.toString()
}

/** `DatabaseUrl` of a new database; dropped when the layer is released. */
export const TestDatabaseUrlLive = Layer.effect(
  DatabaseUrl,
  Effect.gen(function*() {
    const admin = Redacted.make(inject("pgAdminUrl"))
    const template = inject("pgTemplate")
    const name = `shiori_test_${Crypto.randomBytes(6).toString("hex")}`
    yield* Effect.acquireRelease(
      withPgClient(
        admin,
        (c) => c.query(`CREATE DATABASE ${quoteIdentifier(name)} TEMPLATE ${quoteIdentifier(template)}`)
      ),
      () =>
        withPgClient(admin, (c) => c.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(name)} WITH (FORCE)`)).pipe(
          Effect.ignore
        )
    )
    return Redacted.make(withDatabase(inject("pgAdminUrl"), name))
  })
)

/**
 * The servers' pool (`SqlLive`: prepared statements, statement timeout) over a fresh database, plus its url.
 * The pool size is laid over the settings in force (`testConfig`'s), not in place of them.
 */
export const TestSqlLive = Layer.fresh(SqlLive).pipe(
  Layer.provide(
    ConfigProvider.layerAdd(ConfigProvider.fromEnv({ env: { DATABASE_POOL_SIZE: "10" } }), { asPrimary: true })
  ),
  Layer.provideMerge(TestDatabaseUrlLive)
)
