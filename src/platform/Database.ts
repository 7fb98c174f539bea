/**
 * PostgreSQL: `DATABASE_URL` when set, otherwise a private embedded cluster under
 * `SHIORI_DATA_DIR`. The pool is provided once to both servers; migrations run at start-up.
 */
import { NodeServices } from "@effect/platform-node"
import { type Migrator, SqlClient, SqlError } from "effect/sql"
import { PgClient, PgMigrator } from "@effect/sql-pg"
import { Config, Context, Duration, Effect, Layer, Option, Redacted } from "effect"
import * as Crypto from "node:crypto"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import Pg from "pg"
import { startEmbeddedPostgres } from "./EmbeddedPostgres.js"

/** Where the database lives, for code that needs a raw connection (COPY in the seeder, LISTEN). */
export class DatabaseUrl extends Context.Service<DatabaseUrl, Redacted.Redacted>()("platform/DatabaseUrl") {}

export const migrationsDirectory = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../../migrations")

const embeddedDatabase = "shiori"

/** `DATABASE_URL`, or an embedded cluster kept alive for the layer's lifetime. */
export const DatabaseUrlLive = Layer.effect(
  DatabaseUrl,
  Effect.gen(function*() {
    const url = yield* Config.option(Config.redacted("DATABASE_URL"))
    if (Option.isSome(url)) return url.value
    const dataDir = yield* Config.string("SHIORI_DATA_DIR").pipe(Config.withDefault(".data"))
    const port = yield* Config.integer("EMBEDDED_PG_PORT").pipe(Config.withDefault(0))
    const cluster = yield* startEmbeddedPostgres({ dataDir: Path.join(dataDir, "postgres"), port })
    yield* ensureDatabase(cluster.url("postgres"), embeddedDatabase)
    yield* Effect.logInfo("embedded PostgreSQL started").pipe(
      Effect.annotateLogs({ port: cluster.port, data_dir: dataDir })
    )
    return cluster.url(embeddedDatabase)
  })
).pipe(Layer.orDie)

/** Creates `name` on the server behind `adminUrl` unless it exists. */
export const ensureDatabase = (adminUrl: Redacted.Redacted, name: string) =>
  withPgClient(adminUrl, async (client) => {
    const found = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [name])
    if (found.rowCount === 0) await client.query(`CREATE DATABASE ${quoteIdentifier(name)}`)
  })

export const quoteIdentifier = (name: string) => `"${name.replaceAll("\"", "\"\"")}"`

/** One raw `pg` connection for the duration of `use` (administration, COPY). */
export const withPgClient = <A>(url: Redacted.Redacted, use: (client: Pg.Client) => Promise<A>) =>
  Effect.acquireUseRelease(
    Effect.tryPromise(async () => {
      const client = new Pg.Client({ connectionString: Redacted.value(url) })
      client.on("error", () => {})
      await client.connect()
      return client
    }),
    (client) => Effect.tryPromise(() => use(client)),
    (client) => Effect.promise(() => client.end().catch(() => {}))
  ).pipe(Effect.orDie)

/** Parameterized reads and writes, one statement per text: what may be sent as a prepared statement. */
const PREPARABLE = /^\s*(?:SELECT|WITH|INSERT|UPDATE|DELETE)\b[^;]*;?\s*$/i
const statementNames = new Map<string, string>()

/**
 * The name a statement text is prepared under on every connection: `s_` and 24 hex digits of its
 * SHA-256, so the same text always maps to the same name.
 */
const statementName = (text: string): string => {
  let name = statementNames.get(text)
  if (name === undefined) {
    if (statementNames.size >= 10_000) statementNames.clear()
    name = `s_${Crypto.createHash("sha256").update(text).digest("hex").slice(0, 24)}`
    statementNames.set(text, name)
  }
  return name
}

/**
 * A pool client that sends parameterized statements as named prepared statements. PostgreSQL then
 * parses each distinct text once per connection and, after a few executions, plans it once
 * (`plan_cache_mode = auto` keeps custom plans where the parameters change the plan's cost). A
 * page with includes spent more time in PostgreSQL's planner than in executing its four small
 * statements. Texts without parameters, utility statements and anything with a second statement
 * go as before.
 */
