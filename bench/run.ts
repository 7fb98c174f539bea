/**
 * `npm run bench`: every scenario next to its baseline, in one run, on this machine.
 * Select suites with `BENCH=platform,catalog,identity` (default: all of them).
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { root, settings } from "./Harness.js"
import { catalog } from "./scenarios/Catalog.js"
import { identity } from "./scenarios/Identity.js"
import { platform } from "./scenarios/Platform.js"

const suites: Record<string, () => Promise<string>> = { platform, catalog, identity }
const selected = (process.env.BENCH ?? Object.keys(suites).join(",")).split(",").filter((s) => s in suites)

const sections: Array<string> = [
  `# shiori benchmarks — ${new Date().toISOString()}`,
  `${settings.connections} connections, ${settings.duration} s per scenario after a ${settings.warmup} s warm-up, ` +
  `node ${process.version}, loopback.`
]
for (const name of selected) {
  console.error(`== ${name}`)
  sections.push(await suites[name]!())
}
const report = sections.join("\n\n") + "\n"
console.log(report)
const dir = Path.join(root, "bench/results")
Fs.mkdirSync(dir, { recursive: true })
Fs.writeFileSync(Path.join(dir, `${new Date().toISOString().replace(/[:.]/g, "-")}.md`), report)
