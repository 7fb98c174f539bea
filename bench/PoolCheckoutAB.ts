/**
 * `npx tsx bench/PoolCheckoutAB.ts`: what the process's own pool client (src/platform/PoolCheckout.ts:
 * a deadline on the wait for a free connection, the pool's use counted) costs per statement, against
 * @effect/sql-pg's `PgClient.make` with the same settings, in one process on one embedded PostgreSQL.
 *
 * Both clients run the same work in turn, `BENCH_AB_ROUNDS` (5) times, taking turns to go first, so
 * that a change in the machine's load falls on both alike: `SELECT 1` statements from `BENCH_POOL_FIBERS` (16) fibers on a
 * pool of `BENCH_POOL_SIZE` (8) connections, so that half of the checkouts find the pool full and
 * queue; then transactions of two statements. Prints the median CPU time of this process per
 * statement (the steadier number on a shared machine) and the median statements per second.
 */
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect } from "effect"
import * as Reactivity from "effect/reactivity/Reactivity"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { startEmbeddedPostgres } from "../src/platform/EmbeddedPostgres.js"
import { makeCheckedClient, makePool } from "../src/platform/PoolCheckout.js"

const rounds = Number(process.env.BENCH_AB_ROUNDS ?? 5)
const fibers = Number(process.env.BENCH_POOL_FIBERS ?? 16)
const size = Number(process.env.BENCH_POOL_SIZE ?? 8)
const statements = Number(process.env.BENCH_POOL_STATEMENTS ?? 40_000)

interface Measured {
  readonly cpuMicros: number
  readonly perSecond: number
}

/** `count` runs of `work` spread over `fibers` fibers: CPU of this process per run, and runs per second. */
const measure = (count: number, work: Effect.Effect<unknown, unknown>) =>
  Effect.gen(function*() {
    const cpu = process.cpuUsage()
    const started = performance.now()
    yield* Effect.forEach(
      Array.from({ length: fibers }),
      () => Effect.repeat(work, { times: Math.ceil(count / fibers) - 1 }),
      { concurrency: "unbounded", discard: true }
    )
    const seconds = (performance.now() - started) / 1000
    const used = process.cpuUsage(cpu)
    return { cpuMicros: (used.user + used.system) / count, perSecond: count / seconds } satisfies Measured
  })

const median = (xs: ReadonlyArray<number>) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!

const program = Effect.gen(function*() {
  const directory = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-pool-ab-"))
  Fs.chmodSync(directory, 0o755)
  yield* Effect.addFinalizer(() => Effect.sync(() => Fs.rmSync(directory, { recursive: true, force: true })))
  const cluster = yield* startEmbeddedPostgres({ dataDir: Path.join(directory, "data"), port: 0 })
  const config: PgClient.PgPoolConfig = {
    url: cluster.url("postgres"),
    maxConnections: size,
    idleTimeout: Duration.seconds(60),
    connectionTTL: Duration.minutes(15),
    preparedStatementCacheSize: 1_000
  }
  const stock = yield* PgClient.make(config)
  const pool = yield* makePool(config, { name: "primary", timeout: Duration.seconds(5) })
  const checked = yield* makeCheckedClient(config, pool)
  const clients = [["PgClient.make", stock], ["PoolCheckout", checked]] as const

  const results = new Map<string, { statement: Array<Measured>; transaction: Array<Measured> }>(
    clients.map(([label]) => [label, { statement: [], transaction: [] }])
  )
  for (const [, sql] of clients) {
    yield* measure(2_000, sql`SELECT 1`)
  }
  for (let round = 1; round <= rounds; round++) {
    // Each goes first in every other round: whatever the first leaves behind (garbage, a busier
    // PostgreSQL) falls on both alike.
    for (const [label, sql] of round % 2 === 1 ? clients : [...clients].reverse()) {
      const statement = yield* measure(statements, sql`SELECT 1`)
      const transaction = yield* measure(
        statements / 4,
        sql.withTransaction(Effect.andThen(sql`SELECT 1`, sql`SELECT 2`))
      )
      results.get(label)!.statement.push(statement)
      results.get(label)!.transaction.push(transaction)
      console.error(
        `round ${round} ${label}: ${statement.cpuMicros.toFixed(1)} µs/statement, ${
          transaction.cpuMicros.toFixed(1)
        } µs/transaction`
      )
    }
  }
  console.log(
    `${fibers} fibers on a pool of ${size}, ${statements} statements and ${
      statements / 4
    } transactions x ${rounds} rounds`
  )
  console.log(
    "| client | statement: CPU µs | statements/s | transaction (BEGIN, 2 statements, COMMIT): CPU µs | transactions/s |"
  )
  console.log("|---|---:|---:|---:|---:|")
  for (const [label] of clients) {
    const { statement, transaction } = results.get(label)!
    console.log(
      `| ${label} | ${median(statement.map((m) => m.cpuMicros)).toFixed(1)} | ${
        median(statement.map((m) => m.perSecond)).toFixed(0)
      } | ${median(transaction.map((m) => m.cpuMicros)).toFixed(1)} | ${
        median(transaction.map((m) => m.perSecond)).toFixed(0)
      } |`
    )
  }
})

await Effect.runPromise(program.pipe(Effect.scoped, Effect.provide(Reactivity.layer), Effect.orDie))
