/**
 * The layout of src/: no two folders import each other, directly or round a loop, and the two
 * servers meet only where they should. A folder is the directory of a file (`src/identity/tokens`);
 * the scan is scripts/import-cycles.ts (`npx tsx scripts/import-cycles.ts` prints the same), which
 * counts every relative import, `import type` included.
 *
 * - A cycle means neither folder can be read, moved or tested without the other; the failure names
 *   each loop with the imports (file:line) that make its arrows, so the one to move is in sight.
 * - The catalog reaches the identity provider only through its contract, src/platform/IdentityPort.ts:
 *   nothing under src/catalog/ imports src/identity/ (identity implements the contract, src/App.ts
 *   plugs it in).
 * - src/platform/, which both servers build on (the contract among it), imports neither of them.
 * - Nothing under schema/ (the contract both servers implement, and the OpenAPI documents written
 *   from it by `npm run openapi`) imports src/.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Os from "node:os"
import * as Path from "node:path"
import { describeCycle, folderCycles, type FolderGraph, folderGraph, type Import } from "../../scripts/import-cycles.js"

const root = Path.resolve(import.meta.dirname, "../..")

/** Every import from a folder under `from` into a folder under `to`, as `file:line imports target`. */
const importsBetween = (graph: FolderGraph, from: string, to: string): Array<string> =>
  [...graph].flatMap(([source, arrows]) =>
    source === from || source.startsWith(`${from}/`)
      ? [...arrows].flatMap(([target, imports]) =>
        target === to || target.startsWith(`${to}/`)
          ? imports.map((item: Import) => `${item.at} imports ${item.target}`)
          : []
      )
      : []
  )

describe("folder-level imports of src/", () => {
  const graph = folderGraph(root)

  it("form no cycle", () => {
    expect(folderCycles(graph).map(describeCycle)).toEqual([])
  })

  it("the catalog reaches identity only through src/platform/IdentityPort.ts", () => {
    expect(importsBetween(graph, "src/catalog", "src/identity")).toEqual([])
  })

  it("src/platform imports neither server", () => {
    expect([
      ...importsBetween(graph, "src/platform", "src/catalog"),
      ...importsBetween(graph, "src/platform", "src/identity")
    ]).toEqual([])
  })

  it("nothing under schema/ imports src/", () => {
    expect(importsBetween(folderGraph(root, ["src", "schema"]), "schema", "src")).toEqual([])
  })

  it("the scan sees type imports, re-exports and imports over several lines, and names the closing imports", () => {
    const dir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "import-cycles-"))
    try {
      const write = (file: string, text: string) => {
        Fs.mkdirSync(Path.dirname(Path.join(dir, file)), { recursive: true })
        Fs.writeFileSync(Path.join(dir, file), text)
      }
      write("src/a/A.ts", `import type { B } from "../b/B.js"\nexport type A = B\n`)
      write("src/b/B.ts", `export type B = string\nexport {\n  C\n} from "../c/C.js"\n`)
      write("src/c/C.ts", `import {\n  type A\n} from "../a/A.js"\nexport const C = 1 as unknown as A\n`)
      write("src/d/D.ts", `import { C } from "../c/C.js"\nexport const D = C\n`)
      const cycles = folderCycles(folderGraph(dir))
      expect(cycles.map(describeCycle)).toEqual([
        [
          "src/a -> src/b -> src/c -> src/a",
          "  src/a -> src/b:",
          "    src/a/A.ts:1 imports src/b/B.ts",
          "  src/b -> src/c:",
          "    src/b/B.ts:2 imports src/c/C.ts",
          "  src/c -> src/a:",
          "    src/c/C.ts:1 imports src/a/A.ts"
        ].join("\n")
      ])
    } finally {
      Fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
