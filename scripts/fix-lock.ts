/**
 * The npm registry reachable from our machines carries only the platform builds they use, so npm
 * leaves other platforms' optional packages (`@rollup/rollup-darwin-arm64`, ...) out of
 * package-lock.json, and `npm ci` then refuses the lock as out of sync. This adds each missing
 * optional entry with the os/cpu/libc its name declares: npm skips it on other platforms and
 * installs it where it belongs. Run after any `npm install`: `npx tsx scripts/fix-lock.ts`.
 */
import * as Fs from "node:fs"

const file = "package-lock.json"
const lock = JSON.parse(Fs.readFileSync(file, "utf8"))
const packages: Record<string, any> = lock.packages

const platform = (name: string) => {
  const tokens = name.split("/").pop()!.split("-")
  const os = tokens.find((t) =>
    ["darwin", "linux", "win32", "android", "freebsd", "openbsd", "netbsd", "sunos", "aix", "openharmony"].includes(t)
  )
  const cpu = tokens.find((t) =>
    ["x64", "arm64", "arm", "ia32", "ppc64", "riscv64", "s390x", "loong64", "mips64el", "wasm32", "universal"]
      .includes(t)
  )
  const libc = tokens.includes("musl") || tokens.includes("musleabihf")
    ? "musl"
    : tokens.includes("gnu") || tokens.includes("gnueabihf")
    ? "glibc"
    : undefined
  return { os, cpu: cpu === "universal" ? undefined : cpu, libc }
}

let added = 0
for (const [path, entry] of Object.entries(packages)) {
  for (const [name, spec] of Object.entries<string>(entry.optionalDependencies ?? {})) {
    const nested = `${path === "" ? "" : `${path}/`}node_modules/${name}`
    if (packages[nested] !== undefined || packages[`node_modules/${name}`] !== undefined) continue
    const { cpu, libc, os } = platform(name)
    if (os === undefined) continue
    packages[`node_modules/${name}`] = {
      version: spec.replace(/^[\^~=]/, ""),
      optional: true,
      os: [os],
      ...(cpu ? { cpu: [cpu] } : {}),
      ...(libc ? { libc: [libc] } : {})
    }
    added++
  }
}
lock.packages = Object.fromEntries(
  Object.entries(packages).sort(([a], [b]) => (a === "" ? -1 : b === "" ? 1 : a < b ? -1 : 1))
)
Fs.writeFileSync(file, JSON.stringify(lock, null, 2) + "\n")
console.log(`package-lock.json: added ${added} optional platform entries`)
