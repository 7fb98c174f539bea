/**
 * The headless Chromium the browser tests drive with playwright-core, from the first of:
 *
 * 1. `PLAYWRIGHT_CHROMIUM_PATH` when set (the Nix shell of `flake.nix` sets it). Nothing else is
 *    tried then: a wrong path is a mistake to report, not to work around.
 * 2. A `chromium` on `PATH`, or `/usr/bin/chromium`.
 * 3. The headless build shipped inside the `@sparticuz/chromium` devDependency, so `npm ci` is
 *    all a machine needs. Its brotli'd binary, the NSS/NSPR/expat libraries it links against and
 *    a font are unpacked once per package version into the temporary directory (into a scratch
 *    directory renamed into place, so a run never sees half a binary), and the libraries come
 *    first on the browser's `LD_LIBRARY_PATH`, so the host needs none of them.
 *
 * A candidate that does not start gives way to the next one. Nothing is skipped: when none
 * starts, acquiring the browser fails with what each candidate said.
 */
import Sparticuz from "@sparticuz/chromium"
import { Effect } from "effect"
import * as Fs from "node:fs"
import { createRequire } from "node:module"
import * as Os from "node:os"
import * as Path from "node:path"
import { pipeline } from "node:stream/promises"
import * as Zlib from "node:zlib"
import { type BrowserContext, chromium } from "playwright-core"

export interface ChromiumExecutable {
  /** Where the executable came from, for messages. */
  readonly source: string
  readonly path: string
  /** Added to the browser's environment. */
  readonly env: Record<string, string>
}

/**
 * Launch flags. Playwright adds `--headless` (we pass `headless: true`), `--user-data-dir` (a
 * fresh directory per launch) and, unless `chromiumSandbox` is set, `--no-sandbox`; ours says it
 * outright for root, where Chromium refuses to start sandboxed. No GPU, and nothing that talks to
 * Google's services in the background.
 */
const baseFlags = [
  ...(process.getuid?.() === 0 ? ["--no-sandbox"] : []),
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run"
]

/**
 * What is kept of `@sparticuz/chromium`'s recommended flags: those that only switch off pings,
 * reporting and prompts, or bound the disk cache. The rest serve AWS Lambda and are dropped:
 * `--single-process` / `--no-zygote` (Lambda refuses Chromium's `prctl(PR_SET_NO_NEW_PRIVS)`),
 * the SwiftShader GL flags (the GPU is off here), the headless mode (Playwright picks it), and
 * the flags that weaken the web's security model (`--disable-web-security`,
 * `--allow-running-insecure-content`, site isolation off, `SharedArrayBuffer` everywhere): the
 * tests check the pages' framing, cookie and redirect behaviour, which must be the browser's own.
 */
const keptSparticuzFlags = new Set([
  "--disable-domain-reliability",
  "--disable-print-preview",
  "--disk-cache-size",
  "--font-render-hinting",
  "--no-default-browser-check",
  "--no-pings"
])

export const chromiumFlags: ReadonlyArray<string> = [
  ...baseFlags,
  ...Sparticuz.args.filter((flag) => keptSparticuzFlags.has(flag.split("=")[0]!))
]

const isExecutableFile = (file: string) => {
  try {
    Fs.accessSync(file, Fs.constants.X_OK)
    return Fs.statSync(file).isFile()
  } catch {
    return false
  }
}

const systemChromium = (): ChromiumExecutable | undefined => {
  const onPath = (process.env.PATH ?? "").split(Path.delimiter)
    .filter((dir) => dir !== "")
    .map((dir) => Path.join(dir, "chromium"))
    .find(isExecutableFile)
  if (onPath !== undefined) return { source: "chromium on PATH", path: onPath, env: {} }
  if (isExecutableFile("/usr/bin/chromium")) return { source: "/usr/bin/chromium", path: "/usr/bin/chromium", env: {} }
  return undefined
}

