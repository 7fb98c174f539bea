/**
 * PostgreSQL: `DATABASE_URL` when set, otherwise a private embedded cluster under
 * `SHIORI_DATA_DIR`. The pool is provided once to both servers; migrations run at start-up.
 *
 * With `DATABASE_READ_URL`, a second pool on a streaming read replica serves the catalog's reads
 * when it is fresh enough (src/platform/ReadReplica.ts); unset, there is no second pool.
 *
 * The pool is @effect/sql-pg's. The `pg` driver remains for `withPgClient`, one raw connection to
 * any database: creating the embedded database from the `postgres` one, and the administration and
 * neighbour connections tests open on the side.
 */
import { NodeServices } from "@effect/platform-node"
import { PgClient, PgMigrator, PgTypes } from "@effect/sql-pg"
import { Config, Context, Duration, Effect, Layer, Option, Redacted, Result } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import { type Migrator, SqlClient, SqlError } from "effect/sql"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"
import Pg from "pg"
import { DatabaseDeadline, makeDatabaseDeadline } from "./DatabaseDeadline.js"
import { startEmbeddedPostgres } from "./EmbeddedPostgres.js"
import { MediaStore } from "./MediaStore.js"
import { DatabasePools, makeCheckedClient, makePool, type PoolCheckout, type PoolName } from "./PoolCheckout.js"
import { makeReadReplica, READ_APPLICATION_NAME, ReadRouting } from "./ReadReplica.js"

/** Where the database lives, for code that needs a raw connection (COPY in the seeder, LISTEN). */
export class DatabaseUrl extends Context.Service<DatabaseUrl, Redacted.Redacted>()("platform/DatabaseUrl") {}

export const migrationsDirectory = Path.resolve(Path.dirname(fileURLToPath(import.meta.url)), "../../migrations")

const embeddedDatabase = "shiori"

