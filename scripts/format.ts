/**
 * The one formatter of the tree: dprint's TypeScript plugin with Effect's settings
 * (no semicolons, double quotes, 2 spaces, 120 columns). `--check` lists unformatted
 * files and exits 1; without it, files are rewritten in place.
 */
import { createFromBuffer } from "@dprint/formatter"
import { getPath } from "@dprint/typescript"
import * as Fs from "node:fs"
import * as Path from "node:path"

const args = process.argv.slice(2)
const check = args.includes("--check")
const named = args.filter((a) => !a.startsWith("--"))
const roots = named.length > 0 ? named : ["src", "schema", "test", "migrations", "bench", "scripts", "vitest.config.ts"]

const formatter = createFromBuffer(Fs.readFileSync(getPath()))
formatter.setConfig({ indentWidth: 2, lineWidth: 120 }, {
  semiColons: "asi",
  quoteStyle: "alwaysDouble",
  trailingCommas: "never",
  operatorPosition: "maintain",
  "arrowFunction.useParentheses": "force"
})

const files: Array<string> = []
const walk = (path: string): void => {
  if (!Fs.existsSync(path)) return
  const stat = Fs.statSync(path)
  if (stat.isDirectory()) {
    for (const entry of Fs.readdirSync(path)) {
      if (entry === "node_modules" || entry.startsWith(".")) continue
      walk(Path.join(path, entry))
    }
  } else if (/\.(ts|mts)$/.test(path)) {
    files.push(path)
  }
}
roots.forEach(walk)

const unformatted: Array<string> = []
for (const file of files) {
  const text = Fs.readFileSync(file, "utf8")
  const formatted = formatter.formatText({ filePath: file, fileText: text })
  if (formatted !== text) {
    if (check) unformatted.push(file)
    else Fs.writeFileSync(file, formatted)
  }
}
if (check && unformatted.length > 0) {
  console.error(`${unformatted.length} file(s) are not formatted (run \`npm run format\`):`)
  for (const file of unformatted) console.error(`  ${file}`)
  process.exit(1)
}
console.log(`${files.length} files ${check ? "checked" : "formatted"}`)
