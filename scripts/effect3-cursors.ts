/**
 * Writes `test/fixtures/effect3-cursors.json`: real cursors issued by the Effect 3 build of shiori,
 * which `test/platform/WireCompat.test.ts` hands to the current build (docs/api-contract.md, "Cursors
 * and pages": a cursor is passed back unchanged, and only a change of `SHIORI_SECRET` invalidates it).
 *
 *   (cd /work/old && npm run -s build)          # the Effect 3 checkout, built
 *   npx tsx scripts/effect3-cursors.ts /work/old  # from this checkout's root
 *
 * Everything runs on the OLD build, in a temporary data directory (its embedded PostgreSQL):
 * 1. `cli migrate`;
 * 2. the old `seedCatalog` with the fixture's works count, seed and a fixed reference `now` (the
 *    generator places every timestamp relative to `now`, and `cli seed` always uses the current time,
 *    so it is called directly, in a child process whose `effect` is the old checkout's);
 * 3. `cli api-key create --content-limit nsfw`;
 * 4. `node dist/src/main.js` (catalog only) with the fixture's `SHIORI_SECRET`: each request below is
 *    asked, and its `next_cursor` followed once; the fixture keeps the URL, the cursor, and the ids of
 *    both pages.
 */
import { execFile, spawn } from "node:child_process"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { freePort } from "./local-topology.js"

const old = Path.resolve(process.argv[2] ?? "../old")
const out = Path.resolve(import.meta.dirname, "../test/fixtures/effect3-cursors.json")

/** What the test must reproduce: the same secret, and the same catalog (works, seed, now). */
const secret = "wire-compat-fixture-secret-0123456789abcdef"
const catalog = { works: 300, seed: 7, now: "2026-01-01T00:00:00.000Z" } as const

/** Item identity: the id, and for the change feed the entity type too (`work:12`). */
const idsOf = (body: { items: ReadonlyArray<{ id?: string; target_object?: string }> }) =>
  body.items.map((item) => item.target_object === undefined ? item.id! : `${item.target_object}:${item.id}`)