/** `DATABASE_URL`, or an embedded cluster kept alive for the layer's lifetime. */
export const DatabaseUrlLive = Layer.effect(
  DatabaseUrl,
  Effect.gen(function*() {
    const url = yield* Config.option(Config.Redacted("DATABASE_URL"))
    if (Option.isSome(url)) return url.value
    const dataDir = yield* Config.String("SHIORI_DATA_DIR").pipe(Config.withDefault(".data"))
    const port = yield* Config.Int("EMBEDDED_PG_PORT").pipe(Config.withDefault(0))
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

/** Statements each connection keeps prepared (least recently used ones are closed beyond that). */
const PREPARED_STATEMENTS = 1_000

/**
 * The shared pool (@effect/sql-pg's own: it speaks the wire protocol and sends every statement as a
 * named prepared statement). PostgreSQL then parses each distinct text once per connection and,
 * after a few executions, plans it once (`plan_cache_mode = auto` keeps custom plans where the
 * parameters change the plan's cost). A page with includes spent more time in PostgreSQL's planner
 * than in executing its four small statements. Each connection keeps up to `PREPARED_STATEMENTS`
 * of them, more than the application has distinct texts.
 *
 * Every statement it runs is cut off after `DATABASE_STATEMENT_TIMEOUT_SECONDS` (30 s; 0 for none):
 * requests run to completion even when their client hangs up (HttpListener), so without a limit a
 * statement stuck on a hung database would hold its request, and shutdown, forever. Migrations lift
 * the limit for their own transaction (`migrationLoader`). A session left idle inside a transaction
 * for `DATABASE_IDLE_IN_TRANSACTION_SECONDS` (60 s; 0 for none) is ended by PostgreSQL: an open
 * transaction holds locks and keeps vacuum from cleaning up after it. Both are session settings sent
 * when each connection starts.
 *
 * Those limits are enforced by PostgreSQL, so they do nothing when the database does not answer at
 * all. The client's own deadlines (docs/deploying.md, "When the database misbehaves"): opening a
 * connection may take `DATABASE_ACQUIRE_TIMEOUT_SECONDS` (5 s; 0 for no limit), and a connection
 * left waiting `DATABASE_QUERY_TIMEOUT_SECONDS` (1 s; 0 for no watch) without a byte is closed when
 * a probe finds the database frozen (DatabaseDeadline.ts, which owns every connection's socket).
 * Migrations need no exception: a long statement of a database that answers the probe runs on.
 */
/**
 * `bigint` (int8) columns, `count(*)` included, read as decimal strings, as they were with `pg` and as
 * the row schemas expect: ids are strings on the wire, and a JavaScript `bigint` is not JSON. Values
 * sent as `bigint` (or numbers past 32 bits) are written as int8, as the driver does by default.
 */
const types = PgTypes.makeRegistry()
types.register<string | number | bigint>(PgTypes.OID.int8, {
  decode: (bytes) =>
    bytes.length === 8
      ? Result.succeed(new DataView(bytes.buffer, bytes.byteOffset, 8).getBigInt64(0).toString())
      : Result.fail(new PgTypes.CodecError({ message: `int8 of ${bytes.length} bytes` })),
  encode: (value) => {
    try {
      const out = new Uint8Array(8)
      new DataView(out.buffer).setBigInt64(0, BigInt(value))
      return Result.succeed(out)
    } catch (cause) {
      return Result.fail(new PgTypes.CodecError({ message: `not an int8: ${String(value)} (${String(cause)})` }))
    }
  }
})

/** Database, host and port of a `postgres://` URL, as far as it names them. */
const spanTarget = (url: Redacted.Redacted): { database?: string; host?: string; port?: number } => {
  try {
    const parsed = new URL(Redacted.value(url))
    const database = decodeURIComponent(parsed.pathname.replace(/^\//, ""))
    return {
      ...(database === "" ? {} : { database }),
      ...(parsed.hostname === "" ? {} : { host: parsed.hostname }),
      ...(parsed.port === "" ? {} : { port: Number(parsed.port) })
    }
  } catch {
    return {}
  }
}

export const SqlLive = Layer.unwrap(
  Effect.gen(function*() {
    const url = yield* DatabaseUrl
    const maxConnections = yield* Config.Int("DATABASE_POOL_SIZE").pipe(Config.withDefault(20))
    const statementTimeout = yield* Config.Number("DATABASE_STATEMENT_TIMEOUT_SECONDS").pipe(Config.withDefault(30))
    const idleInTransaction = yield* Config.Number("DATABASE_IDLE_IN_TRANSACTION_SECONDS").pipe(Config.withDefault(60))
    const acquireSeconds = yield* Config.Number("DATABASE_ACQUIRE_TIMEOUT_SECONDS").pipe(Config.withDefault(5))
    const acquireTimeout = acquireSeconds > 0 ? Duration.seconds(acquireSeconds) : Duration.infinity
    const queryTimeout = Duration.seconds(
      yield* Config.Number("DATABASE_QUERY_TIMEOUT_SECONDS").pipe(Config.withDefault(1))
    )
    const readUrl = yield* Config.option(Config.Redacted("DATABASE_READ_URL"))
    const connectionTo = (url: Redacted.Redacted, applicationName: string) => ({
      url,
      // The SQL spans' target (`db.namespace`, `server.address`, `server.port`) comes from these
      // fields, not from the URL: repeat what the URL says.
      ...spanTarget(url),
      types,
      connectTimeout: acquireTimeout,
      preparedStatementCacheSize: PREPARED_STATEMENTS,
      applicationName,
      startupParameters: {
        ...(statementTimeout > 0 ? { statement_timeout: String(Math.round(statementTimeout * 1000)) } : {}),
        ...(idleInTransaction > 0
          ? { idle_in_transaction_session_timeout: String(Math.round(idleInTransaction * 1000)) }
          : {})
      }
    })
    /**
     * A pool on `url` under its own deadline watch, for the scope's lifetime, and the checkout every
     * statement takes its connection with (PoolCheckout.ts: the wait for a free connection is bounded
     * by the same `DATABASE_ACQUIRE_TIMEOUT_SECONDS`).
     */
    const pool = (
      url: Redacted.Redacted,
      options: { readonly name: PoolName; readonly size: number; readonly applicationName: string }
    ) =>
      Effect.gen(function*() {
        const connection = connectionTo(url, options.applicationName)
        const deadline = yield* makeDatabaseDeadline({ connection, url, deadline: queryTimeout })
        // The pool's own connections, counted (the deadline's streams also serve the listeners).
        let open = 0
        const watched = deadline.stream
        const stream = watched === undefined ? undefined : () => {
          const socket = watched()
          open++
          socket.once("close", () => open--)
          return socket
        }
        const checkout = yield* makePool({
          ...connection,
          ...(stream === undefined ? {} : { stream }),
          maxConnections: options.size,
          idleTimeout: Duration.seconds(60),
          // Prepared statements live as long as their connection: recycling connections bounds
          // what a long-running process accumulates in PostgreSQL.
          connectionTTL: Duration.minutes(15)
        }, {
          name: options.name,
          timeout: acquireTimeout,
          open: stream === undefined ? undefined : () => open
        })
        return { checkout, deadline }
      })
    // Fail at start-up, not at the first request, when the database cannot be reached (the pool opens
    // connections only when asked for one).
    const reachable = (sql: SqlClient.SqlClient) =>
      sql`SELECT 1`.pipe(
        Effect.timeoutOrElse({
          duration: acquireTimeout,
          orElse: () =>
            Effect.fail(
              new SqlError.SqlError({
                reason: new SqlError.ConnectionError({
                  cause: new Error("timed out"),
                  message: "PgClient: Connection timed out",
                  operation: "connect"
                })
              })
            )
        })
      )
    const primaryPool = pool(url, { name: "primary", size: maxConnections, applicationName: "shiori" })

    const provided = (
      sql: PgClient.PgClient,
      deadline: DatabaseDeadline["Service"],
      pools: ReadonlyArray<PoolCheckout>
    ) =>
      Context.make(PgClient.PgClient, sql).pipe(
        Context.add(SqlClient.SqlClient, sql),
        Context.add(DatabaseDeadline, deadline),
        Context.add(DatabasePools, pools)
      )
    if (Option.isNone(readUrl)) {
      return Layer.effectContext(Effect.gen(function*() {
        const primary = yield* primaryPool
        const sql = yield* makeCheckedClient(primary.checkout.config, primary.checkout)
        yield* reachable(sql)
        return provided(sql, primary.deadline, [primary.checkout])
      })).pipe(Layer.provide(Reactivity.layer))
    }
    // A read replica (src/platform/ReadReplica.ts): a second pool, same settings, its own size. It is
    // not required to answer at start-up: until it does, reads stay on the primary.
    const readPoolSize = yield* Config.Int("DATABASE_READ_POOL_SIZE").pipe(Config.withDefault(maxConnections))
    const pollInterval = Duration.millis(
      yield* Config.Int("DATABASE_READ_POLL_MILLIS").pipe(Config.withDefault(100))
    )
    const staleAfter = Duration.millis(yield* Config.Int("DATABASE_READ_STALE_MILLIS").pipe(Config.withDefault(1000)))
    return Layer.effectContext(
      Effect.gen(function*() {
        const primary = yield* primaryPool
        const replica = yield* pool(readUrl.value, {
          name: "replica",
          size: readPoolSize,
          applicationName: READ_APPLICATION_NAME
        })
        const { client, routing } = yield* makeReadReplica(primary.checkout, replica.checkout, {
          pollInterval,
          staleAfter
        })
        // The routed client runs this on the primary (nothing here reads through the replica).
        yield* reachable(client)
        return Context.add(
          provided(client, primary.deadline, [primary.checkout, replica.checkout]),
          ReadRouting,
          routing
        )
      })
    ).pipe(Layer.provide(Reactivity.layer))
  })
).pipe(Layer.orDie)

/**
 * The numbered files of `migrations/`, imported from here (not from inside node_modules) so the
 * same loader works under tsx, vitest and compiled JavaScript. A migration may use the `MediaStore`
 * (migrations/0030 moves avatars' bytes into it): the loader takes the one the process runs with
 * and hands it to every migration.
 */
export const migrationLoader: Migrator.Loader<MediaStore> = Effect.gen(function*() {
  const media = yield* MediaStore
  const files = yield* Effect.sync(() => Fs.readdirSync(migrationsDirectory))
  return files
    .map((file) => /^(\d+)_([^.]+)\.(ts|js)$/.exec(file))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m): Migrator.ResolvedMigration => [
      Number(m[1]),
      m[2]!,
      Effect.promise(() => import(pathToFileURL(Path.join(migrationsDirectory, m[0])).href)).pipe(
        // A migration may rebuild a large table: no statement timeout inside the migration transaction.
        Effect.map((module: { default: Effect.Effect<unknown, unknown, SqlClient.SqlClient | MediaStore> }) =>
          Effect.andThen(
            Effect.flatMap(SqlClient.SqlClient, (sql) => sql`SET LOCAL statement_timeout = 0`),
            module.default
          ).pipe(Effect.provideService(MediaStore, media))
        )
      )
    ])
    .sort((a, b) => a[0] - b[0])
})

/** Applies pending migrations when built; needs the `MediaStore` (`MediaStore.layer`, provided once to the app). */
export const MigratorLive = PgMigrator.layer({ loader: migrationLoader }).pipe(
  Layer.provide(NodeServices.layer),
  Layer.orDie
)
