/**
 * Rewrites the README's envelope code table from `EnvelopeCodes` (schema/Identity/Envelope.ts), the
 * one place the codes are defined: `npx tsx scripts/readme-codes.ts`. test/identity/Envelope.test.ts
 * fails when the table and the registry differ.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { EnvelopeCodes } from "../schema/Identity/Envelope.js"

const path = Path.resolve(import.meta.dirname, "../README.md")
const readme = Fs.readFileSync(path, "utf8")
const header = "| Code | HTTP | Message | Meaning |\n|---|---|---|---|\n"
const start = readme.indexOf(header) + header.length
let end = start
while (readme.startsWith("| ", end)) end = readme.indexOf("\n", end) + 1
const rows = Object.values(EnvelopeCodes)
  .sort((a, b) => a.code - b.code)
  .map((entry) =>
    `| ${entry.code} | ${entry.status} | ${entry.message} | ${entry.description.replace(/\|/g, "\\|")} |\n`
  )
  .join("")
Fs.writeFileSync(path, readme.slice(0, start) + rows + readme.slice(end))
