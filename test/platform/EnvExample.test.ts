/**
 * `.env.example` lists every setting the servers read, and only those (README, "Configuration":
 * "every key with its default is in .env.example").
 *
 * The settings are taken from the source, not from a hand-kept list: settings are read where they
 * are used (`Config` in each layer's constructor, across some twenty modules), so a list would be
 * one more thing to forget. The scan parses `src/`, `schema/` and `migrations/` with the TypeScript
 * compiler and takes:
 * - the name of every `Config` constructor (`Config.String("HOST")`, `Config.schema(schema, "NAME")`,
 *   `Config.Literals([...], "NAME")`, ...: the name is the last argument), followed through local
 *   helpers that take the name, or a part of it, as a parameter (`bodyLimit("MAX_JSON_BODY_BYTES", n)`,
 *   `perAddress("IDENTITY_AUTHORIZE", ...)` reading `${prefix}_RATE_BURST`);
 * - every `process.env.NAME` and `process.env["NAME"]`.
 * A read whose name the scan cannot work out (a name computed at run time, a helper called from
 * another module) fails the test with its location rather than being skipped, so a new way of
 * reading settings cannot slip past it.
 *
 * Out of scope: the settings of tests and benchmarks (`test/`, `bench/`, `scripts/`: `BENCH_*`,
 * `PLAYWRIGHT_CHROMIUM_PATH`, the baselines' `PORT`, ...), except that `TEST_DATABASE_URL`, which
 * `.env.example` lists under "tests", must still be read by the test support; and `NODE_OPTIONS`,
 * Node's own variable, which the heap policy of src/main.ts only inspects.
 */
import { describe, expect, it } from "@effect/vitest"
import * as Fs from "node:fs"
import * as Path from "node:path"
import ts from "typescript"

const root = Path.resolve(import.meta.dirname, "../..")

/** Variables the code reads that are not shiori's settings. */
const notSettings: ReadonlySet<string> = new Set(["NODE_OPTIONS"])

const settingName = /^[A-Z][A-Z0-9_]*$/

