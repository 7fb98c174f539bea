/**
 * Loads the demo catalog (Generate.ts) into an empty catalog with PostgreSQL COPY.
 *
 * It talks to PostgreSQL through its own `pg` client (with `pg-copy-streams`), not through
 * `effect/sql`'s `SqlClient`: COPY ... FROM STDIN streams are not part of the SqlClient interface,
 * and the generator runs on worker threads that hand over raw COPY text. `pg` stays here.
 *
 * One transaction, so a failed or interrupted seed leaves nothing behind:
 * 1. lock (advisory), and refuse unless every seeded table is empty;
 * 2. drop the seeded tables' foreign keys, checks, keys and indexes (remembering their definitions)
 *    and truncate the tables, so COPY ... FREEZE writes frozen, all-visible rows (no hint-bit rewrites
 *    or vacuum afterwards); the change-feed triggers are off: the feed rows are staged in a
 *    temporary table and numbered here, in `updated_at` order (migrations/0010), so the seeded
 *    history reads forward in time like the live feed;
 * 3. generate the works in ranges of `chunkSize` as COPY text, on worker threads for large catalogs,
 *    while this thread COPYs the finished ranges in order; then the shared entities;
 * 4. rebuild keys and indexes, then checks and foreign keys (validated for small seeds, see
 *    `validateConstraintsBelow`); move identity sequences past the loaded ids; ANALYZE; commit.
 */
import { Data, Effect, Redacted } from "effect"
import { createRequire } from "node:module"
import { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import { pathToFileURL } from "node:url"
import { Worker } from "node:worker_threads"
import Pg from "pg"
import { from as copyFrom } from "pg-copy-streams"
import { AdvisoryLockClass } from "../platform/AdvisoryLocks.js"
import { DatabaseUrl } from "../platform/Database.js"
import { type ChunkData, type ChunkTask, generateChunk } from "./CopyText.js"
import {
  addCounts,
  emptyCounts,
  generateShared,
  generateWorks,
  prepareCatalog,
  type PreparedCatalog,
  tableColumns,
  type TableName,
  tableNames,
  type WorkCounts
} from "./Generate.js"
import type { SeedWorkerData } from "./SeedWorker.js"

export class SeedError extends Data.TaggedError("SeedError")<{
  readonly message: string
  readonly cause?: unknown
}> {}

export interface SeedOptions {
  readonly works: number
  readonly seed: number
  /** Reference date for release dates and timestamps (default: now). */
  readonly now?: Date
  /** Generator threads for large catalogs (default 2; 0 generates on this thread). */
  readonly workers?: number
}

export interface SeedSummary {
  readonly works: number
  readonly liveWorks: number
  readonly nsfwWorks: number
  readonly mergedWorks: number
  readonly withdrawnWorks: number
  readonly rows: Readonly<Record<string, number>>
}

export type SeedResult =
  | { readonly status: "skipped"; readonly reason: string }
  | {
    readonly status: "seeded"
    readonly summary: SeedSummary
    readonly durationMs: number
    /** Milliseconds per phase: generate and copy, indexes, constraints, analyze, commit. */
    readonly phasesMs: Readonly<Record<string, number>>
  }

const chunkSize = 25_000
/**
 * From this many works on, foreign keys and check constraints are re-added `NOT VALID` (still
 * enforced for every later write; `ALTER TABLE ... VALIDATE CONSTRAINT` can check the loaded rows
 * online at any time). Smaller seeds validate them, which is how the tests prove the generator's
 * rows sound.
 */
const validateConstraintsBelow = 200_000
/** Below this many works everything is generated on the calling thread. */
const workerThreshold = 50_000

/**
 * Triggers off during COPY: the change-feed numbering (the seed numbers the rows itself, see
 * `numberFeeds`), the search row's copy of its work's ranking columns and the work's facet row (the
 * generator writes both).
 */
const stampTriggers = [
  ...(["catalog_changes", "catalog_redirects"] as const).flatMap((table) => [
    [table, `${table}_pending`] as const,
    [table, `${table}_publish`] as const
  ]),
  ["work_search", "work_search_from_work"],
  ["works", "work_facets_follow_work"],
  ...(["insert", "update", "delete"] as const).flatMap((event) => [
    ["work_tags", `work_facets_follow_work_tags_${event}`] as const,
    ["work_companies", `work_facets_follow_work_companies_${event}`] as const
  ])
] as const

// -------------------------------------------------------------------------------------------------
// Database helpers
// -------------------------------------------------------------------------------------------------

const connect = (url: Redacted.Redacted) =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: async () => {
        const client = new Pg.Client({ connectionString: Redacted.value(url), application_name: "shiori-seed" })
        client.on("error", () => {})
        await client.connect()
        return client
      },
      catch: (cause) => new SeedError({ message: "cannot connect to the database", cause })
    }),
    (client) => Effect.promise(() => client.end().catch(() => {}))
  )