/**
 * Extracts a ustar archive (regular files and directories only, which is all the package's
 * archives hold) below `into`.
 */
const untar = (archive: Buffer, into: string) => {
  for (let at = 0; at + 512 <= archive.length;) {
    const header = archive.subarray(at, at + 512)
    if (header.every((byte) => byte === 0)) return
    const field = (start: number, length: number) =>
      header.subarray(start, start + length).toString("utf8").replace(/\0.*$/s, "")
    // POSIX ustar keeps a name prefix at 345; GNU tar ("ustar  ") keeps other fields there.
    const prefix = header.subarray(257, 263).toString("latin1") === "ustar\0" ? field(345, 155) : ""
    const name = prefix === "" ? field(0, 100) : `${prefix}/${field(0, 100)}`
    const size = Number.parseInt(field(124, 12).trim() || "0", 8)
    const type = field(156, 1) || "0"
    const target = Path.resolve(into, name)
    if (target !== into && !target.startsWith(into + Path.sep)) {
      throw new Error(`tar entry outside the archive: ${name}`)
    }
    if (type === "5") {
      Fs.mkdirSync(target, { recursive: true })
    } else if (type === "0") {
      Fs.mkdirSync(Path.dirname(target), { recursive: true })
      const mode = Number.parseInt(field(100, 8).trim() || "644", 8) & 0o755
      Fs.writeFileSync(target, archive.subarray(at + 512, at + 512 + size), { mode })
    } else {
      throw new Error(`unsupported tar entry type "${type}" for ${name}`)
    }
    at += 512 + Math.ceil(size / 512) * 512
  }
}

/** The package's `bin/` (brotli'd binary and tarballs) and its version. */
const sparticuzPackage = () => {
  const entry = createRequire(import.meta.url).resolve("@sparticuz/chromium")
  // Up from the entry point (build/cjs/, which has a package.json of its own) to the package's root.
  for (let dir = Path.dirname(entry); Path.dirname(dir) !== dir; dir = Path.dirname(dir)) {
    const manifest = Path.join(dir, "package.json")
    if (!Fs.existsSync(manifest)) continue
    const { name, version } = JSON.parse(Fs.readFileSync(manifest, "utf8")) as { name?: string; version?: string }
    if (name === "@sparticuz/chromium" && version !== undefined) return { bin: Path.join(dir, "bin"), version }
  }
  throw new Error(`no @sparticuz/chromium package.json above ${entry}`)
}

const npmChromium = async (): Promise<ChromiumExecutable> => {
  const { bin, version } = sparticuzPackage()
  const uid = process.getuid?.() ?? "user"
  const dir = Path.join(Os.tmpdir(), `shiori-chromium-${version}-${uid}`)
  const source = `@sparticuz/chromium ${version}`
  const executable: ChromiumExecutable = {
    source,
    path: Path.join(dir, "chromium"),
    env: {
      LD_LIBRARY_PATH: [Path.join(dir, "lib"), process.env.LD_LIBRARY_PATH].filter(Boolean).join(":"),
      FONTCONFIG_FILE: Path.join(dir, "fonts.conf")
    }
  }
  if (isExecutableFile(executable.path)) return executable

  const scratch = Fs.mkdtempSync(`${dir}.partial-`)
  try {
    await pipeline(
      Fs.createReadStream(Path.join(bin, "chromium.br")),
      Zlib.createBrotliDecompress(),
      Fs.createWriteStream(Path.join(scratch, "chromium"), { mode: 0o755 })
    )
    // lib/: libnss3, libnspr4, libexpat and friends, built alongside the binary.
    untar(Zlib.brotliDecompressSync(Fs.readFileSync(Path.join(bin, "al2023.tar.br"))), scratch)
    // fonts/: Open Sans, added to the host's fonts (if it has any) by our own fontconfig file.
    untar(Zlib.brotliDecompressSync(Fs.readFileSync(Path.join(bin, "fonts.tar.br"))), scratch)
    Fs.writeFileSync(
      Path.join(scratch, "fonts.conf"),
      [
        `<?xml version="1.0"?>`,
        `<!DOCTYPE fontconfig SYSTEM "fonts.dtd">`,
        `<fontconfig>`,
        `  <include ignore_missing="yes">/etc/fonts/fonts.conf</include>`,
        `  <dir>${Path.join(dir, "fonts")}</dir>`,
        `  <cachedir>${Path.join(dir, "fonts-cache")}</cachedir>`,
        `</fontconfig>`,
        ``
      ].join("\n")
    )
    Fs.renameSync(scratch, dir)
  } catch (error) {
    Fs.rmSync(scratch, { recursive: true, force: true })
    // Another run unpacked the same version first: use theirs.
    const code = (error as NodeJS.ErrnoException).code
    if ((code === "ENOTEMPTY" || code === "EEXIST") && isExecutableFile(executable.path)) return executable
    throw new Error(`could not unpack ${source} from ${bin} into ${dir}: ${String(error)}`)
  }
  return executable
}

