/**
 * `npx tsx bench/ProfileSummary.ts <file.cpuprofile> [...]`: where a server's CPU went, by package.
 * Profiles come from a bench run with `BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=<dir>"` (bench/README.md).
 * Self time of every sampled frame is charged to the package its script belongs to: the Effect
 * runtime, Schema, the HTTP and SQL modules of `effect`, the other `@effect/*` packages, `pg`, our own
 * code (`src/`, `schema/`), Node's internals, garbage collection; idle time is left out.
 */
import * as Fs from "node:fs"

interface CallFrame {
  readonly functionName: string
  readonly url: string
}

interface ProfileNode {
  readonly id: number
  readonly callFrame: CallFrame
}

interface Profile {
  readonly nodes: ReadonlyArray<ProfileNode>
  readonly samples: ReadonlyArray<number>
  readonly timeDeltas: ReadonlyArray<number>
}

const categoryOf = (frame: CallFrame): string | undefined => {
  const { functionName, url } = frame
  if (url === "") {
    if (functionName === "(idle)" || functionName === "(program)") return undefined
    if (functionName === "(garbage collector)") return "GC"
    return "native / V8"
  }
  const effect = /node_modules\/effect\/dist\/(.+)$/.exec(url)
  if (effect !== null) {
    // Effect 3 ships `dist/esm/...` (with `ParseResult` for Schema's issues), Effect 4 `dist/...`.
    const path = effect[1]!.replace(/^(esm|cjs)\//, "")
    if (/^(Schema|ParseResult|internal\/schema)/.test(path)) {
      return "effect: Schema"
    }
    if (/^(http|http-api)\//.test(path)) return "effect: HTTP + HttpApi"
    if (/^sql\//.test(path)) return "effect: SQL"
    return "effect: runtime and data types"
  }
  const scoped = /node_modules\/(@effect\/[^/]+)\//.exec(url)
  if (scoped !== null) {
    // Effect 3's separate packages, under the names of the `effect` modules that replaced them.
    if (scoped[1] === "@effect/platform") return "effect: HTTP + HttpApi"
    if (scoped[1] === "@effect/sql") return "effect: SQL"
    return scoped[1]!
  }
  if (/node_modules\/(pg|pg-protocol|pg-pool|pg-types)\//.test(url)) return "pg"
  const module = /node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(url)
  if (module !== null) return module[1]!
  if (/\/(src|schema)\//.test(url)) return "ours (src/, schema/)"
  if (url.startsWith("node:")) return "node: internals"
  return "other"
}

const summarize = (file: string) => {
  const profile = JSON.parse(Fs.readFileSync(file, "utf8")) as Profile
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const totals = new Map<string, number>()
  let all = 0
  profile.samples.forEach((id, i) => {
    const category = categoryOf(byId.get(id)!.callFrame)
    if (category === undefined) return
    const micros = profile.timeDeltas[i] ?? 0
    totals.set(category, (totals.get(category) ?? 0) + micros)
    all += micros
  })
  const rows = [...totals.entries()].sort((a, b) => b[1] - a[1])
  console.log(`\n${file}: ${(all / 1e6).toFixed(2)} s of CPU (idle excluded)\n`)
  console.log("| package | share | CPU s |")
  console.log("|---|---:|---:|")
  for (const [category, micros] of rows) {
    console.log(`| ${category} | ${((micros / all) * 100).toFixed(1)}% | ${(micros / 1e6).toFixed(2)} |`)
  }
}

for (const file of process.argv.slice(2)) summarize(file)