const sourceFiles = (dir: string): Array<string> =>
  Fs.readdirSync(Path.join(root, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith(".ts"))
    .map((entry) => Path.relative(root, Path.join(entry.parentPath, entry.name)))
    .sort()

interface Scan {
  /** Setting name -> where it is read (`file:line`). */
  readonly read: Map<string, Array<string>>
  /** Reads whose name could not be worked out. */
  readonly unresolved: Array<string>
}

type Env = ReadonlyMap<string, string>

/** A function declared in the module (`const f = (...) => ...` or `function f(...)`). */
type LocalFunction = ts.ArrowFunction | ts.FunctionExpression | ts.FunctionDeclaration

const unwrap = (node: ts.Expression): ts.Expression =>
  ts.isParenthesizedExpression(node) || ts.isAsExpression(node) || ts.isSatisfiesExpression(node)
    ? unwrap(node.expression)
    : node

/** `Config.<Constructor>(...)`: the calls that read a setting (not `Config.withDefault`, `Config.map`, ...). */
const isConfigRead = (call: ts.CallExpression): boolean => {
  const callee = call.expression
  if (!ts.isPropertyAccessExpression(callee) || !ts.isIdentifier(callee.expression)) return false
  if (callee.expression.text !== "Config") return false
  const member = callee.name.text
  return member === "schema" || (/^[A-Z]/.test(member) && member !== "ConfigError")
}

/** `process.env` */
const isProcessEnv = (node: ts.Expression): boolean =>
  ts.isPropertyAccessExpression(node) && ts.isIdentifier(node.expression) && node.expression.text === "process" &&
  node.name.text === "env"

const emptyScan = (): Scan => ({ read: new Map(), unresolved: [] })

/** Adds the settings `text` (the module `file`) reads to `scan`. */
const scanModule = (file: string, text: string, scan: Scan) => {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true)
  const at = (node: ts.Node) => `${file}:${source.getLineAndCharacterOfPosition(node.getStart()).line + 1}`

  // The module's functions and string constants, by name.
  const functions = new Map<string, LocalFunction>()
  const constants = new Map<string, string>()
  const collect = (node: ts.Node) => {
    if (ts.isFunctionDeclaration(node) && node.name !== undefined) functions.set(node.name.text, node)
    if (ts.isVariableDeclaration(node) && ts.isIdentifier(node.name) && node.initializer !== undefined) {
      const init = unwrap(node.initializer)
      if (ts.isArrowFunction(init) || ts.isFunctionExpression(init)) functions.set(node.name.text, init)
      if (ts.isStringLiteralLike(init) && ts.getCombinedNodeFlags(node) & ts.NodeFlags.Const) {
        constants.set(node.name.text, init.text)
      }
    }
    ts.forEachChild(node, collect)
  }
  collect(source)

  /** The string `node` evaluates to under `env` (the parameters bound by a call), if it is known. */
  const evaluate = (node: ts.Expression, env: Env): string | undefined => {
    const expr = unwrap(node)
    if (ts.isStringLiteralLike(expr)) return expr.text
    if (ts.isIdentifier(expr)) return env.get(expr.text) ?? constants.get(expr.text)
    if (ts.isTemplateExpression(expr)) {
      let out = expr.head.text
      for (const span of expr.templateSpans) {
        const part = evaluate(span.expression, env)
        if (part === undefined) return undefined
        out += part + span.literal.text
      }
      return out
    }
    if (ts.isBinaryExpression(expr) && expr.operatorToken.kind === ts.SyntaxKind.PlusToken) {
      const left = evaluate(expr.left, env)
      const right = evaluate(expr.right, env)
      return left === undefined || right === undefined ? undefined : left + right
    }
    return undefined
  }

  /** Reads (node -> resolved at least once) seen in this module, to report the ones never resolved. */
  const reads = new Map<ts.Node, boolean>()
  const note = (node: ts.Node, name: string | undefined, site: ts.Node) => {
    if (name !== undefined && settingName.test(name)) {
      const where = scan.read.get(name) ?? []
      where.push(at(site))
      scan.read.set(name, where)
      reads.set(node, true)
    } else if (!reads.has(node)) {
      reads.set(node, false)
    }
  }

  // Walks `node` with the parameters in `env`; a call of a local function walks its body with the
  // arguments bound (`active` stops recursion); `site` is the outermost such call, where a read is reported.
  const walk = (node: ts.Node, env: Env, active: ReadonlySet<LocalFunction>, site: ts.Node | undefined) => {
    if (ts.isCallExpression(node)) {
      if (isConfigRead(node)) {
        const name = node.arguments.at(-1)
        note(node, name === undefined ? undefined : evaluate(name, env), site ?? node)
      } else if (ts.isIdentifier(node.expression)) {
        const fn = functions.get(node.expression.text)
        if (fn !== undefined && !active.has(fn) && fn.body !== undefined) {
          const bound = new Map(env)
          fn.parameters.forEach((param, i) => {
            const arg = node.arguments[i]
            const value = arg === undefined ? undefined : evaluate(arg, env)
            if (ts.isIdentifier(param.name)) {
              if (value === undefined) bound.delete(param.name.text)
              else bound.set(param.name.text, value)
            }
          })
          walk(fn.body, bound, new Set([...active, fn]), site ?? node)
        }
      }
    }
    if (ts.isPropertyAccessExpression(node) && isProcessEnv(node.expression)) {
      note(node, node.name.text, site ?? node)
    } else if (ts.isElementAccessExpression(node) && isProcessEnv(node.expression)) {
      note(node, evaluate(node.argumentExpression, env), site ?? node)
    } else if (
      isProcessEnv(node as ts.Expression) && !ts.isPropertyAccessExpression(node.parent) &&
      !ts.isElementAccessExpression(node.parent)
    ) {
      note(node, undefined, node)
    }
    ts.forEachChild(node, (child) => walk(child, env, active, site))
  }
  walk(source, new Map(), new Set(), undefined)

  for (const [node, resolved] of reads) {
    if (!resolved) scan.unresolved.push(`${at(node)}: ${node.getText(source).slice(0, 100)}`)
  }
}

