/**
 * `npm run bench`: every scenario next to its baseline, in one run, on this machine.
 * Select suites with `BENCH=platform,catalog,identity,writes,uploads,faults` or `npm run bench -- --suite writes`
 * (comma-separated; the flag wins over the variable; default: all of them).
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { root, settings } from "./Harness.js"
import { catalog } from "./scenarios/Catalog.js"
import { faults } from "./scenarios/Faults.js"
import { identity } from "./scenarios/Identity.js"
import { platform } from "./scenarios/Platform.js"
import { uploads } from "./scenarios/Uploads.js"
import { writes } from "./scenarios/Writes.js"

const suites: Record<string, () => Promise<string>> = { platform, catalog, identity, writes, uploads, faults }
const flag = process.argv.indexOf("--suite")
const requested = flag >= 0 ? process.argv[flag + 1] : process.env.BENCH
const selected = (requested ?? Object.keys(suites).join(",")).split(",").map((s) => s.trim()).filter((s) => s !== "")
const unknown = selected.filter((s) => !(s in suites))
if (unknown.length > 0) {
  console.error(`unknown suite ${unknown.join(", ")}; suites: ${Object.keys(suites).join(", ")}`)
  process.exit(2)
}

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
