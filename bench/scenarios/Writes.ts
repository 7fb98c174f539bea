/**
 * Catalog writes (claims and edit proposals, bench/README.md "writes"): the real server
 * (`node dist/src/main.js`, catalog only) creating claims, approving pending claims, replaying
 * idempotent requests, creating, amending and merging edit proposals, next to a plain `node:http` +
 * `pg` baseline doing the same statements in one transaction (bench/baseline/ClaimWrites.ts), both
 * on the same database in the same run.
 *
 * The works are seeded once into `bench/.data-writes-<n>` (gitignored) and reused by later runs.
 * Each scenario starts from empty claim and proposal tables (`TRUNCATE claims, claim_events,
 * proposals, proposal_amendments, revisions, catalog_idempotency, catalog_quota_usage`): every
 * request of its warm-up and measured run takes the next live work (creation) or the next seeded
 * pending claim (decisions) or open proposal (amendments, merges), so none is refused because an
 * earlier request took its work or its proposal.
 *
 * Editor image uploads (`upload`): each request posts one of a few ~2 MB JPEGs generated at the
 * start, at 8 connections, with a paced probe of a cheap route on the same server beside the measured
 * run (its p99: whether the event loop stays free while pictures decode).
 *
 * The request budget and the daily quotas are configuration: the suite raises them out of the way
 * (`CATALOG_RATE_BURST`, `CATALOG_RATE_PER_SECOND`, `CATALOG_QUOTA_CLAIMS`, `CATALOG_QUOTA_DECISIONS`,
 * `CATALOG_QUOTA_PROPOSALS` and the others at 1e9, `CATALOG_QUOTA_MEDIA_BYTES` at 1e15). The rate limiter still runs on every request (leases of 1000
 * tokens from the shared bucket, one `rate_limit_take` round trip per lease) and every write still
 * counts its quota row: both are measured, neither refuses.
 */
import type autocannon from "autocannon"
import { Effect } from "effect"
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import Pg from "pg"
import sharp from "sharp"
import { AdvisoryLockClass } from "../../src/platform/AdvisoryLocks.js"
import {
  descendantsCpu,
  freePort,
  load,
  ownCpu,
  probe,
  type Proc,
  type Result,
  root,
  settings,
  settle,
  startProcess,
  type Target
} from "../Harness.js"
import { unlimitedBudget } from "./Catalog.js"

const works = Number(process.env.BENCH_WRITES_WORKS ?? 100_000)
/** Idempotency keys the replay scenario cycles through (each stored once, then replayed). */
const replayKeys = Number(process.env.BENCH_WRITES_REPLAY_KEYS ?? 256)
/**
 * Proposal requests per second assumed when sizing the warm-up's pool of open proposals (amendments,
 * merges); the measured pool follows the warm-up's rate.
 */
const proposalRate = Number(process.env.BENCH_WRITES_PROPOSAL_RATE ?? 1000)
/**
 * `BENCH_WRITES_ONLY`: comma-separated scenarios to run: create, lock (the two baseline diagnostics of
 * the event lock; with create), decide, replay, propose, amend, merge, quota (the baseline merge, vote
 * and playtime batch without the quota row; with those), merge-one, vote, news, playtimes, upload.
 * Default: all.
 */
const only = new Set(
  (process.env.BENCH_WRITES_ONLY ??
    "create,lock,decide,replay,propose,amend,merge,quota,merge-one,vote,news,playtimes,upload")
    .split(",").map((s) => s.trim())
)
/** Works per playtime batch (the route's maximum). */
const PLAYTIME_BATCH = 100
/** Users the playtime batches rotate over (each with its own `playtimes:write` key). */
const PLAYTIME_USERS = 4
const HIGH = "1000000000"
/** The media quota counts bytes: a petabyte a day is out of the way of any run. */
const HIGH_BYTES = "1000000000000000"
const limitsEnv = {
  ...unlimitedBudget,
  CATALOG_QUOTA_CLAIMS: HIGH,
  CATALOG_QUOTA_DECISIONS: HIGH,
  CATALOG_QUOTA_PROPOSALS: HIGH,
  CATALOG_QUOTA_VOTES: HIGH,
  CATALOG_QUOTA_NEWS: HIGH,
  CATALOG_QUOTA_PLAYTIMES: HIGH,
  CATALOG_QUOTA_MEDIA_BYTES: HIGH_BYTES
}
/** Distinct pictures the upload scenario sends in turn. */
const UPLOAD_PICTURES = 8
/** Upload connections: the target is stated at 8, not at the suite's `BENCH_CONNECTIONS`. */
const UPLOAD_CONNECTIONS = 8
/** Requests per second of the event-loop probe beside the uploads (one connection). */
const PROBE_RATE = 50
const UPLOAD_TARGET_P99 = 500
/**
 * Pictures each side decodes at once: `CATALOG_IMAGE_CONCURRENCY` (src/catalog/media/Media.ts; both
 * processes inherit it from this one), by default the cores but one.
 */
const DECODES = Number(process.env.CATALOG_IMAGE_CONCURRENCY ?? Math.max(1, Os.availableParallelism() - 1))

/**
 * Photo-like JPEGs of 2000 x 1500 (about 2 MB each at quality 90 without chroma subsampling): a
 * radial and two linear gradients, a diagonal wave, and independent noise per channel (what keeps
 * JPEG from compressing them far below a camera's file). Deterministic per seed, so every run sends
 * the same bytes and the stored images have the same hashes.
 */
const photo = (seed: number): Promise<Buffer> => {
  const width = 2000
  const height = 1500
  let state = (Math.imul(seed + 1, 2654435761) >>> 0) || 1
  const random = () => {
    state ^= state << 13
    state ^= state >>> 17
    state ^= state << 5
    return (state >>> 0) / 4294967296
  }
  const noise = () => (random() - 0.5) * 40
  const clamp = (n: number) => Math.max(0, Math.min(255, n))
  const cx = random() * width
  const cy = random() * height
  const [r, g] = [random() * 255, random() * 255]
  const pixels = Buffer.alloc(width * height * 3)
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const i = (y * width + x) * 3
      const d = Math.hypot(x - cx, y - cy) / 1500
      pixels[i] = clamp(r * (1 - d) + (x / width) * 120 + noise())
      pixels[i + 1] = clamp(g * d + (y / height) * 120 + noise())
      pixels[i + 2] = clamp(128 + 100 * Math.sin((x + y) / 97 + seed) + noise())
    }
  }
  return sharp(pixels, { raw: { width, height, channels: 3 } })
    .jpeg({ quality: 90, chromaSubsampling: "4:4:4" })
    .toBuffer()
}

