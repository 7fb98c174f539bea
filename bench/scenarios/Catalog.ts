/**
 * The catalog on a million works (targets in bench/README.md): the real server (`node dist/src/main.js`,
 * catalog only) over a seeded catalog, driven with autocannon, next to a plain `node:http` + `pg`
 * baseline answering the same works-list query in the same run (bench/baseline/WorksList.ts).
 *
 * The catalog is seeded once into `bench/.data-1m` (gitignored) and reused by later runs; the seed
 * is skipped when the data directory already holds one. `BENCH_WORKS=20000` runs the same suite on a
 * smaller catalog (its own directory) for a quick check.
 */
import { execFileSync } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import Pg from "pg"
import {
  descendantsCpu,
  freePort,
  load,
  ownCpu,
  type Result,
  root,
  settings,
  settle,
  startProcess
} from "../Harness.js"

const works = Number(process.env.BENCH_WORKS ?? 1_000_000)
const deepPages = Number(process.env.BENCH_DEEP_PAGES ?? 300)
const mirrorSeconds = Number(process.env.BENCH_MIRROR_SECONDS ?? 30)
const include = "include=titles,covers,companies"
const allIncludes = "include=titles,refs,intros,covers,companies,ratings,tags,credits"
const facets = "facets=tag_id,company_id,olang,content_rating,medium,platform"

interface Row extends Result {
  readonly ratio?: string
  readonly target?: string
  readonly met?: boolean
}

const loadavg = () => Os.loadavg().map((n) => n.toFixed(2)).join(", ")

/** At or above this share of a core, a row measures the load generator more than the server. */
const CLIENT_BOUND = 0.9

const cpuText = (r: Result) =>
  r.cpuMs === undefined
    ? ""
    : `${r.cpuMs.server!.toFixed(2)}${r.cpuMs.db === undefined ? "" : ` + ${r.cpuMs.db.toFixed(2)} db`}`

const report = (rows: ReadonlyArray<Row>) =>
  [
    "| scenario | req/s | p50 ms | p99 ms | non-2xx | errors | vs baseline | CPU ms/req: server + db | load generator busy | target | met |",
    "|---|---:|---:|---:|---:|---:|---:|---|---:|---|:-:|",
    ...rows.map((r) =>
      `| ${r.name} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.non2xx} | ${r.errors} | ${r.ratio ?? ""} | ` +
      `${cpuText(r)} | ${(r.clientBusy * 100).toFixed(0)}%${r.clientBusy >= CLIENT_BOUND ? " (bound)" : ""} | ` +
      `${r.target ?? ""} | ${r.met === undefined ? "" : r.met ? "yes" : "**no**"} |`
    )
  ].join("\n")

/** p99 under `ms` (and no failed request). */
const p99Under = (r: Result, ms: number): Row => ({
  ...r,
  target: `p99 < ${ms} ms`,
  // A scenario that completed no request measured nothing: it cannot meet its target.
  met: r.requests > 0 && r.p99 < ms && r.non2xx === 0 && r.errors === 0
})

/** A request budget no bench load reaches (one key sends tens of thousands of requests a second). */
export const unlimitedBudget = { CATALOG_RATE_BURST: "1000000000", CATALOG_RATE_PER_SECOND: "1000000000" }

