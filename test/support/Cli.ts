/**
 * Runs the operator CLI as a user would (`npm run --silent cli -- ...` runs the same built file;
 * `npm test` builds first), in a child process.
 */
import { execFile } from "node:child_process"
import * as Path from "node:path"

const root = Path.resolve(import.meta.dirname, "../..")

export interface CliResult {
  readonly code: number
  readonly stdout: string
  readonly stderr: string
}

export const runCli = (args: ReadonlyArray<string>, env: Record<string, string>): Promise<CliResult> =>
  new Promise((resolve) => {
    execFile(
      process.execPath,
      [Path.join(root, "dist/src/cli/main.js"), ...args],
      { cwd: root, env: { ...process.env, LOG_LEVEL: "Warning", ...env }, timeout: 180_000 },
      (error, stdout, stderr) => resolve({ code: error ? Number((error as any).code ?? 1) : 0, stdout, stderr })
    )
  })