/** What the event-lock sampler saw in a measured run (pg_locks and pg_stat_activity every 50 ms). */
interface LockSample {
  readonly samples: number
  /** Share of samples in which a backend held `claim_event_lock()`. */
  readonly held: number
  /** Mean number of backends waiting for it. */
  readonly waiting: number
  /** Share of the samples with the lock held in which its holder was idle in transaction (waiting for its client). */
  readonly holderIdle: number
  /** Mean number of backends waiting for a row lock (another transaction's row), and of those on the quota row. */
  readonly rowWaiting: number
  readonly quotaWaiting: number
}

/** The members of an upload's answer the suite compares (schema/Catalog/EditImage.ts). */
interface EditImageAnswer {
  readonly object: string
  readonly preset: string
  readonly hash: string
  readonly width: number
  readonly height: number
  readonly thumbhash: string
  readonly size_bytes: number
  readonly sexual: null
  readonly violence: null
}

interface Row extends Result {
  readonly ratio?: string
  readonly target?: string
  readonly met?: boolean
  readonly lock?: LockSample
  readonly note?: string
  /** The paced probe of a cheap route on the same server during the measured run. */
  readonly probe?: Result
}

const CLIENT_BOUND = 0.9
const loadavg = () => Os.loadavg().map((n) => n.toFixed(2)).join(", ")
const pct = (n: number) => `${(n * 100).toFixed(0)}%`

const report = (rows: ReadonlyArray<Row>) =>
  [
    "| scenario | req/s | p50 ms | p99 ms | non-2xx | errors | vs baseline | CPU ms/req: server + db | " +
    "load generator busy | event lock held | lock waiters (mean) | holder idle in tx | row-lock waiters (mean): all / quota row | " +
    "event loop probe p99 ms | target | met |",
    "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|:-:|",
    ...rows.map((r) =>
      `| ${r.name} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.errors} | ${r.ratio ?? ""} | ` +
      `${r.cpuMs === undefined ? "" : `${r.cpuMs.server!.toFixed(2)} + ${r.cpuMs.db!.toFixed(2)} db`} | ` +
      `${pct(r.clientBusy)}${r.clientBusy >= CLIENT_BOUND ? " (bound)" : ""} | ` +
      `${r.lock === undefined ? "" : pct(r.lock.held)} | ${r.lock === undefined ? "" : r.lock.waiting.toFixed(1)} | ` +
      `${r.lock === undefined ? "" : pct(r.lock.holderIdle)} | ` +
      `${r.lock === undefined ? "" : `${r.lock.rowWaiting.toFixed(1)} / ${r.lock.quotaWaiting.toFixed(1)}`} | ` +
      `${r.probe === undefined ? "" : r.probe.p99} | ` +
      `${r.target ?? ""} | ${r.met === undefined ? "" : r.met ? "yes" : "**no**"} |`
    )
  ].join("\n")

const ratioOf = (row: Result, base: Result) => `${(row.rps / base.rps).toFixed(2)}x`