class PreparingClient extends Pg.Client {
  override query(...args: Array<any>): any {
    const [text, values, callback] = args
    if (
      typeof text === "string" && Array.isArray(values) && values.length > 0 && typeof callback === "function" &&
      PREPARABLE.test(text)
    ) {
      return super.query({ name: statementName(text), text, values }, callback)
    }
    return (super.query as (...a: Array<any>) => any)(...args)
  }
}

/**
 * The shared pool. Every statement it runs is cut off after `DATABASE_STATEMENT_TIMEOUT_SECONDS`
 * (30 s; 0 for none): requests run to completion even when their client hangs up (HttpListener),
 * so without a limit a statement stuck on a hung database would hold its request, and shutdown,
 * forever. Migrations lift the limit for their own transaction (`migrationLoader`). A session left
 * idle inside a transaction for `DATABASE_IDLE_IN_TRANSACTION_SECONDS` (60 s; 0 for none) is ended
 * by PostgreSQL: an open transaction holds locks and keeps vacuum from cleaning up after it.
 */
export const SqlLive = Layer.unwrap(
  Effect.gen(function*() {
    const url = yield* DatabaseUrl
    const maxConnections = yield* Config.integer("DATABASE_POOL_SIZE").pipe(Config.withDefault(20))
    const statementTimeout = yield* Config.number("DATABASE_STATEMENT_TIMEOUT_SECONDS").pipe(Config.withDefault(30))
    const idleInTransaction = yield* Config.number("DATABASE_IDLE_IN_TRANSACTION_SECONDS").pipe(Config.withDefault(60))
    const connectTimeout = Duration.seconds(5)
    return PgClient.layerFromPool({
      acquire: Effect.acquireRelease(
        Effect.gen(function*() {
          const pool = new Pg.Pool({
            Client: PreparingClient,
            // Prepared statements live as long as their connection: recycling connections bounds
            // what a long-running process accumulates in PostgreSQL.
            maxLifetimeSeconds: 900,
            connectionString: Redacted.value(url),
            max: maxConnections,
            idleTimeoutMillis: 60_000,
            connectionTimeoutMillis: Duration.toMillis(connectTimeout),
            application_name: "shiori",
            ...(statementTimeout > 0 ? { statement_timeout: Math.round(statementTimeout * 1000) } : {}),
            ...(idleInTransaction > 0
              ? { idle_in_transaction_session_timeout: Math.round(idleInTransaction * 1000) }
              : {})
          })
          pool.on("error", () => {})
          // Fail at start-up, not at the first request, when the database cannot be reached.
          yield* Effect.tryPromise({
            try: () => pool.query("SELECT 1"),
            catch: (cause) => new SqlError.SqlError({ cause, message: "PgClient: Failed to connect" })
          }).pipe(
            Effect.timeoutFail({
              duration: connectTimeout,
              onTimeout: () =>
                new SqlError.SqlError({ cause: new Error("timed out"), message: "PgClient: Connection timed out" })
            }),
            Effect.tapError(() => Effect.promise(() => pool.end().catch(() => {})))
          )
          return pool
        }),
        (pool) => Effect.promise(() => pool.end().catch(() => {})).pipe(Effect.timeoutOption("1 second"))
      ),
      applicationName: "shiori"
    })
  })
).pipe(Layer.orDie)

/**
 * The numbered files of `migrations/`, imported from here (not from inside node_modules) so the
 * same loader works under tsx, vitest and compiled JavaScript.
 */
export const migrationLoader: Migrator.Loader = Effect.sync(() =>
  Fs.readdirSync(migrationsDirectory)
    .map((file) => /^(\d+)_([^.]+)\.(ts|js)$/.exec(file))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m): Migrator.ResolvedMigration => [
      Number(m[1]),
      m[2]!,
      Effect.promise(() => import(pathToFileURL(Path.join(migrationsDirectory, m[0])).href)).pipe(
        // A migration may rebuild a large table: no statement timeout inside the migration transaction.
        Effect.map((module: { default: Effect.Effect<unknown, unknown, SqlClient.SqlClient> }) =>
          Effect.andThen(
            Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SET LOCAL statement_timeout = 0`),
            module.default
          )
        )
      )
    ])
    .sort((a, b) => a[0] - b[0])
)

export const MigratorLive = PgMigrator.layer({ loader: migrationLoader }).pipe(
  Layer.provide(NodeContext.layer),
  Layer.orDie
)