export const catalog = async (): Promise<string> => {
  const dataDir = Path.join(root, "bench", works === 1_000_000 ? ".data-1m" : `.data-${works}`)
  const pgPort = await freePort()
  const port = await freePort()
  const env = {
    SHIORI_DATA_DIR: dataDir,
    EMBEDDED_PG_PORT: String(pgPort),
    CATALOG_PORT: String(port),
    IDENTITY_PORT: String(await freePort()),
    SHIORI_SERVE: "catalog",
    SHIORI_DEMO_WORKS: "0",
    // The request budget stays on (every request spends a token, hot ones included: its cost is in
    // these numbers) but is set above what the load generator sends with one key, so nothing is 429.
    ...unlimitedBudget
  }
  const cli = (args: ReadonlyArray<string>) =>
    JSON.parse(
      execFileSync(process.execPath, ["dist/src/cli/main.js", ...args, "--json"], {
        cwd: root,
        env: { ...process.env, LOG_LEVEL: "Warning", ...env },
        maxBuffer: 16 * 1024 * 1024
      }).toString()
    )
  const notes: Array<string> = [`Load average before: ${loadavg()} (${Os.cpus().length} CPUs).`]

  // Seed once; later runs find the catalog in place (the seed refuses a non-empty catalog).
  console.error(`catalog bench: seeding ${works} works into ${dataDir} (skipped when present)...`)
  const seedStarted = Date.now()
  const seeded = cli(["seed", "--works", String(works)])
  notes.push(
    seeded.status === "seeded"
      ? `Seeded ${works} works in ${(seeded.duration_ms / 1000).toFixed(0)} s (rows: ${JSON.stringify(seeded.rows)}).`
      : `Catalog of ${works} works reused from ${Path.relative(root, dataDir)} (checked in ` +
        `${((Date.now() - seedStarted) / 1000).toFixed(1)} s).`
  )

  const server = await startProcess("dist/src/main.js", env, `http://127.0.0.1:${port}/readyz`)
  const basePort = await freePort()
  const databaseUrl = `postgres://postgres@127.0.0.1:${pgPort}/shiori`
  const baseline = await startProcess(
    "dist/bench/baseline/WorksList.js",
    { PORT: String(basePort), DATABASE_URL: databaseUrl },
    `http://127.0.0.1:${basePort}/healthz`
  )
  const pg = new Pg.Client({ connectionString: databaseUrl })
  await pg.connect()
  let uncached: Awaited<ReturnType<typeof startProcess>> | undefined
  try {
    // The server copies the catalog's facets into memory in the background (FacetIndex.ts).
    await settle(server.child.pid!)
    const serverCpu = () => ({ server: ownCpu(server.child.pid!), db: descendantsCpu(server.child.pid!) })
    const key = cli(["api-key", "create", "--site", "bench", "--scopes", "catalog:read", "--content-limit", "nsfw"])
      .key as string
    const headers = { authorization: `Bearer ${key}` }
    const api = `http://127.0.0.1:${port}`
    const get = async (path: string): Promise<{ status: number; body: any }> => {
      const res = await fetch(`${api}${path}`, { headers })
      const text = await res.text()
      return { status: res.status, body: text === "" ? null : JSON.parse(text) }
    }
    const target = (path: string, origin = api, cpu = serverCpu) => ({ url: `${origin}${path}`, headers, cpu })
    const paths = (list: ReadonlyArray<string>, origin = api, cpu = serverCpu) => ({
      url: origin,
      headers,
      paths: list,
      prime: true,
      cpu
    })
    /** As a browser, `fetch` or `curl --compressed` asks: the answer comes gzip-encoded (Compression.ts). */
    const gzipHeaders = { ...headers, "accept-encoding": "gzip, deflate, br" }

    const failures: Array<string> = []
    /** Follows `next_cursor` from the first page of `query` for `pages` pages; the cursors of the second half. */
    const deepCursors = async (path: string, query: string, pages: number) => {
      const cursors: Array<string> = []
      let cursor: string | undefined
      for (let i = 0; i < pages; i++) {
        const url = `${path}?${query}${cursor ? `&cursor=${cursor}` : ""}`
        let page = await get(url)
        // A failed page is retried (and counted: the run reports it) rather than ending the suite.
        for (let attempt = 0; page.status !== 200 && attempt < 3; attempt++) {
          failures.push(`${url.slice(0, 80)}: ${page.status} ${page.body?.code ?? ""}`)
          await new Promise((r) => setTimeout(r, 200))
          page = await get(url)
        }
        if (page.status !== 200) throw new Error(`${path}?${query}: ${page.status} ${JSON.stringify(page.body)}`)
        cursor = page.body.next_cursor
        if (cursor === undefined) break
        cursors.push(cursor)
      }
      return cursors.slice(Math.floor(cursors.length / 2))
    }

    const rows: Array<Row> = []
    const run = async (name: string, t: Parameters<typeof load>[1]) => {
      console.error(`  ${name}`)
      return load(name, t)
    }

    // --- Works list: first pages, against the baseline -------------------------------------------
    const probe = await get("/v2/catalog/works?limit=1")
    if (probe.status !== 200) {
      return [
        "## Catalog on a million works",
        `Not run: \`GET /v2/catalog/works\` answered ${probe.status} (the works endpoints are not served yet).`,
        ...notes
      ].join("\n\n")
    }
    const baseOrigin = `http://127.0.0.1:${basePort}`
    const baselineCpu = () => ({ server: ownCpu(baseline.child.pid!), db: descendantsCpu(server.child.pid!) })
    const baselineRps = new Map<number, number>()
    for (const limit of [20, 100]) {
      const b = await run(
        `baseline: node:http + pg, works first page limit=${limit}`,
        target(`/v2/catalog/works?limit=${limit}`, baseOrigin, baselineCpu)
      )
      baselineRps.set(limit, b.rps)
      const s = await run(`works first page limit=${limit}`, target(`/v2/catalog/works?limit=${limit}`))
      const ratio = s.rps / b.rps
      rows.push(b, {
        ...s,
        ratio: `${ratio.toFixed(2)}x`,
        target: "p99 < 25 ms, >= 0.6x",
        met: s.requests > 0 && s.p99 < 25 && ratio >= 0.6 && s.non2xx === 0 && s.errors === 0
      })
    }
    // The same stored bytes from a bare HttpApi endpoint (same Effect version, no middleware): what
    // the cached rows above would reach if the stack cost nothing (baseline/BareHttpApi.ts).
    for (const limit of [20, 100]) {
      const path = `/v2/catalog/works?limit=${limit}`
      const stored = await fetch(`${api}${path}`, { headers })
      const storedFile = Path.join(Os.tmpdir(), `shiori-bench-bare-${limit}-${process.pid}.json`)
      Fs.writeFileSync(storedFile, Buffer.from(await stored.arrayBuffer()))
      const barePort = await freePort()
      const bare = await startProcess(
        "dist/bench/baseline/BareHttpApi.js",
        { PORT: String(barePort), BODY_FILE: storedFile },
        `http://127.0.0.1:${barePort}/healthz`
      )
      try {
        const b = await run(
          `baseline: bare HttpApi endpoint, no middleware, the limit=${limit} page's stored bytes`,
          { url: `http://127.0.0.1:${barePort}${path}`, cpu: () => ({ server: ownCpu(bare.child.pid!) }) }
        )
        const ours = rows.find((r) => r.name === `works first page limit=${limit}`)
        const ratio = ours === undefined ? 0 : ours.rps / b.rps
        rows.push({
          ...b,
          ratio: `cached row ${ratio.toFixed(2)}x`,
          target: "cached row >= 0.8x",
          met: ratio >= 0.8
        })
      } finally {
        await bare.stop()
        Fs.rmSync(storedFile, { force: true })
      }
    }
    for (const limit of [20, 100]) {
      rows.push(
        p99Under(
          await run(
            `works first page limit=${limit} ${include}`,
            target(`/v2/catalog/works?limit=${limit}&${include}`)
          ),
          25
        )
      )
    }
    rows.push(
      p99Under(
        await run(
          `works first page limit=100 ${include}, gzip (Accept-Encoding as fetch sends it)`,
          { ...target(`/v2/catalog/works?limit=100&${include}`), headers: gzipHeaders }
        ),
        25
      )
    )
    // The floor for answers that large: the same bytes served from memory by plain node:http.
    const largest = await fetch(`${api}/v2/catalog/works?limit=100&${include}`, { headers })
    const bodyFile = Path.join(Os.tmpdir(), `shiori-bench-page-${process.pid}.json`)
    Fs.writeFileSync(bodyFile, Buffer.from(await largest.arrayBuffer()))
    const floorPort = await freePort()
    const floor = await startProcess(
      "dist/bench/baseline/StaticBody.js",
      { PORT: String(floorPort), BODY_FILE: bodyFile },
      `http://127.0.0.1:${floorPort}/healthz`
    )
    try {
      rows.push(
        await run(
          `floor: node:http answering the limit=100 ${include} page's ${
            (Fs.statSync(bodyFile).size / 1024).toFixed(0)
          } KB from memory`,
          {
            url: `http://127.0.0.1:${floorPort}/v2/catalog/works?limit=100&${include}`,
            cpu: () => ({ server: ownCpu(floor.child.pid!) })
          }
        )
      )
    } finally {
      await floor.stop()
      Fs.rmSync(bodyFile, { force: true })
    }

    // --- Deep cursor pages: cursors collected first, then replayed --------------------------------
    let deep20: readonly [string, ReadonlyArray<string>] = ["", []]
    for (const limit of [20, 100]) {
      for (const extra of ["", `&${include}`]) {
        const query = `limit=${limit}${extra}`
        // About the same depth for both page sizes: rows (pages * limit) / 2 .. pages * limit.
        const pages = limit === 20 ? deepPages * 5 : deepPages
        const cursors = await deepCursors("/v2/catalog/works", query, pages)
        const name = `works deep cursor pages (rows ${(pages * limit) / 2}..${pages * limit}) ${
          query.replace("&", " ")
        }`
        if (query === "limit=20") deep20 = [name, cursors.map((c) => `/v2/catalog/works?${query}&cursor=${c}`)]
        rows.push(p99Under(
          await run(
            name,
            paths(cursors.map((c) => `/v2/catalog/works?${query}&cursor=${c}`))
          ),
          25
        ))
        if (limit === 100 && extra !== "") {
          rows.push(p99Under(
            await run(
              `works deep cursor pages limit=100 ${include}, gzip`,
              { ...paths(cursors.map((c) => `/v2/catalog/works?${query}&cursor=${c}`)), headers: gzipHeaders }
            ),
            25
          ))
        }
      }
    }

    // --- Batch of 100 ids, detail with every include ----------------------------------------------
    const maxId = Number((await pg.query("SELECT max(id)::text AS m FROM works")).rows[0].m)
    const spread = (n: number, offset: number) =>
      Array.from({ length: n }, (_, i) => String(1 + ((Math.floor((i * maxId) / n) + offset) % maxId)))
    const batches = Array.from({ length: 20 }, (_, b) => `/v2/catalog/works?ids=${spread(100, b * 7919).join(",")}`)
    rows.push(p99Under(await run("batch of 100 ids", paths(batches)), 40))
    const liveIds = (await pg.query(
      "SELECT id::text AS id FROM works WHERE live AND id = ANY($1::bigint[])",
      [spread(400, 104729)]
    )).rows.map((r: { id: string }) => r.id)
    const details = liveIds.map((id: string) => `/v2/catalog/works/${id}?${allIncludes}`)
    rows.push(p99Under(await run("work detail, all 8 includes", paths(details)), 40))

    // --- Search and facets ------------------------------------------------------------------------
    const titles = (await pg.query(
      "SELECT display_name, latin FROM works WHERE live AND id = ANY($1::bigint[])",
      [spread(60, 15485863)]
    )).rows as Array<{ display_name: string; latin: string | null }>
    const queries = titles.map((t) => {
      const latinWord = (t.latin ?? "").split(/\s+/).find((w) => w.length >= 4)
      return latinWord ?? [...t.display_name].slice(0, /[\u3000-\u9fff\uac00-\ud7af]/.test(t.display_name) ? 2 : 4)
        .join("")
    })
    const q = (extra: string) => queries.map((s) => `/v2/catalog/works?q=${encodeURIComponent(s)}&limit=20${extra}`)
    rows.push(p99Under(await run("q= search limit=20", paths(q(""))), 100))
    rows.push(p99Under(await run("q= search + 6 facets", paths(q(`&${facets}`))), 100))
    rows.push(
      p99Under(await run("facets over the whole catalog", target(`/v2/catalog/search?limit=20&${facets}`)), 100)
    )
    rows.push(p99Under(
      await run(
        "facets filtered (olang=ja, platform facet)",
        target(`/v2/catalog/search?limit=20&olang=ja&${facets}`)
      ),
      100
    ))

    // --- Change feed ------------------------------------------------------------------------------
    const feedCursors = await deepCursors("/v2/catalog/changes", "limit=100", deepPages)
    rows.push(
      await run(
        "change feed pages limit=100 (replayed cursors)",
        paths(feedCursors.map((c) => `/v2/catalog/changes?limit=100&cursor=${c}`))
      )
    )

    /** Mirror clients page from a cold start, each sequentially, for at most `mirrorSeconds`. */
    const mirror = async (clients: number) => {
      const started = Date.now()
      const deadline = started + mirrorSeconds * 1000
      let complete = 0
      const counts = await Promise.all(Array.from({ length: clients }, async () => {
        let cursor: string | undefined
        let received = 0
        while (Date.now() < deadline) {
          const page = await get(`/v2/catalog/changes?limit=100${cursor ? `&cursor=${cursor}` : ""}`)
          if (page.status !== 200) throw new Error(`changes: ${page.status}`)
          received += page.body.items.length
          if (page.body.next_cursor === undefined) {
            complete++
            break
          }
          cursor = page.body.next_cursor
        }
        return received
      }))
      const seconds = (Date.now() - started) / 1000
      const total = counts.reduce((a, b) => a + b, 0)
      return { clients, total, seconds, rate: total / seconds, complete }
    }
    const feedRows = Number((await pg.query("SELECT count(*)::text AS n FROM catalog_changes")).rows[0].n)
    const mirrors = [await mirror(1), await mirror(4)]
    const rss = server.rssMb()

    // --- The same reads without the read cache: what a request that misses costs ------------------
    // A second server process on the same database with CATALOG_CACHE_MB=0: every request computes.
    const coldPort = await freePort()
    uncached = await startProcess(
      "dist/src/main.js",
      {
        DATABASE_URL: databaseUrl,
        CATALOG_PORT: String(coldPort),
        IDENTITY_PORT: String(await freePort()),
        SHIORI_SERVE: "catalog",
        SHIORI_DEMO_WORKS: "0",
        CATALOG_CACHE_MB: "0",
        ...unlimitedBudget
      },
      `http://127.0.0.1:${coldPort}/readyz`
    )
    await settle(uncached.child.pid!)
    const cold = `http://127.0.0.1:${coldPort}`
    const coldCpu = () => ({ server: ownCpu(uncached!.child.pid!), db: descendantsCpu(server.child.pid!) })
    for (const limit of [20, 100]) {
      const s = await run(
        `uncached: works first page limit=${limit}`,
        target(`/v2/catalog/works?limit=${limit}`, cold, coldCpu)
      )
      const ratio = s.rps / baselineRps.get(limit)!
      rows.push({
        ...s,
        ratio: `${ratio.toFixed(2)}x`,
        target: "p99 < 25 ms, >= 0.6x",
        met: s.requests > 0 && s.p99 < 25 && ratio >= 0.6 && s.non2xx === 0 && s.errors === 0
      })
    }
    const coldRows: Array<[string, ReturnType<typeof paths>, number]> = [
      [`works first page limit=100 ${include}`, paths([`/v2/catalog/works?limit=100&${include}`], cold, coldCpu), 25],
      [deep20[0], paths(deep20[1], cold, coldCpu), 25],
      ["batch of 100 ids", paths(batches, cold, coldCpu), 40],
      ["work detail, all 8 includes", paths(details, cold, coldCpu), 40],
      ["q= search limit=20", paths(q(""), cold, coldCpu), 100],
      ["q= search + 6 facets", paths(q(`&${facets}`), cold, coldCpu), 100]
    ]
    for (const [name, t, ms] of coldRows) rows.push(p99Under(await run(`uncached: ${name}`, t), ms))

    // --- Query plans of the main lists ------------------------------------------------------------
    const middle = (await pg.query(
      `SELECT position::text AS position FROM catalog_changes WHERE position IS NOT NULL
       ORDER BY position OFFSET $1 LIMIT 1`,
      [Math.floor(feedRows / 2)]
    )).rows[0] as { position: string }
    const plan = async (title: string, text: string, values: ReadonlyArray<unknown> = []) => {
      const result = await pg.query(`EXPLAIN (ANALYZE, BUFFERS, COSTS OFF) ${text}`, values as Array<unknown>)
      return `${title}:\n\n\`\`\`\n${result.rows.map((r: any) => r["QUERY PLAN"]).join("\n")}\n\`\`\``
    }
    const plans = [
      await plan(
        "Change feed page from the middle of the feed",
        // The feed's page statement (src/catalog/mirror/MirrorRepo.ts): rows after a position, in order.
        `SELECT c.target_object, c.id::text, c.updated_at, c.gone, c.position::text FROM catalog_changes c
         WHERE c.position > $1::bigint ORDER BY c.position LIMIT 100`,
        [middle.position]
      ),
      await plan(
        "Works first page (the baseline's statement)",
        `SELECT w.id::text AS id FROM works w WHERE w.live ORDER BY w.id ASC LIMIT 21`
      )
    ]

    const mirrorLines = mirrors.map((m) =>
      `| mirror, ${m.clients} client${m.clients > 1 ? "s" : ""} from cold start | ${m.rate.toFixed(0)} rows/s | ` +
      `${m.total} rows in ${m.seconds.toFixed(1)} s | ${m.complete}/${m.clients} finished the feed | ` +
      `>= 20000 rows/s | ${m.rate >= 20_000 ? "yes" : "**no**"} |`
    )
    return [
      `## Catalog on ${works.toLocaleString("en")} works`,
      report(rows),
      [
        "| mirror | throughput | rows | complete | target | met |",
        "|---|---:|---:|---|---|:-:|",
        ...mirrorLines
      ].join("\n"),
      `Change feed: ${feedRows} rows. Mirror clients page at limit=100, each sequentially, for at most ` +
      `${mirrorSeconds} s (\`BENCH_MIRROR_SECONDS\`).`,
      ...(failures.length === 0 ? [] : [
        `Requests that failed (and were retried) while collecting cursors: ${failures.length}; first: ` +
        failures.slice(0, 3).map((f) => `\`${f}\``).join(", ")
      ]),
      `Server RSS after the run: ${rss.toFixed(0)} MB (target < 400 MB: ${rss < 400 ? "yes" : "**no**"}).`,
      ...notes,
      `Load average after: ${loadavg()}. ${settings.connections} connections.`,
      ...plans
    ].join("\n\n")
  } finally {
    await pg.end().catch(() => {})
    await baseline.stop()
    await uncached?.stop()
    await server.stop()
  }
}