export const writes = async (): Promise<string> => {
  const dataDir = Path.join(root, "bench", `.data-writes-${works}`)
  const pgPort = await freePort()
  const port = await freePort()
  const databaseUrl = `postgres://postgres@127.0.0.1:${pgPort}/shiori`
  const env = {
    SHIORI_DATA_DIR: dataDir,
    EMBEDDED_PG_PORT: String(pgPort),
    CATALOG_PORT: String(port),
    IDENTITY_PORT: String(await freePort()),
    SHIORI_SERVE: "catalog",
    SHIORI_DEMO_WORKS: "0",
    ...limitsEnv
  }
  const cli = (args: ReadonlyArray<string>, extra: Record<string, string> = {}) =>
    JSON.parse(
      execFileSync(process.execPath, ["dist/src/cli/main.js", ...args, "--json"], {
        cwd: root,
        env: { ...process.env, LOG_LEVEL: "Warning", ...env, ...extra },
        maxBuffer: 16 * 1024 * 1024
      }).toString()
    )
  const notes: Array<string> = [`Load average before: ${loadavg()} (${Os.cpus().length} CPUs).`]

  console.error(`writes bench: seeding ${works} works into ${dataDir} (skipped when present)...`)
  const seeded = cli(["seed", "--works", String(works)])
  notes.push(
    seeded.status === "seeded"
      ? `Seeded ${works} works in ${(seeded.duration_ms / 1000).toFixed(0)} s.`
      : `Works (${works}) reused from ${Path.relative(root, dataDir)}.`
  )

  // The upload scenario's pictures, and what the pipeline makes of each (src/platform/Images.ts, in this
  // process: the same bytes and hashes both servers store, forgotten between scenarios).
  const pictures = only.has("upload")
    ? await Promise.all(Array.from({ length: UPLOAD_PICTURES }, (_, n) => photo(n)))
    : []
  const stored = pictures.length === 0 ?
    [] :
    await import("../../src/platform/Images.js").then((images) =>
      Promise.all(pictures.map((picture) => Effect.runPromise(images.processImage(picture, images.ImagePresets.cover))))
    )
  const mediaDirs = [Path.join(dataDir, "media"), Path.join(dataDir, "media-baseline")]

  const processes: Array<Proc> = []
  const server = await startProcess("dist/src/main.js", env, `http://127.0.0.1:${port}/readyz`)
  processes.push(server)
  const pg = new Pg.Client({ connectionString: databaseUrl, application_name: "bench-control" })
  try {
    await pg.connect()
    await settle(server.child.pid!)
    const serverPid = server.child.pid!
    const db = () => descendantsCpu(serverPid)
    const startBaseline = async (extra: Record<string, string> = {}) => {
      const basePort = await freePort()
      const proc = await startProcess(
        "dist/bench/baseline/ClaimWrites.js",
        {
          PORT: String(basePort),
          DATABASE_URL: databaseUrl,
          QUOTA_LIMIT: HIGH,
          MEDIA_QUOTA_LIMIT: HIGH_BYTES,
          MEDIA_DIR: mediaDirs[1]!,
          ...extra
        },
        `http://127.0.0.1:${basePort}/healthz`
      )
      processes.push(proc)
      return {
        proc,
        origin: `http://127.0.0.1:${basePort}`,
        cpu: () => ({ server: ownCpu(proc.child.pid!), db: db() })
      }
    }
    const baseline = await startBaseline()
    const ours = { origin: `http://127.0.0.1:${port}`, cpu: () => ({ server: ownCpu(serverPid), db: db() }) }

    // --- A claimant and a moderator, each with an API key --------------------------------------
    const tag = Date.now().toString(36)
    const withDb = { DATABASE_URL: databaseUrl }
    const password = "bench-writes-password"
    const claimant = cli([
      "user",
      "create",
      "--email",
      `writer-${tag}@bench.invalid`,
      "--password",
      password,
      "--name",
      "Bench writer"
    ], withDb).id as number
    const moderator = cli([
      "user",
      "create",
      "--email",
      `moderator-${tag}@bench.invalid`,
      "--password",
      password,
      "--name",
      "Bench moderator",
      "--role",
      "moderator"
    ], withDb).id as number
    // nsfw keys: every live work can be claimed (an sfw key's content gate hides the nsfw ones).
    const keyFor = (user: number, scopes: string) =>
      cli([
        "api-key",
        "create",
        "--site",
        "bench",
        "--scopes",
        scopes,
        "--content-limit",
        "nsfw",
        "--user",
        String(user)
      ], withDb).key as string
    const writerHeaders = {
      authorization: `Bearer ${keyFor(claimant, "claims:write")}`,
      "content-type": "application/json"
    }
    const moderatorHeaders = {
      authorization: `Bearer ${keyFor(moderator, "moderation")}`,
      "content-type": "application/json"
    }
    const proposerHeaders = {
      authorization: `Bearer ${keyFor(claimant, "catalog:write")}`,
      "content-type": "application/json"
    }

    const live = await pg.query<{ id: string }>("SELECT id::text AS id FROM works WHERE live ORDER BY id")
    const ids = live.rows.map((r) => r.id)
    const voterHeaders = {
      authorization: `Bearer ${keyFor(claimant, "votes:write")}`,
      "content-type": "application/json"
    }
    const newsHeaders = {
      authorization: `Bearer ${keyFor(claimant, "news:write")}`,
      "content-type": "application/json"
    }
    const uploaderHeaders = only.has("upload")
      ? { authorization: `Bearer ${keyFor(claimant, "media:write")}`, "content-type": "image/jpeg" }
      : {}
    // The news source the posts name, bound to the bench site (as `cli news-source create` would).
    const newsSource = "bench_news"
    await pg.query(
      "INSERT INTO news_sources (source, site) VALUES ($1, 'bench') ON CONFLICT (source) DO UPDATE SET active = true",
      [newsSource]
    )
    // Users the playtime batches rotate over, each with a key; the first is the claimant.
    const players = [claimant]
    if (only.has("playtimes")) {
      for (let n = 1; n < PLAYTIME_USERS; n++) {
        players.push(
          cli([
            "user",
            "create",
            "--email",
            `player${n}-${tag}@bench.invalid`,
            "--password",
            password,
            "--name",
            "Bench player"
          ], withDb)
            .id as number
        )
      }
    }
    const playerKeys = only.has("playtimes") ? players.map((user) => keyFor(user, "playtimes:write")) : []
    /**
     * Empties the claim and proposal tables once the previous scenario's last requests are done: the
     * server runs a write to completion after its client hung up (autocannon closes its connections at
     * the end).
     */
    const reset = async () => {
      const deadline = Date.now() + 30_000
      for (;;) {
        const { rows } = await pg.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM pg_stat_activity
           WHERE datname = current_database() AND pid <> pg_backend_pid() AND xact_start IS NOT NULL
             AND backend_type = 'client backend'`
        )
        if (rows[0]!.n === 0 || Date.now() > deadline) break
        await new Promise((r) => setTimeout(r, 100))
      }
      // The bench user's cover votes, with the seeded vote counts they moved restored.
      await pg.query(
        `WITH v AS (DELETE FROM cover_votes WHERE uid = $1 RETURNING cover_id),
         n AS (SELECT cover_id, count(*)::int AS n FROM v GROUP BY cover_id)
         UPDATE covers c SET vote_count = c.vote_count - n.n FROM n WHERE c.id = n.cover_id`,
        [String(claimant)]
      )
      await pg.query(
        "TRUNCATE claims, claim_events, proposals, proposal_amendments, revisions, catalog_idempotency, " +
          "catalog_quota_usage, news_items, news_item_works, playtimes, work_playtimes, work_playtime_minutes, " +
          "work_playtime_buckets"
      )
      // The uploaded images, recorded and kept, so each side's first upload of a picture stores it.
      if (stored.length > 0) {
        const hashes = stored.map((image) => image.sha256)
        await pg.query("DELETE FROM images WHERE source = 'upload' AND hash = ANY($1)", [hashes])
        for (const dir of mediaDirs) {
          for (const hash of hashes) Fs.rmSync(Path.join(dir, hash.slice(0, 2), `${hash}.webp`), { force: true })
        }
      }
    }

    // --- The claim-event lock, sampled during each measured run ----------------------------------
    // `claim_event_lock()` takes (class, 0) in the two-integer form: classid, objid, objsubid 2.
    const lockKey = [String(AdvisoryLockClass.claimEvents), "0"]
    const sampleLock = () => {
      let stop = false
      let samples = 0
      let held = 0
      let waiting = 0
      let holderIdle = 0
      let rowWaiting = 0
      let quotaWaiting = 0
      const loop = (async () => {
        while (!stop) {
          const { rows } = await pg.query<
            { held: number; waiting: number; idle: number; row_waiting: number; quota_waiting: number }
          >(
            `WITH event_lock AS (
               SELECT l.granted, a.state FROM pg_locks l LEFT JOIN pg_stat_activity a ON a.pid = l.pid
               WHERE l.locktype = 'advisory' AND l.objsubid = 2 AND l.classid = $1::oid AND l.objid = $2::oid),
             row_waits AS (
               SELECT query FROM pg_stat_activity
               WHERE datname = current_database() AND wait_event_type = 'Lock'
                 AND wait_event IN ('transactionid', 'tuple'))
             SELECT (SELECT count(*) FILTER (WHERE granted) FROM event_lock)::int AS held,
                    (SELECT count(*) FILTER (WHERE NOT granted) FROM event_lock)::int AS waiting,
                    (SELECT count(*) FILTER (WHERE granted AND state = 'idle in transaction') FROM event_lock)::int
                      AS idle,
                    (SELECT count(*) FROM row_waits)::int AS row_waiting,
                    (SELECT count(*) FROM row_waits WHERE query LIKE '%catalog_quota_usage%')::int AS quota_waiting`,
            lockKey
          )
          const row = rows[0]!
          samples++
          held += row.held > 0 ? 1 : 0
          waiting += row.waiting
          holderIdle += row.idle > 0 ? 1 : 0
          rowWaiting += row.row_waiting
          quotaWaiting += row.quota_waiting
          await new Promise((r) => setTimeout(r, 50))
        }
      })()
      return async (): Promise<LockSample> => {
        stop = true
        await loop
        const mean = (n: number) => samples === 0 ? 0 : n / samples
        return {
          samples,
          held: mean(held),
          waiting: mean(waiting),
          holderIdle: held === 0 ? 0 : holderIdle / held,
          rowWaiting: mean(rowWaiting),
          quotaWaiting: mean(quotaWaiting)
        }
      }
    }

    /** Runs `target` with the lock sampled over its measured run. */
    const run = async (name: string, target: Target): Promise<Row> => {
      console.error(`  ${name}`)
      let stopSampler: (() => Promise<LockSample>) | undefined
      const result = await load(name, {
        ...target,
        prepare: async (phase, warmup) => {
          await target.prepare?.(phase, warmup)
          if (phase === "measured") stopSampler = sampleLock()
        }
      })
      const lock = await stopSampler?.()
      return { ...result, ...(lock === undefined ? {} : { lock }) }
    }

    // --- Scenarios ------------------------------------------------------------------------------
    const exhausted: Array<string> = []
    const proposalsRanOut: Array<string> = []

    /** POST /v2/claims for the next live work, with a fresh Idempotency-Key. */
    const create = (name: string, side: { origin: string; cpu: Target["cpu"] }): Promise<Row> => {
      let next = 0
      const request: autocannon.Request = {
        method: "POST",
        path: "/v2/claims",
        setupRequest: (req) => {
          const i = next++
          if (i === ids.length) exhausted.push(name)
          req.headers = { ...req.headers, "idempotency-key": `create-${tag}-${i}` }
          req.body = `{"work_id":"${ids[i % ids.length]}"}`
          return req
        }
      }
      return run(name, {
        url: `${side.origin}/v2/claims`,
        headers: writerHeaders,
        requests: [request],
        prepare: async (phase) => {
          if (phase === "warmup") await reset()
        },
        ...(side.cpu === undefined ? {} : { cpu: side.cpu })
      })
    }

    /** Pending claims on every live work, seeded in SQL (one claim and one event each): [work id, ETag]. */
    const seedPending = async (): Promise<Array<readonly [string, string]>> => {
      await reset()
      const { rows } = await pg.query<{ work_id: string; event: string }>(
        `WITH w AS (SELECT id, nextval('claim_event_seq') AS ev FROM works WHERE live ORDER BY id),
         c AS (
           INSERT INTO claims (work_id, state, site, owner_uid, minted, last_event_id)
           SELECT id, 'pending', 'bench', $1, false, ev FROM w
           RETURNING work_id, last_event_id)
         INSERT INTO claim_events (id, work_id, from_state, to_state, actor_uid, site)
         SELECT last_event_id, work_id, NULL, 'pending', $1, 'bench' FROM c
         RETURNING work_id::text AS work_id, id::text AS event`,
        [String(claimant)]
      )
      await pg.query("ANALYZE claims, claim_events")
      return rows.sort((a, b) => Number(a.work_id) - Number(b.work_id)).map((r) =>
        [r.work_id, `"claim-${r.work_id}-${r.event}"`] as const
      )
    }

    /** POST /v2/moderation/claims/{id}/decisions approve, on the next pending claim, with its ETag. */
    const decide = (name: string, side: { origin: string; cpu: Target["cpu"] }): Promise<Row> => {
      let next = 0
      let pending: Array<readonly [string, string]> = []
      const request: autocannon.Request = {
        method: "POST",
        path: "/v2/moderation/claims/0/decisions",
        setupRequest: (req) => {
          const i = next++
          if (i === pending.length) exhausted.push(name)
          const [id, etag] = pending[i % pending.length]!
          req.path = `/v2/moderation/claims/${id}/decisions`
          req.headers = { ...req.headers, "if-match": etag, "idempotency-key": `decide-${tag}-${i}` }
          req.body = "{\"decision\":\"approve\"}"
          return req
        }
      }
      return run(name, {
        url: `${side.origin}/v2/moderation/claims/0/decisions`,
        headers: moderatorHeaders,
        requests: [request],
        prepare: async (phase) => {
          if (phase === "warmup") {
            pending = await seedPending()
            next = 0
          }
        },
        ...(side.cpu === undefined ? {} : { cpu: side.cpu })
      })
    }

    /**
     * The same creation replayed: `replayKeys` keys, each first used once (before the warm-up), then
     * sent again in turn with the same body, so the requests in flight at once hold different keys
     * (two concurrent requests with one key: the second is 409 IDEMPOTENCY_REQUEST_IN_PROGRESS).
     */
    const replay = async (name: string, side: { origin: string; cpu: Target["cpu"] }): Promise<Row> => {
      let next = 0
      let replayed = 0
      let fresh = 0
      const key = (i: number) => `replay-${tag}-${i}`
      const request: autocannon.Request = {
        method: "POST",
        path: "/v2/claims",
        setupRequest: (req) => {
          const i = next++ % replayKeys
          req.headers = { ...req.headers, "idempotency-key": key(i) }
          req.body = `{"work_id":"${ids[i]}"}`
          return req
        },
        onResponse: (status, _body, _context, headers) => {
          if (status >= 200 && status < 300) {
            if (headers?.["idempotent-replayed"] === "true" || headers?.["Idempotent-Replayed"] === "true") replayed++
            else fresh++
          }
        }
      }
      const row = await run(name, {
        url: `${side.origin}/v2/claims`,
        headers: writerHeaders,
        requests: [request],
        prepare: async (phase) => {
          if (phase !== "warmup") return
          await reset()
          for (let i = 0; i < replayKeys; i++) {
            const res = await fetch(`${side.origin}/v2/claims`, {
              method: "POST",
              headers: { ...writerHeaders, "idempotency-key": key(i) },
              body: `{"work_id":"${ids[i]}"}`
            })
            await res.arrayBuffer()
            if (res.status !== 201) throw new Error(`${name}: storing key ${i} answered ${res.status}`)
          }
          next = 0
        },
        ...(side.cpu === undefined ? {} : { cpu: side.cpu })
      })
      return { ...row, note: `${replayed} replayed answers, ${fresh} not replayed (warm-up and measured)` }
    }

    /** POST /v2/proposals on the next live work, setting its `length_minutes`, with a fresh Idempotency-Key. */
    const propose = (name: string, side: { origin: string; cpu: Target["cpu"] }): Promise<Row> => {
      let next = 0
      const request: autocannon.Request = {
        method: "POST",
        path: "/v2/proposals",
        setupRequest: (req) => {
          const i = next++
          req.headers = { ...req.headers, "idempotency-key": `propose-${tag}-${i}` }
          req.body = `{"entity_type":"catalog.work","entity_id":"${ids[i % ids.length]}",` +
            `"patch":{"catalog.work.length_minutes":${(i % 1000) + 1}}}`
          return req
        }
      }
      return run(name, {
        url: `${side.origin}/v2/proposals`,
        headers: proposerHeaders,
        requests: [request],
        prepare: async (phase) => {
          if (phase === "warmup") await reset()
        },
        ...(side.cpu === undefined ? {} : { cpu: side.cpu })
      })
    }

    /**
     * `count` open proposals seeded in SQL (version 1, so each one's ETag is `"proposal-<id>-1"`), each
     * setting `catalog.work.length_minutes`: proposal i on the live works in id order, round-robin
     * (i modulo the live works), or all on `work`. Each value is one more than the work's value now plus
     * the proposals before it on that work, so each merge in turn changes the value (its revision has a
     * diff). Answers the proposal ids in order.
     */
    const seedProposals = async (count: number, work?: string): Promise<Array<string>> => {
      const { rows } = await pg.query<{ id: string }>(
        `WITH w AS (
           SELECT id, coalesce(length_minutes, 0) AS minutes, row_number() OVER (ORDER BY id) - 1 AS n
           FROM works WHERE live AND ($2::bigint IS NULL OR id = $2::bigint)),
         t AS (SELECT count(*) AS total FROM w),
         g AS (
           SELECT g.i, w.id, jsonb_build_object('catalog.work.length_minutes', (w.minutes + 1 + g.i / t.total) % 1000000)
             AS patch
           FROM generate_series(0, $1::bigint - 1) AS g (i) CROSS JOIN t JOIN w ON w.n = g.i % t.total)
         INSERT INTO proposals (entity_type, entity_id, site, proposer_uid, patch, effective)
         SELECT 'catalog.work', g.id, 'bench', $3, g.patch, g.patch FROM g ORDER BY g.i
         RETURNING id::text AS id`,
        [count, work ?? null, String(claimant)]
      )
      await pg.query("ANALYZE proposals")
      return rows.map((r) => r.id).sort((a, b) => Number(a) - Number(b))
    }

    /**
     * A POST on the next open proposal of a pool seeded before the warm-up and again before the measured
     * run (sized like the identity suite's code pools: the warm-up's from `BENCH_WRITES_PROPOSAL_RATE`,
     * the measured one from 3x the warm-up's rate, or from twice the guess when the warm-up's ran out),
     * with its ETag and a fresh Idempotency-Key. A measured run that used up its pool is reported.
     */
    const onProposals = (
      name: string,
      side: { origin: string; cpu: Target["cpu"] },
      options: {
        readonly path: (id: string) => string
        readonly headers: Record<string, string>
        readonly body: (i: number) => string
        /** All proposals on this work (default: round-robin over the live works). */
        readonly work?: string
      }
    ): Promise<Row> => {
      let next = 0
      let round = 0
      let measured = false
      let pool: Array<string> = []
      const request: autocannon.Request = {
        method: "POST",
        path: options.path("0"),
        setupRequest: (req) => {
          const i = next++
          if (i === pool.length && measured) proposalsRanOut.push(name)
          const id = pool[i % pool.length]!
          req.path = options.path(id)
          req.headers = {
            ...req.headers,
            "if-match": `"proposal-${id}-1"`,
            "idempotency-key": `proposal-${tag}-${round}-${i}`
          }
          req.body = options.body(i)
          return req
        }
      }
      return run(name, {
        url: `${side.origin}${options.path("0")}`,
        headers: options.headers,
        requests: [request],
        prepare: async (phase, warmup) => {
          if (phase === "warmup") await reset()
          const rate = phase === "warmup" || warmup === undefined
            ? proposalRate
            : Math.max((warmup.requests - warmup.non2xx) / settings.warmup, next > pool.length ? 2 * proposalRate : 100)
          const count = phase === "warmup" ? 1.5 * rate * settings.warmup : 3 * rate * settings.duration
          pool = await seedProposals(Math.ceil(count) + 2 * settings.connections, options.work)
          next = 0
          round++
          measured = phase === "measured"
        },
        ...(side.cpu === undefined ? {} : { cpu: side.cpu })
      })
    }

    const amend = (name: string, side: { origin: string; cpu: Target["cpu"] }) =>
      onProposals(name, side, {
        path: (id) => `/v2/proposals/${id}/amendments`,
        headers: proposerHeaders,
        body: (i) => `{"set":{"catalog.work.length_minutes":${(i % 1000) + 1}}}`
      })

    const merge = (name: string, side: { origin: string; cpu: Target["cpu"] }, work?: string) =>
      onProposals(name, side, {
        path: (id) => `/v2/moderation/proposals/${id}/decisions`,
        headers: moderatorHeaders,
        body: () => "{\"decision\":\"merge\"}",
        ...(work === undefined ? {} : { work })
      })

    /**
     * PUT a cover vote (`{"vote":"up"}`; the route takes no Idempotency-Key), each request on the next
     * cover of the live works (one cover per work, the lowest id; works in id order), so every vote is a
     * new one (inserted, counted, the work's change-feed row). A measured run that came round to a cover
     * already voted on is reported.
     */
    const covers = only.has("vote")
      ? (await pg.query<{ work_id: string; id: string }>(
        `SELECT DISTINCT ON (c.work_id) c.work_id::text AS work_id, c.id::text AS id
         FROM covers c JOIN works w ON w.id = c.work_id AND w.live ORDER BY c.work_id, c.id`
      )).rows
      : []
    const coversRanOut: Array<string> = []
    const vote = (name: string, side: { origin: string; cpu: Target["cpu"] }): Promise<Row> => {
      let next = 0
      const path = (i: number) =>
        `/v2/catalog/works/${covers[i % covers.length]!.work_id}/covers/${covers[i % covers.length]!.id}/vote`
      const request: autocannon.Request = {
        method: "PUT",
        path: path(0),
        setupRequest: (req) => {
          const i = next++
          if (i === covers.length) coversRanOut.push(name)
          req.path = path(i)
          req.body = "{\"vote\":\"up\"}"
          return req
        }
      }
      return run(name, {
        url: `${side.origin}${path(0)}`,
        headers: voterHeaders,
        requests: [request],
        prepare: async (phase) => {
          if (phase === "warmup") await reset()
        },
        ...(side.cpu === undefined ? {} : { cpu: side.cpu })
      })
    }

    /**
     * POST /v2/news under the bench site's source, a unique `source_url` per request, linking the next
     * live work, with a fresh Idempotency-Key.
     */
    const news = (name: string, side: { origin: string; cpu: Target["cpu"] }): Promise<Row> => {
      let next = 0
      const side_ = name.split(":")[0]
      const request: autocannon.Request = {
        method: "POST",
        path: "/v2/news",
        setupRequest: (req) => {
          const i = next++
          req.headers = { ...req.headers, "idempotency-key": `news-${tag}-${side_}-${i}` }
          req.body = `{"source":"${newsSource}","title":"Bench news ${i}","summary":"A benchmark news item.",` +
            `"source_url":"https://bench.invalid/${tag}/${side_}/${i}","work_ids":["${ids[i % ids.length]}"]}`
          return req
        }
      }
      return run(name, {
        url: `${side.origin}/v2/news`,
        headers: newsHeaders,
        requests: [request],
        prepare: async (phase) => {
          if (phase === "warmup") await reset()
        },
        ...(side.cpu === undefined ? {} : { cpu: side.cpu })
      })
    }

    /**
     * POST /v2/playtimes, 100 works a batch. The live works in id order are cut into windows of 100
     * (the last partial one dropped); batch i sends window i modulo the windows, so consecutive batches
     * (and the 32 in flight) touch different works, for user floor(i / windows) modulo
     * `PLAYTIME_USERS`, so each pass over the catalog is another user's: the first passes are first
     * reports, later ones (a user's second pass, with other minutes) change a stored value. Either way
     * every item moves the histogram and the work's aggregate.
     */
    const windows = Math.floor(ids.length / PLAYTIME_BATCH)
    const playtimes = (name: string, side: { origin: string; cpu: Target["cpu"] }): Promise<Row> => {
      let next = 0
      const side_ = name.split(":")[0]
      const request: autocannon.Request = {
        method: "POST",
        path: "/v2/playtimes",
        setupRequest: (req) => {
          const i = next++
          const window = i % windows
          const pass = Math.floor(i / windows)
          const items = ids.slice(window * PLAYTIME_BATCH, (window + 1) * PLAYTIME_BATCH).map((id, n) =>
            `{"work_id":"${id}","minutes":${((pass * 37 + n) % 6000) + 1}}`
          )
          req.headers = {
            ...req.headers,
            authorization: `Bearer ${playerKeys[pass % playerKeys.length]}`,
            "idempotency-key": `playtimes-${tag}-${side_}-${i}`
          }
          req.body = `{"items":[${items.join(",")}]}`
          return req
        }
      }
      return run(name, {
        url: `${side.origin}/v2/playtimes`,
        headers: { "content-type": "application/json" },
        requests: [request],
        prepare: async (phase) => {
          if (phase === "warmup") await reset()
        },
        ...(side.cpu === undefined ? {} : { cpu: side.cpu })
      })
    }

    /** The first 2xx answer of each side for each stored hash: `<side>\n<hash>`. */
    const uploaded = new Map<string, EditImageAnswer>()
    /**
     * Whether the baseline answers as ours: for a hash both answered, the same members and the same
     * stored image (size, dimensions, ThumbHash), and every hash answered one the pipeline makes here.
     */
    const answersAgree = (): string => {
      const expected = new Set(stored.map((image) => image.sha256))
      const strange = [...uploaded.values()].filter((answer) => !expected.has(answer.hash))
      const common = [...uploaded.values()].find((answer) =>
        uploaded.has(`baseline\n${answer.hash}`) && uploaded.has(`shiori\n${answer.hash}`)
      )
      if (common === undefined) return "**no picture answered by both sides**"
      const base = uploaded.get(`baseline\n${common.hash}`)!
      const mine = uploaded.get(`shiori\n${common.hash}`)!
      const members = (a: EditImageAnswer) => Object.keys(a).sort().join(",")
      const same = members(base) === members(mine) &&
        (["object", "preset", "width", "height", "thumbhash", "size_bytes", "sexual", "violence"] as const)
          .every((k) => base[k] === mine[k])
      return [
        same
          ? "the baseline's answer has the same members as ours and, for the same picture, the same stored image " +
            "(hash, size, dimensions, ThumbHash)"
          : `**the answers differ**: baseline ${JSON.stringify(base)}, ours ${JSON.stringify(mine)}`,
        ...(strange.length === 0 ? [] : [`**hashes not made here**: ${strange.map((a) => a.hash).join(", ")}`])
      ].join("; ")
    }
    /**
     * POST /v2/media/images?preset=cover with the next of the pictures (raw JPEG bytes, in turn) and a
     * fresh Idempotency-Key, at `UPLOAD_CONNECTIONS`; beside the measured run, `GET /healthz` on the
     * same server at `PROBE_RATE` a second on one connection.
     */
    const upload = async (name: string, side: { origin: string; cpu: Target["cpu"] }): Promise<Row> => {
      let next = 0
      const side_ = name.split(":")[0]
      const answers = { stored: 0, deduplicated: 0 }
      const request: autocannon.Request = {
        method: "POST",
        path: "/v2/media/images?preset=cover",
        setupRequest: (req) => {
          const i = next++
          req.headers = { ...req.headers, "idempotency-key": `upload-${tag}-${side_}-${i}` }
          req.body = pictures[i % pictures.length]!
          return req
        },
        onResponse: (status, body) => {
          if (status === 201) answers.stored++
          else if (status === 200) answers.deduplicated++
          else return
          const answer = JSON.parse(body) as EditImageAnswer
          if (!uploaded.has(`${side_}\n${answer.hash}`)) uploaded.set(`${side_}\n${answer.hash}`, answer)
        }
      }
      let probed: Promise<Result> | undefined
      const row = await run(name, {
        url: `${side.origin}/v2/media/images?preset=cover`,
        headers: uploaderHeaders,
        requests: [request],
        connections: UPLOAD_CONNECTIONS,
        prepare: async (phase) => {
          if (phase === "warmup") await reset()
          else probed = probe(`${name} (probe)`, `${side.origin}/healthz`, settings.duration, PROBE_RATE)
        },
        ...(side.cpu === undefined ? {} : { cpu: side.cpu })
      })
      const beside = await probed!
      return {
        ...row,
        probe: beside,
        note: `${answers.stored} answers 201 (stored), ${answers.deduplicated} 200 (deduplicated), warm-up and ` +
          `measured; the probe: ${beside.requests} requests, p50 ${beside.p50} ms, p99 ${beside.p99} ms, ` +
          `${beside.non2xx} non-2xx, ${beside.errors} errors`
      }
    }

    const createTarget = (r: Row, base: Row): Row => {
      const ratio = r.rps / base.rps
      return {
        ...r,
        ratio: `${ratio.toFixed(2)}x`,
        target: ">= 0.5x, p99 < 50 ms",
        met: r.requests > 0 && ratio >= 0.5 && r.p99 < 50 && r.non2xx === 0 && r.errors === 0
      }
    }

    const rows: Array<Row> = []
    let createRatio: Row | undefined
    if (only.has("create")) {
      const bCreate = await create("baseline: node:http + pg, create claim", baseline)
      const sCreate = await create("shiori: create claim", ours)
      createRatio = createTarget(sCreate, bCreate)
      rows.push(bCreate, createRatio)
      if (only.has("lock")) {
        // Where the time goes: the baseline without the claim-event lock (event ids then commit out of
        // order), and with the lock held over 8 statements as before commits 00f5a1b and 34f176d instead
        // of 3 (bench/baseline/ClaimWrites.ts).
        for (
          const [mode, name] of [
            ["0", "diagnostic: baseline create without claim_event_lock()"],
            ["long", "diagnostic: baseline create, event lock held over 8 statements (as before 00f5a1b)"]
          ] as const
        ) {
          const variant = await startBaseline({ EVENT_LOCK: mode, APPLICATION_NAME: `bench-baseline-${mode}` })
          const row = await create(name, variant)
          rows.push({ ...row, ratio: ratioOf(row, bCreate) })
          await variant.proc.stop()
          processes.splice(processes.indexOf(variant.proc), 1)
        }
      }
    }
    if (only.has("decide")) {
      const bDecide = await decide("baseline: approve pending claim", baseline)
      const sDecide = await decide("shiori: approve pending claim", ours)
      rows.push(bDecide, { ...sDecide, ratio: ratioOf(sDecide, bDecide) })
    }
    if (only.has("replay")) {
      const bReplay = await replay("baseline: idempotent replay of a creation", baseline)
      const sReplay = await replay("shiori: idempotent replay of a creation", ours)
      rows.push(bReplay, { ...sReplay, ratio: ratioOf(sReplay, bReplay) })
    }
    /** Our row against the baseline's: at least 0.5x its req/s (and p99 under `p99` ms), no failures. */
    const targeted = (r: Row, base: Row, p99?: number): Row => {
      const ratio = r.rps / base.rps
      return {
        ...r,
        ratio: `${ratio.toFixed(2)}x`,
        target: `>= 0.5x${p99 === undefined ? "" : `, p99 < ${p99} ms`}`,
        met: r.requests > 0 && ratio >= 0.5 && (p99 === undefined || r.p99 < p99) && r.non2xx === 0 &&
          r.errors === 0 && !proposalsRanOut.includes(r.name)
      }
    }
    let mergeRow: { readonly ours: Row; readonly base: Row } | undefined
    if (only.has("propose")) {
      const base = await propose("baseline: create proposal", baseline)
      rows.push(base, targeted(await propose("shiori: create proposal", ours), base))
    }
    if (only.has("amend")) {
      const base = await amend("baseline: amend proposal", baseline)
      rows.push(base, targeted(await amend("shiori: amend proposal", ours), base))
    }
    if (only.has("merge")) {
      const base = await merge("baseline: merge proposal (a distinct work each)", baseline)
      const row = targeted(await merge("shiori: merge proposal (a distinct work each)", ours), base, 100)
      rows.push(base, row)
      mergeRow = { ours: row, base }
      if (only.has("quota")) {
        // Where the time goes: the baseline without the site's quota row, which every write of a site
        // updates and holds until its COMMIT (bench/baseline/ClaimWrites.ts, QUOTA=off).
        const variant = await startBaseline({ QUOTA: "off", APPLICATION_NAME: "bench-baseline-noquota" })
        const diagnostic = await merge("diagnostic: baseline merge without the quota row", variant)
        rows.push({ ...diagnostic, ratio: ratioOf(diagnostic, base) })
        await variant.proc.stop()
      }
    }
    if (only.has("merge-one")) {
      // Every merge on one work: each waits for the work's row lock, so this measures how merges on one
      // entity queue behind each other, not the merge path.
      const base = await merge("baseline: merge proposal, all on one work", baseline, ids[0])
      rows.push(base, targeted(await merge("shiori: merge proposal, all on one work", ours, ids[0]), base))
    }
    /** Our row against the baseline's: the ratio, and p99 under `p99` ms when given, no failures. */
    const latencyTarget = (r: Row, base: Row, p99?: number): Row => ({
      ...r,
      ratio: ratioOf(r, base),
      target: p99 === undefined ? "" : `p99 < ${p99} ms`,
      met: r.requests > 0 && (p99 === undefined || r.p99 < p99) && r.non2xx === 0 && r.errors === 0 &&
        !coversRanOut.includes(r.name)
    })
    const latencyRows: Array<Row> = []
    /**
     * Where the time of a latency-bound write goes: the same scenario on the baseline without the site's
     * quota row (QUOTA=off), which every write of the site updates and holds until its COMMIT.
     */
    const withoutQuotaRow = async (
      name: string,
      scenario: (name: string, side: typeof baseline) => Promise<Row>,
      base: Row
    ) => {
      if (!only.has("quota")) return
      const variant = await startBaseline({ QUOTA: "off", APPLICATION_NAME: "bench-baseline-noquota" })
      const diagnostic = await scenario(`diagnostic: baseline ${name} without the quota row`, variant)
      rows.push({ ...diagnostic, ratio: ratioOf(diagnostic, base) })
      await variant.proc.stop()
      processes.splice(processes.indexOf(variant.proc), 1)
    }
    if (only.has("vote")) {
      const base = await vote("baseline: cover vote", baseline)
      const row = latencyTarget(await vote("shiori: cover vote", ours), base, 50)
      rows.push(base, row)
      latencyRows.push(row)
      await withoutQuotaRow("cover vote", vote, base)
    }
    if (only.has("news")) {
      const base = await news("baseline: create news item", baseline)
      rows.push(base, latencyTarget(await news("shiori: create news item", ours), base))
    }
    if (only.has("playtimes")) {
      const base = await playtimes("baseline: playtime batch of 100", baseline)
      const row = latencyTarget(await playtimes("shiori: playtime batch of 100", ours), base, 50)
      rows.push(base, row)
      latencyRows.push(row)
      await withoutQuotaRow("playtime batch of 100", playtimes, base)
    }
    let uploadRow: { readonly ours: Row; readonly base: Row } | undefined
    if (only.has("upload")) {
      const base = await upload("baseline: image upload (cover, ~2 MB JPEG)", baseline)
      const row = await upload("shiori: image upload (cover, ~2 MB JPEG)", ours)
      const probeOk = (r: Row) => r.probe !== undefined && r.probe.non2xx === 0 && r.probe.errors === 0
      const ourRow = {
        ...row,
        ratio: ratioOf(row, base),
        target: `p99 < ${UPLOAD_TARGET_P99} ms at ${UPLOAD_CONNECTIONS} connections`,
        met: row.requests > 0 && row.p99 < UPLOAD_TARGET_P99 && row.non2xx === 0 && row.errors === 0 && probeOk(row)
      }
      rows.push(base, ourRow)
      uploadRow = { ours: ourRow, base }
      notes.push(`Image upload answers: ${answersAgree()}.`)
    }
    const rss = server.rssMb()
    await reset()

    return [
      `## Catalog writes (claims, edit proposals, votes, news, playtimes) on ${works.toLocaleString("en")} works`,
      report(rows),
      ...(createRatio === undefined ? [] : [
        `**shiori create: ${createRatio.ratio} the baseline's req/s, p99 ${createRatio.p99} ms vs ${
          rows[0]!.p99
        } ms** ` +
        `(target >= 0.5x and p99 < 50 ms at ${settings.connections} connections: ` +
        `${createRatio.met === true ? "met" : "**not met**"}).`
      ]),
      ...(mergeRow === undefined ? [] : [
        `**shiori merge: ${mergeRow.ours.ratio} the baseline's req/s, p99 ${mergeRow.ours.p99} ms vs ${mergeRow.base.p99} ms** ` +
        `(target >= 0.5x and p99 < 100 ms at ${settings.connections} connections: ` +
        `${mergeRow.ours.met === true ? "met" : "**not met**"}).`
      ]),
      ...latencyRows.map((r) =>
        `**${r.name}: ${r.ratio} the baseline's req/s, p99 ${r.p99} ms** (target p99 < 50 ms at ${settings.connections} ` +
        `connections: ${r.met === true ? "met" : "**not met**"}).`
      ),
      ...(uploadRow === undefined ? [] : [
        `**${uploadRow.ours.name}: ${uploadRow.ours.ratio} the baseline's req/s, p99 ${uploadRow.ours.p99} ms vs ` +
        `${uploadRow.base.p99} ms, event loop probe p99 ${uploadRow.ours.probe?.p99} ms vs ${uploadRow.base.probe?.p99} ms** ` +
        `(target p99 < ${UPLOAD_TARGET_P99} ms at ${UPLOAD_CONNECTIONS} connections: ` +
        `${uploadRow.ours.met === true ? "met" : "**not met**"}).`,
        `Image upload: \`POST /v2/media/images?preset=cover\`, \`Content-Type: image/jpeg\`, a fresh \`Idempotency-Key\`, ` +
        `at ${UPLOAD_CONNECTIONS} connections (not ${settings.connections}); each request sends the next of ` +
        `${pictures.length} distinct photo-like JPEGs (2000 x 1500, quality 90, 4:4:4; ` +
        `${pictures.map((p) => p.length.toLocaleString("en")).join(", ")} bytes) in turn. After the first upload of ` +
        `each, its stored bytes exist, so the answer is 200 deduplicated (nothing written but the quota and the ` +
        `stored answer), yet every upload is still read, hashed (the fingerprint), decoded, turned upright, ` +
        `resized to ${stored[0]?.width} x ${stored[0]?.height}, re-encoded as WebP ` +
        `(${stored.map((image) => image.bytes.length.toLocaleString("en")).join(", ")} bytes), hashed and ` +
        `thumbhashed. Sending other bytes per request (say a JPEG comment) would change nothing stored: the ` +
        `pipeline strips metadata. Both sides decode at most ${DECODES} ` +
        `${
          DECODES === 1 ? "picture" : "pictures"
        } at once (\`CATALOG_IMAGE_CONCURRENCY\`, by default the cores but one; ours in src/catalog/media/Media.ts, the baseline: ` +
        `the same bound in bench/baseline/ImageUpload.ts), each holding its transaction while it waits, as ours ` +
        `does; so the comparison is of the same work under the same bound. The event loop probe is ` +
        `\`GET /healthz\` on the same server at ${PROBE_RATE} requests a second on one connection during the ` +
        `measured run; the server's CPU per upload includes those requests' (a small share).`
      ]),
      ...(coversRanOut.length === 0 ? [] : [
        `**Ran out of covers** (requests after that voted again on a cover already voted on, a no-op): ${
          [...new Set(coversRanOut)].join(", ")
        }; raise \`BENCH_WRITES_WORKS\`.`
      ]),
      `Limits raised out of the way for the run: ${
        Object.entries(limitsEnv).map(([k, v]) => `\`${k}=${v}\``).join(", ")
      }; the rate limiter and the quota rows still run on every request (measured, never refusing). ` +
      `Both sides: pool of 20 connections, prepared statements, an \`Idempotency-Key\` on every request but the cover votes (their route takes none).`,
      `Event lock columns: \`pg_locks\` sampled every 50 ms during the measured run: the share of samples in which ` +
      `a backend held \`claim_event_lock()\`, the mean number of backends waiting for it, and the share of the ` +
      `held samples in which the holder was idle in transaction (its statement done, waiting for its client's next one); ` +
      `the mean number of backends waiting for another transaction's row, and of those on the site's quota row.`,
      ...rows.filter((r) => r.note !== undefined).map((r) => `${r.name}: ${r.note}.`),
      ...(proposalsRanOut.length === 0 ? [] : [
        `**Ran out of open proposals** (requests after that were sent with a used proposal's ETag and refused): ${
          [...new Set(proposalsRanOut)].join(", ")
        }; raise \`BENCH_WRITES_PROPOSAL_RATE\`.`
      ]),
      ...(exhausted.length === 0 ? [] : [
        `**Ran out of works** (requests after that were refused as already claimed): ${
          [...new Set(exhausted)].join(", ")
        }; raise \`BENCH_WRITES_WORKS\`.`
      ]),
      `Server RSS after the run: ${rss.toFixed(0)} MB.`,
      ...notes,
      `Load average after: ${loadavg()}. ${settings.connections} connections.`
    ].join("\n\n")
  } finally {
    await pg.end().catch(() => {})
    for (const proc of processes.reverse()) await proc.stop()
  }
}