const launch = (executable: ChromiumExecutable, userDataDir: string) => {
  const env: Record<string, string> = {}
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined) env[name] = value
  return chromium.launchPersistentContext(userDataDir, {
    executablePath: executable.path,
    headless: true,
    args: [...chromiumFlags],
    env: { ...env, ...executable.env },
    timeout: 30_000
  })
}

const describeError = (error: unknown) => (error instanceof Error ? error.message : String(error)).trim()

/** Starts the first candidate that works in a fresh user data directory; throws with every failure. */
export const launchChromium = async (): Promise<
  { readonly context: BrowserContext; readonly executable: ChromiumExecutable; readonly userDataDir: string }
> => {
  const explicit = process.env.PLAYWRIGHT_CHROMIUM_PATH
  const candidates: Array<{ readonly label: string; readonly resolve: () => Promise<ChromiumExecutable> }> = []
  if (explicit !== undefined && explicit !== "") {
    candidates.push({
      label: `PLAYWRIGHT_CHROMIUM_PATH=${explicit}`,
      resolve: async () => {
        if (!isExecutableFile(explicit)) throw new Error("not an executable file")
        return { source: "PLAYWRIGHT_CHROMIUM_PATH", path: explicit, env: {} }
      }
    })
  } else {
    const system = systemChromium()
    if (system !== undefined) {
      candidates.push({
        label: `${system.source} (${system.path})`,
        resolve: async () => system
      })
    }
    candidates.push({ label: "@sparticuz/chromium (npm)", resolve: npmChromium })
  }

  const failures: Array<string> = []
  for (const candidate of candidates) {
    const userDataDir = Fs.mkdtempSync(Path.join(Os.tmpdir(), "shiori-chromium-profile-"))
    try {
      const executable = await candidate.resolve()
      const context = await launch(executable, userDataDir)
      return { context, executable, userDataDir }
    } catch (error) {
      Fs.rmSync(userDataDir, { recursive: true, force: true })
      failures.push(`- ${candidate.label}: ${describeError(error)}`)
    }
  }
  throw new Error(
    [
      "No headless Chromium could be started for the browser tests. Tried:",
      ...failures,
      "Set PLAYWRIGHT_CHROMIUM_PATH to a Chromium executable, or run `npm ci` to install @sparticuz/chromium."
    ].join("\n")
  )
}

/** A headless Chromium context for the scope; closed and its profile removed at the end. */
export const chromiumContext = Effect.acquireRelease(
  Effect.tryPromise({ try: launchChromium, catch: (error) => error as Error }),
  ({ context, userDataDir }) =>
    Effect.promise(async () => {
      await context.close().catch(() => {})
      Fs.rmSync(userDataDir, { recursive: true, force: true })
    })
)