const query = (client: Pg.Client, text: string, values?: ReadonlyArray<unknown>) =>
  Effect.tryPromise({
    try: () => client.query(text, values as Array<unknown> | undefined),
    catch: (cause) => new SeedError({ message: `seed statement failed: ${text.slice(0, 200)}`, cause })
  })

const quoteIdent = (name: string) => `"${name.replaceAll("\"", "\"\"")}"`
const seededTables = `(SELECT to_regclass(t) FROM unnest($1::text[]) t)`

interface Definition {
  readonly table: string
  readonly name: string
  readonly def: string
}

/**
 * Foreign keys touching the seeded tables, their check constraints, primary and unique keys, and
 * their other indexes.
 */
const saveDefinitions = (client: Pg.Client) =>
  Effect.gen(function*() {
    const checks = yield* query(
      client,
      `SELECT c.conrelid::regclass::text AS table, c.conname AS name, pg_get_constraintdef(c.oid) AS def
       FROM pg_constraint c
       WHERE c.contype = 'c' AND c.conrelid = ANY ${seededTables}
       ORDER BY 1, 2`,
      [tableNames]
    )
    const foreignKeys = yield* query(
      client,
      `SELECT c.conrelid::regclass::text AS table, c.conname AS name, pg_get_constraintdef(c.oid) AS def
       FROM pg_constraint c
       WHERE c.contype = 'f' AND (c.conrelid = ANY ${seededTables} OR c.confrelid = ANY ${seededTables})
       ORDER BY 1, 2`,
      [tableNames]
    )
    const keys = yield* query(
      client,
      `SELECT c.conrelid::regclass::text AS table, c.conname AS name, pg_get_constraintdef(c.oid) AS def
       FROM pg_constraint c
       WHERE c.contype IN ('p', 'u') AND c.conrelid = ANY ${seededTables}
       ORDER BY 1, 2`,
      [tableNames]
    )
    const indexes = yield* query(
      client,
      `SELECT i.indrelid::regclass::text AS table, i.indexrelid::regclass::text AS name,
              pg_get_indexdef(i.indexrelid) AS def
       FROM pg_index i
       WHERE i.indrelid = ANY ${seededTables}
         AND NOT EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = i.indexrelid)
       ORDER BY 1, 2`,
      [tableNames]
    )
    const unvalidated = (rows: ReadonlyArray<Definition>) =>
      rows.map((r) => ({ ...r, def: r.def.replace(/ NOT VALID$/, "") }))
    return {
      checks: unvalidated(checks.rows as ReadonlyArray<Definition>),
      foreignKeys: unvalidated(foreignKeys.rows as ReadonlyArray<Definition>),
      keys: keys.rows as ReadonlyArray<Definition>,
      indexes: indexes.rows as ReadonlyArray<Definition>
    }
  })

/** COPYs one table's part of a chunk; adds the loaded row count to `rows`. */
const copyTable = (
  client: Pg.Client,
  table: TableName,
  buffers: ReadonlyArray<Uint8Array>,
  rows: Record<string, number>
) =>
  Effect.tryPromise({
    try: async () => {
      const columns = tableColumns[table].map(quoteIdent).join(", ")
      const target = table === "catalog_changes" ? stagedChanges : quoteIdent(table)
      const stream = client.query(copyFrom(`COPY ${target} (${columns}) FROM STDIN WITH (FREEZE)`))
      await pipeline(Readable.from(buffers), stream)
      rows[table] = (rows[table] ?? 0) + stream.rowCount
    },
    catch: (cause) => new SeedError({ message: `COPY into ${table} failed`, cause })
  })

/** The change rows as generated (in entity order), before `numberFeeds` writes them in time order. */
const stagedChanges = "seed_catalog_changes"

/**
 * Numbers both feeds the way live commits would have: changes in `updated_at` order (ties by type
 * and id), redirects in `merged_at` order; then the shared position sequence continues after them.
 */
