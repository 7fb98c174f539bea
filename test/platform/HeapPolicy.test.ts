/**
 * The server's heap policy (README "Operating it", `HEAP_GROWING_PERCENT`): a value that is not an
 * integer from 0 to 1000 stops the server at start with a message naming the variable, before it
 * opens a database or a port.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawnSync } from "node:child_process"
import * as Path from "node:path"

const main = Path.resolve(import.meta.dirname, "../../dist/src/main.js")

describe("HEAP_GROWING_PERCENT (README: Operating it)", () => {
  it("refuses a value that is not an integer from 0 to 1000", () => {
    for (const value of ["abc", "-1", "1001", "12.5"]) {
      const run = spawnSync(process.execPath, [main], {
        env: { ...process.env, HEAP_GROWING_PERCENT: value, SHIORI_DATA_DIR: "/nonexistent/shiori-heap-test" },
        encoding: "utf8",
        timeout: 30_000
      })
      expect(run.status, value).not.toBe(0)
      expect(run.stderr, value).toContain(`HEAP_GROWING_PERCENT must be an integer from 0 to 1000, not ${value}`)
    }
  })
})