const run = (args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<string>((resolve, reject) => {
    execFile(
      process.execPath,
      args,
      { cwd: old, env: { ...process.env, ...env }, timeout: 300_000 },
      (error, stdout, stderr) =>
        error ? reject(new Error(`${args.join(" ")}: ${error.message}\n${stdout}\n${stderr}`)) : resolve(stdout)
    )
  })

/** The old build's seeder, run with the old checkout's own `effect` (the module resolves from `old`). */
const seedProgram = `
import { Effect } from "effect"
import { seedCatalog } from "./dist/src/catalog/seed/Seed.js"
import { DatabaseUrlLive } from "./dist/src/platform/Database.js"
const options = JSON.parse(process.env.FIXTURE_CATALOG)
const result = await Effect.runPromise(
  seedCatalog({ works: options.works, seed: options.seed, now: new Date(options.now), workers: 0 }).pipe(
    Effect.provide(DatabaseUrlLive)
  )
)
console.log("SEED " + JSON.stringify({ status: result.status }))
`

const main = async () => {
  if (!Fs.existsSync(Path.join(old, "dist/src/main.js"))) throw new Error(`build ${old} first (npm run -s build)`)
  const commit = await new Promise<string>((resolve) =>
    execFile("git", ["-C", old, "rev-parse", "HEAD"], (e, stdout) => resolve(e ? "unknown" : stdout.trim()))
  )
  const dataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-effect3-cursors-"))
  const env = { SHIORI_DATA_DIR: dataDir, SHIORI_SECRET: secret, LOG_LEVEL: "Warning" }
  try {
    await run(["dist/src/cli/main.js", "migrate"], env)
    const seeded = await run(["--input-type=module", "-e", seedProgram], {
      ...env,
      FIXTURE_CATALOG: JSON.stringify(catalog)
    })
    if (!seeded.includes("SEED {\"status\":\"seeded\"}")) throw new Error(`not seeded:\n${seeded}`)
    const created = await run([
      "dist/src/cli/main.js",
      "api-key",
      "create",
      "--site",
      "fixture",
      "--scopes",
      "catalog:read",
      "--content-limit",
      "nsfw",
      "--json"
    ], env)
    const { key } = JSON.parse(created) as { key: string }

    const port = await freePort()
    const server = spawn(process.execPath, ["dist/src/main.js"], {
      cwd: old,
      env: {
        ...process.env,
        ...env,
        SHIORI_SERVE: "catalog",
        SHIORI_DEMO_WORKS: "0",
        CATALOG_PORT: String(port),
        IDENTITY_PORT: String(await freePort())
      },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    server.stdout!.on("data", (d) => output += d)
    server.stderr!.on("data", (d) => output += d)
    const exited = new Promise<void>((resolve) => server.once("exit", () => resolve()))
    const base = `http://127.0.0.1:${port}`
    try {
      const deadline = Date.now() + 60_000
      while (!(await fetch(`${base}/readyz`).then((r) => r.status === 200, () => false))) {
        if (Date.now() > deadline || server.exitCode !== null) throw new Error(`old server not ready:\n${output}`)
        await new Promise((r) => setTimeout(r, 100))
      }
      const get = async (path: string) => {
        const res = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${key}` } })
        const body = await res.json() as any
        if (res.status !== 200) throw new Error(`${path}: ${res.status} ${JSON.stringify(body)}`)
        return body
      }

      // Parents with at least two children, for the filtered and nested lists.
      const releases = await get("/v2/catalog/releases?limit=100")
      const perWork = new Map<string, number>()
      for (const r of releases.items) perWork.set(r.work_id, (perWork.get(r.work_id) ?? 0) + 1)
      const workWithReleases = [...perWork].find(([, n]) => n >= 2)![0]
      let workWithCharacters: string | undefined
      for (const w of (await get("/v2/catalog/works?limit=50")).items) {
        if ((await get(`/v2/catalog/works/${w.id}/characters?limit=2`)).next_cursor !== undefined) {
          workWithCharacters = w.id
          break
        }
      }
      if (workWithCharacters === undefined) throw new Error("no work with three characters in the first 50")

      const urls = [
        "/v2/catalog/works?limit=2",
        "/v2/catalog/works?limit=2&sort=updated",
        "/v2/catalog/works?limit=2&sort=released_desc&content_rating=nsfw",
        "/v2/catalog/search?limit=2&sort=rating_vndb",
        "/v2/catalog/changes?limit=2",
        "/v2/catalog/releases?limit=2",
        `/v2/catalog/releases?limit=1&work_id=${workWithReleases}`,
        "/v2/catalog/characters?limit=2",
        `/v2/catalog/works/${workWithCharacters}/characters?limit=2`
      ]
      const cursors = []
      for (const url of urls) {
        const first = await get(url)
        if (first.next_cursor === undefined) throw new Error(`${url}: no next_cursor`)
        const next = await get(`${url}&cursor=${encodeURIComponent(first.next_cursor)}`)
        cursors.push({ url, first_page_ids: idsOf(first), cursor: first.next_cursor, next_page_ids: idsOf(next) })
      }

      const fixture = {
        about: "Cursors issued by the Effect 3 build; regenerate with scripts/effect3-cursors.ts (see its header).",
        old_commit: commit,
        shiori_secret: secret,
        catalog,
        content_limit: "nsfw",
        cursors
      }
      Fs.mkdirSync(Path.dirname(out), { recursive: true })
      Fs.writeFileSync(out, JSON.stringify(fixture, null, 2) + "\n")
      console.log(`${Path.relative(process.cwd(), out)}: ${cursors.length} cursors from ${old} at ${commit}`)
    } finally {
      server.kill("SIGTERM")
      await exited
    }
  } finally {
    Fs.rmSync(dataDir, { recursive: true, force: true })
  }
}

await main()