const numberFeeds = (client: Pg.Client) =>
  Effect.gen(function*() {
    yield* query(
      client,
      `INSERT INTO catalog_changes (target_object, id, updated_at, gone, position)
       SELECT target_object, id, updated_at, gone, row_number() OVER (ORDER BY updated_at, target_object, id)
       FROM ${stagedChanges}`
    )
    yield* query(client, `DROP TABLE ${stagedChanges}`)
    yield* query(
      client,
      `UPDATE catalog_redirects r SET position = o.n
       FROM (SELECT target_object, from_id, row_number() OVER (ORDER BY merged_at, target_object, from_id) AS n
             FROM catalog_redirects) o
       WHERE r.target_object = o.target_object AND r.from_id = o.from_id`
    )
    yield* query(
      client,
      `SELECT setval('catalog_change_seq', greatest(
         (SELECT max(position) FROM catalog_changes), (SELECT max(position) FROM catalog_redirects), 1))`
    )
  })

const copyChunk = (client: Pg.Client, data: ChunkData, rows: Record<string, number>, detail: Record<string, number>) =>
  Effect.forEach(
    tableNames,
    (table) => {
      const buffers = data[table]
      return buffers === undefined || buffers.length === 0
        ? Effect.void
        : timed(detail, `copy ${table}`, copyTable(client, table, buffers, rows))
    },
    { discard: true }
  )

// -------------------------------------------------------------------------------------------------
// Generation: on this thread, or on worker threads that run ahead of the COPYs
// -------------------------------------------------------------------------------------------------

interface ChunkSource {
  /** Chunk `index` (chunks are requested in order, each once). */
  readonly chunk: (index: number) => Effect.Effect<{ readonly counts: WorkCounts; readonly data: ChunkData }, SeedError>
}

const localSource = (prepared: PreparedCatalog, tasks: ReadonlyArray<ChunkTask>): ChunkSource => ({
  chunk: (index) =>
    Effect.try({
      try: () => {
        const { data, result } = generateChunk((sink) =>
          generateWorks(prepared, tasks[index].from, tasks[index].to, sink)
        )
        return { counts: result, data }
      },
      catch: (cause) => new SeedError({ message: "generating the demo catalog failed", cause })
    })
})

/** Starts the worker module, through tsx's loader when running from TypeScript sources. */
const startWorker = (data: SeedWorkerData): Worker => {
  const here = import.meta.url
  if (here.endsWith(".ts")) {
    const entry = new URL("./SeedWorker.ts", here).href
    // The ESM build of tsx's API (its CommonJS build cannot be imported from an ES module).
    const tsx = pathToFileURL(createRequire(here).resolve("tsx/esm/api").replace(/\.cjs$/, ".mjs")).href
    const boot = `import(${JSON.stringify(tsx)}).then((m) => { m.register(); return import(${JSON.stringify(entry)}) })`
    return new Worker(boot, { eval: true, workerData: data })
  }
  return new Worker(new URL("./SeedWorker.js", here), { workerData: data })
}

type ChunkResult = { readonly counts: WorkCounts; readonly data: ChunkData } | { readonly error: string }

/**
 * Generates chunks on worker threads, at most `ahead` chunks beyond the one being loaded (each chunk
 * of 25,000 works is about 90 MB of COPY text).
 */
const workerSource = (
  options: { readonly works: number; readonly seed: number; readonly nowMs: number; readonly workers: number },
  tasks: ReadonlyArray<ChunkTask>,
  ahead: number
) =>
  Effect.gen(function*() {
    const results = tasks.map(() => {
      let settle!: (result: ChunkResult) => void
      const promise = new Promise<ChunkResult>((resolve) => (settle = resolve))
      return { promise, settle }
    })
    let next = 0
    let consumed = 0
    const idle: Array<Worker> = []
    const pump = () => {
      while (idle.length > 0 && next < tasks.length && next < consumed + ahead) {
        idle.pop()!.postMessage(tasks[next++])
      }
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => {
        const workers: Array<Worker> = []
        for (let i = 0; i < Math.min(options.workers, tasks.length); i++) {
          const worker = startWorker({
            shioriSeedWorker: true,
            works: options.works,
            seed: options.seed,
            nowMs: options.nowMs
          })
          worker.on("message", (message: { index: number; counts?: WorkCounts; data?: ChunkData; error?: string }) => {
            results[message.index].settle(
              message.error === undefined
                ? { counts: message.counts!, data: message.data! }
                : { error: message.error }
            )
            idle.push(worker)
            pump()
          })
          worker.on("error", (error) => {
            for (const r of results) r.settle({ error: error.stack ?? error.message })
          })
          workers.push(worker)
          idle.push(worker)
        }
        pump()
        return workers
      }),
      (workers) => Effect.promise(() => Promise.all(workers.map((w) => w.terminate())))
    )
    return {
      chunk: (index) =>
        Effect.promise(() => results[index].promise).pipe(
          Effect.flatMap((result) => {
            consumed = index + 1
            pump()
            return "error" in result
              ? Effect.fail(new SeedError({ message: `seed worker failed: ${result.error}` }))
              : Effect.succeed(result)
          })
        )
    } satisfies ChunkSource
  })

