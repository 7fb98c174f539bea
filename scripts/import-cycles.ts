/**
 * Prints every import cycle between the folders of `src/`: `npx tsx scripts/import-cycles.ts`
 * (exits 1 when there is one). test/platform/ImportCycles.test.ts runs the same scan and fails on
 * any cycle.
 *
 * A folder is the directory of a file (`src/identity/tokens`), so a cycle says that two parts of
 * the house lean on each other and neither can be read, moved or tested without the other. Every
 * relative import counts, `import type` included: a type names the folder it lives in just as a
 * value does. The scan parses each file with the TypeScript compiler and takes import and export
 * declarations, `import("...")` calls and `import("...")` types.
 */
import * as Fs from "node:fs"
import * as Path from "node:path"
import { pathToFileURL } from "node:url"
import ts from "typescript"

/** One import of a file in one folder from a file in another. */
export interface Import {
  /** `src/catalog/works/Works.ts:3`. */
  readonly at: string
  /** The file imported, `src/catalog/search/Search.ts`. */
  readonly target: string
}

/** Folder -> folder it imports -> the imports that make the arrow. */
export type FolderGraph = Map<string, Map<string, Array<Import>>>

/** A loop of folders: `folders[i]` imports `folders[i + 1]`, and the last imports the first. */
export interface Cycle {
  readonly folders: ReadonlyArray<string>
  /** The imports behind each arrow of the loop, in the loop's order. */
  readonly imports: ReadonlyArray<ReadonlyArray<Import>>
}

const sourceFiles = (root: string, dir: string): Array<string> =>
  Fs.readdirSync(Path.join(root, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => Path.relative(root, Path.join(entry.parentPath, entry.name)).split(Path.sep).join("/"))
    .sort()

/** The module specifiers a file names, with their lines. */
const specifiers = (file: string, text: string): Array<{ readonly line: number; readonly specifier: string }> => {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const found: Array<{ line: number; specifier: string }> = []
  const add = (node: ts.Node, literal: ts.Node | undefined) => {
    if (literal !== undefined && ts.isStringLiteralLike(literal)) {
      found.push({ line: source.getLineAndCharacterOfPosition(node.getStart()).line + 1, specifier: literal.text })
    }
  }
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) {
      add(node, node.moduleSpecifier)
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      add(node, node.moduleReference.expression)
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      add(node, node.arguments[0])
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      add(node, node.argument.literal)
    }
    ts.forEachChild(node, visit)
  }
  visit(source)
  return found
}

/** The file a relative specifier names (`./Search.js` -> `src/catalog/search/Search.ts`), if it is one of `files`. */
const resolve = (from: string, specifier: string, files: ReadonlySet<string>): string | undefined => {
  if (!specifier.startsWith(".")) return undefined
  const base = Path.posix.join(Path.posix.dirname(from), specifier)
  const candidates = [
    base,
    base.replace(/\.js$/, ".ts"),
    `${base}.ts`,
    `${base}/index.ts`
  ]
  return candidates.find((candidate) => files.has(candidate))
}

/** The folder-level import graph of the `.ts` files under `dir` (relative to `root`; several folders scan together). */
export const folderGraph = (root: string, dir: string | ReadonlyArray<string> = "src"): FolderGraph => {
  const files = (typeof dir === "string" ? [dir] : dir).flatMap((each) => sourceFiles(root, each))
  const known = new Set(files)
  const graph: FolderGraph = new Map()
  for (const file of files) {
    const from = Path.posix.dirname(file)
    const arrows = graph.get(from) ?? new Map<string, Array<Import>>()
    graph.set(from, arrows)
    for (const { line, specifier } of specifiers(file, Fs.readFileSync(Path.join(root, file), "utf8"))) {
      const target = resolve(file, specifier, known)
      if (target === undefined) continue
      const to = Path.posix.dirname(target)
      if (to === from) continue
      const imports = arrows.get(to) ?? []
      arrows.set(to, imports)
      imports.push({ at: `${file}:${line}`, target })
    }
  }
  return graph
}

/** The strongly connected components with more than one folder (Tarjan), each sorted. */
const tangles = (graph: FolderGraph): Array<Array<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const found: Array<Array<string>> = []
  let next = 0
  const connect = (folder: string): void => {
    index.set(folder, next)
    low.set(folder, next)
    next++
    stack.push(folder)
    onStack.add(folder)
    for (const to of graph.get(folder)?.keys() ?? []) {
      if (!index.has(to)) {
        connect(to)
        low.set(folder, Math.min(low.get(folder)!, low.get(to)!))
      } else if (onStack.has(to)) {
        low.set(folder, Math.min(low.get(folder)!, index.get(to)!))
      }
    }
    if (low.get(folder) === index.get(folder)) {
      const component: Array<string> = []
      let member: string
      do {
        member = stack.pop()!
        onStack.delete(member)
        component.push(member)
      } while (member !== folder)
      if (component.length > 1) found.push(component.sort())
    }
  }
  for (const folder of [...graph.keys()].sort()) if (!index.has(folder)) connect(folder)
  return found
}

/**
 * The cycles of the graph: for every arrow that lies on a loop, the shortest loop through it (each
 * loop once, started at its smallest folder). Listing every elementary loop instead would bury the
 * few arrows that matter under thousands of their combinations; this way each arrow to cut is named
 * at least once, and a tangle with no loop left has no arrow left to name.
 */
export const folderCycles = (graph: FolderGraph): Array<Cycle> => {
  const cycles = new Map<string, Cycle>()
  for (const component of tangles(graph)) {
    const members = new Set(component)
    const inside = (folder: string) => [...(graph.get(folder)?.keys() ?? [])].filter((to) => members.has(to)).sort()
    for (const from of component) {
      for (const to of inside(from)) {
        // Breadth first from `to` back to `from`: the shortest way round.
        const previous = new Map<string, string>([[to, to]])
        const queue = [to]
        while (queue.length > 0 && !previous.has(from)) {
          const folder = queue.shift()!
          for (const next of inside(folder)) {
            if (!previous.has(next)) {
              previous.set(next, folder)
              queue.push(next)
            }
          }
        }
        const back: Array<string> = []
        for (let folder = from; folder !== to; folder = previous.get(folder)!) back.unshift(folder)
        const loop = [to, ...back]
        const first = loop.indexOf([...loop].sort()[0]!)
        const folders = [...loop.slice(first), ...loop.slice(0, first)]
        cycles.set(folders.join(" "), {
          folders,
          imports: folders.map((folder, i) => graph.get(folder)!.get(folders[(i + 1) % folders.length]!)!)
        })
      }
    }
  }
  return [...cycles.values()].sort((a, b) => a.folders.join(" ").localeCompare(b.folders.join(" ")))
}

/** A cycle in words: the loop, then the imports that make each of its arrows. */
export const describeCycle = (cycle: Cycle): string =>
  [
    [...cycle.folders, cycle.folders[0]].join(" -> "),
    ...cycle.folders.flatMap((from, i) => [
      `  ${from} -> ${cycle.folders[(i + 1) % cycle.folders.length]}:`,
      ...cycle.imports[i]!.map((item) => `    ${item.at} imports ${item.target}`)
    ])
  ].join("\n")

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const cycles = folderCycles(folderGraph(Path.resolve(import.meta.dirname, "..")))
  for (const cycle of cycles) console.log(`${describeCycle(cycle)}\n`)
  console.log(`${cycles.length} folder-level import cycle(s) in src/`)
  process.exitCode = cycles.length === 0 ? 0 : 1
}