const scanSources = (dirs: ReadonlyArray<string>): Scan => {
  const scan = emptyScan()
  for (const dir of dirs) {
    for (const file of sourceFiles(dir)) scanModule(file, Fs.readFileSync(Path.join(root, file), "utf8"), scan)
  }
  for (const name of notSettings) scan.read.delete(name)
  return scan
}

interface Listed {
  readonly line: number
  /** The `# --- <section>` group the key is listed in ("" for none). */
  readonly section: string
}

/** The keys `.env.example` lists: `NAME=value`, or commented out as `# NAME=example` when unset by default. */
const listedKeys = (): Map<string, Listed> => {
  const keys = new Map<string, Listed>()
  let section = ""
  Fs.readFileSync(Path.join(root, ".env.example"), "utf8").split("\n").forEach((line, i) => {
    // A group is a `# --- <name>` header and the lines up to the next blank one.
    const header = /^#\s*---\s*(.+)$/.exec(line)
    if (header !== null) section = header[1]!.trim()
    if (line.trim() === "") section = ""
    const match = /^(?:#\s*)?([A-Z][A-Z0-9_]*)=/.exec(line)
    if (match !== null) keys.set(match[1]!, { line: i + 1, section })
  })
  return keys
}

describe(".env.example (README: Configuration)", () => {
  const servers = scanSources(["src", "schema", "migrations"])
  const tests = scanSources(["test/support"])
  const listed = listedKeys()

  it("the scan follows helpers and refuses names it cannot work out", () => {
    const scan = emptyScan()
    scanModule(
      "Sample.ts",
      [
        `const PREFIX = "SAMPLE"`,
        `const limit = (name: string, fallback: number) => Config.Int(name).pipe(Config.withDefault(fallback))`,
        "const bucket = (prefix: string) => Config.all({ burst: limit(`${prefix}_BURST`, 1) })",
        `const a = Config.schema(Schema.String, "SAMPLE_DIRECT")`,
        "const b = bucket(`${PREFIX}_BUCKET`)",
        `const c = process.env.SAMPLE_ENV ?? process.env["SAMPLE_INDEXED"]`,
        `const d = (suffix: string) => Config.String("SAMPLE_" + suffix)`,
        `const e = process.env[key]`
      ].join("\n"),
      scan
    )
    expect([...scan.read.keys()].sort()).toEqual([
      "SAMPLE_BUCKET_BURST",
      "SAMPLE_DIRECT",
      "SAMPLE_ENV",
      "SAMPLE_INDEXED"
    ])
    expect(scan.unresolved).toEqual([
      `Sample.ts:7: Config.String("SAMPLE_" + suffix)`,
      "Sample.ts:8: process.env[key]"
    ])
  })

  it("the scan understands every setting the servers read", () => {
    expect(servers.unresolved).toEqual([])
    // Each way of reading a setting is found in the real sources.
    for (const name of ["HOST", "MAX_JSON_BODY_BYTES", "IDENTITY_AUTHORIZE_RATE_BURST", "HEAP_GROWING_PERCENT"]) {
      expect(servers.read.has(name), name).toBe(true)
    }
  })

  it("lists every setting the servers read", () => {
    const missing = [...servers.read].filter(([name]) => !listed.has(name)).map(([name, where]) =>
      `${name} (read at ${where.join(", ")})`
    )
    expect(missing).toEqual([])
  })

  it("lists only settings something reads", () => {
    const isRead = (name: string, { section }: Listed) =>
      servers.read.has(name) || (section === "tests" && tests.read.has(name))
    const unread = [...listed].filter(([name, where]) => !isRead(name, where)).map(([name, { line }]) =>
      `${name} (.env.example:${line})`
    )
    expect(unread).toEqual([])
  })
})