const timed = <A, E, R>(phases: Record<string, number>, name: string, effect: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const start = Date.now()
    const result = yield* effect
    phases[name] = (phases[name] ?? 0) + Date.now() - start
    return result
  })

// -------------------------------------------------------------------------------------------------
// The seed
// -------------------------------------------------------------------------------------------------

/**
 * Seeds the demo catalog: `works` works generated deterministically from `seed`. A no-op (status
 * `skipped`, with the reason) when the catalog already holds data.
 */
export const seedCatalog = (options: SeedOptions) =>
  Effect.gen(function*() {
    const url = yield* DatabaseUrl
    const started = Date.now()
    const phases: Record<string, number> = {}
    /** Per table and per index timings, logged at debug level. */
    const detail: Record<string, number> = {}
    const client = yield* connect(url)

    yield* query(client, "BEGIN")
    const outcome = yield* Effect.gen(function*() {
      yield* query(client, "SELECT pg_advisory_xact_lock($1::int4, 0)", [AdvisoryLockClass.catalogSeed])
      const missing = yield* query(client, `SELECT t FROM unnest($1::text[]) t WHERE to_regclass(t) IS NULL`, [
        tableNames
      ])
      if (missing.rows.length > 0) {
        return yield* new SeedError({
          message: `catalog tables missing (run the migrations first): ${missing.rows.map((r) => r.t).join(", ")}`
        })
      }
      const nonEmpty: Array<string> = []
      for (const table of tableNames) {
        const found = yield* query(client, `SELECT EXISTS (SELECT 1 FROM ${quoteIdent(table)}) AS found`)
        if (found.rows[0].found) nonEmpty.push(table)
      }
      if (nonEmpty.length > 0) {
        return {
          status: "skipped",
          reason: `the catalog already holds data (${nonEmpty.slice(0, 4).join(", ")}${
            nonEmpty.length > 4 ? ", ..." : ""
          }); seeding only fills an empty catalog`
        } as const
      }

      yield* query(client, "SET LOCAL maintenance_work_mem = '1GB'")
      yield* query(client, "SET LOCAL synchronous_commit = off")
      const saved = yield* saveDefinitions(client)
      for (const constraint of [...saved.foreignKeys, ...saved.checks]) {
        yield* query(client, `ALTER TABLE ${constraint.table} DROP CONSTRAINT ${quoteIdent(constraint.name)}`)
      }
      for (const key of saved.keys) {
        yield* query(client, `ALTER TABLE ${key.table} DROP CONSTRAINT ${quoteIdent(key.name)}`)
      }
      for (const index of saved.indexes) yield* query(client, `DROP INDEX ${index.name}`)
      yield* query(client, `TRUNCATE ${tableNames.map(quoteIdent).join(", ")}`)
      for (const [table, trigger] of stampTriggers) {
        yield* query(client, `ALTER TABLE ${table} DISABLE TRIGGER ${trigger}`)
      }
      yield* query(
        client,
        `CREATE TEMPORARY TABLE ${stagedChanges} (LIKE catalog_changes INCLUDING DEFAULTS) ON COMMIT DROP`
      )

      // Generate and load.
      const nowMs = (options.now ?? new Date()).getTime()
      const prepared = prepareCatalog({ works: options.works, seed: options.seed, now: new Date(nowMs) })
      const tasks: Array<ChunkTask> = []
      for (let from = 1, index = 0; from <= prepared.works; from += chunkSize, index++) {
        tasks.push({ index, from, to: Math.min(prepared.works, from + chunkSize - 1) })
      }
      const workers = options.workers ?? 2
      const source = workers > 0 && prepared.works >= workerThreshold
        ? yield* workerSource({ works: prepared.works, seed: options.seed, nowMs, workers }, tasks, workers + 2)
        : localSource(prepared, tasks)
      const counts = emptyCounts(prepared)
      const rows: Record<string, number> = {}
      yield* timed(
        phases,
        "generate and copy",
        Effect.gen(function*() {
          for (const task of tasks) {
            const chunk = yield* source.chunk(task.index)
            addCounts(counts, chunk.counts)
            yield* copyChunk(client, chunk.data, rows, detail)
          }
          const shared = yield* Effect.try({
            try: () => generateChunk((sink) => generateShared(prepared, counts, sink)),
            catch: (cause) => new SeedError({ message: "generating the shared entities failed", cause })
          })
          yield* copyChunk(client, shared.data, rows, detail)
        })
      )

      // Keys, indexes, foreign keys, sequences, statistics.
      yield* timed(
        phases,
        "indexes",
        Effect.gen(function*() {
          yield* timed(detail, "feed positions", numberFeeds(client))
          for (const [table, trigger] of stampTriggers) {
            yield* query(client, `ALTER TABLE ${table} ENABLE TRIGGER ${trigger}`)
          }
          for (const key of saved.keys) {
            yield* timed(
              detail,
              `key ${key.name}`,
              query(client, `ALTER TABLE ${key.table} ADD CONSTRAINT ${quoteIdent(key.name)} ${key.def}`)
            )
          }
          for (const index of saved.indexes) yield* timed(detail, `index ${index.name}`, query(client, index.def))
        })
      )
      const notValid = prepared.works >= validateConstraintsBelow ? " NOT VALID" : ""
      yield* timed(
        phases,
        "constraints",
        Effect.forEach(
          [...saved.checks, ...saved.foreignKeys],
          (constraint) =>
            timed(
              detail,
              `constraint ${constraint.name}`,
              query(
                client,
                `ALTER TABLE ${constraint.table} ADD CONSTRAINT ${
                  quoteIdent(constraint.name)
                } ${constraint.def}${notValid}`
              )
            ),
          { discard: true }
        )
      )
      yield* advanceIdentities(client)
      yield* timed(phases, "analyze", query(client, `ANALYZE ${tableNames.map(quoteIdent).join(", ")}`))
      return {
        status: "seeded",
        summary: {
          works: prepared.works,
          liveWorks: counts.liveWorks,
          nsfwWorks: counts.nsfwWorks,
          mergedWorks: counts.mergedWorks,
          withdrawnWorks: counts.withdrawnWorks,
          rows
        }
      } as const
    }).pipe(
      Effect.scoped,
      Effect.onError(() => query(client, "ROLLBACK").pipe(Effect.ignore))
    )
    if (outcome.status === "skipped") {
      yield* query(client, "ROLLBACK")
      yield* Effect.logInfo(`seed skipped: ${outcome.reason}`)
      return outcome satisfies SeedResult
    }
    yield* timed(phases, "commit", query(client, "COMMIT"))
    yield* Effect.logDebug("seed timings").pipe(Effect.annotateLogs(detail))
    const durationMs = Date.now() - started
    yield* Effect.logInfo("demo catalog seeded").pipe(
      Effect.annotateLogs({ works: options.works, seed: options.seed, seconds: Math.round(durationMs / 1000) })
    )
    return { status: "seeded", summary: outcome.summary, durationMs, phasesMs: phases } satisfies SeedResult
  }).pipe(Effect.scoped, Effect.withSpan("catalog.seed"))

/** Moves every identity sequence of the seeded tables past the largest loaded id. */
const advanceIdentities = (client: Pg.Client) =>
  Effect.gen(function*() {
    const identities = yield* query(
      client,
      `SELECT a.attrelid::regclass::text AS table, a.attname AS column
       FROM pg_attribute a
       WHERE a.attidentity <> '' AND a.attrelid = ANY ${seededTables}`,
      [tableNames]
    )
    for (const { column, table } of identities.rows as Array<{ table: string; column: string }>) {
      yield* query(
        client,
        `SELECT setval(pg_get_serial_sequence($1, $2), greatest((SELECT max(${quoteIdent(column)}) FROM ${table}), 1))`,
        [table, column]
      )
    }
  })
