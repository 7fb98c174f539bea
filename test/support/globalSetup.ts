/**
 * One PostgreSQL server for the whole run: `TEST_DATABASE_URL`'s server when set, otherwise an
 * embedded cluster in a temporary directory. A template database is migrated once; each test file
 * clones it (`CREATE DATABASE ... TEMPLATE`), so files never see each other's rows.
 */
import { NodeServices } from "@effect/platform-node"
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { Effect, Exit, Layer, Redacted, Scope } from "effect"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import type { TestProject } from "vitest/node"
import { migrationLoader, quoteIdentifier, withPgClient } from "../../src/platform/Database.js"
import { startEmbeddedPostgres } from "../../src/platform/EmbeddedPostgres.js"
import { MediaStore } from "../../src/platform/MediaStore.js"

declare module "vitest" {
  export interface ProvidedContext {
    /** Superuser URL of the test server's `postgres` database (for CREATE DATABASE). */
    pgAdminUrl: string
    /** Migrated template every test database is cloned from. */
    pgTemplate: string
  }
}

const withDatabase = (url: string, name: string) => {
  const u = new URL(url)
  u.pathname = `/${name}`
  return u.toString()
}

export default async function setup(project: TestProject) {
  const scope = Effect.runSync(Scope.make())
  let adminUrl: string
  let dataDir: string | undefined
  if (process.env.TEST_DATABASE_URL) {
    adminUrl = process.env.TEST_DATABASE_URL
  } else {
    dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-test-pg-"))
    const cluster = await Effect.runPromise(
      Scope.provide(startEmbeddedPostgres({ dataDir: Path.join(dataDir, "data"), port: 0 }), scope)
    )
    adminUrl = Redacted.value(cluster.url("postgres"))
  }
  const template = `shiori_template_${process.pid}`
  await Effect.runPromise(withPgClient(Redacted.make(adminUrl), async (client) => {
    await client.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(template)}`)
    await client.query(`CREATE DATABASE ${quoteIdentifier(template)}`)
  }))
  // The template holds no avatars, so migrations/0030 writes nothing to this store.
  const mediaDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-test-media-"))
  await Effect.runPromise(
    PgMigrator.run({ loader: migrationLoader }).pipe(
      Effect.provide(
        Layer.mergeAll(
          PgClient.layer({ url: Redacted.make(withDatabase(adminUrl, template)) }),
          NodeServices.layer,
          MediaStore.files(mediaDir)
        )
      ),
      Effect.scoped
    )
  ).finally(() => Fs.rmSync(mediaDir, { recursive: true, force: true }))
  project.provide("pgAdminUrl", adminUrl)
  project.provide("pgTemplate", template)

  return async () => {
    await Effect.runPromise(withPgClient(Redacted.make(adminUrl), async (client) => {
      await client.query(`DROP DATABASE IF EXISTS ${quoteIdentifier(template)} WITH (FORCE)`)
    })).catch(() => {})
    await Effect.runPromise(Scope.close(scope, Exit.void))
    if (dataDir) Fs.rmSync(dataDir, { recursive: true, force: true })
  }
}
