import { defineConfig } from "vitest/config"

// The deployment topology (test/deploy): needs haproxy, so `npm test` leaves it out and
// `npm run test:deploy` runs it on its own (.ci/run installs haproxy first).
export default defineConfig({
  test: {
    include: ["test/deploy/**/*.test.ts"],
    testTimeout: 150_000,
    hookTimeout: 180_000,
    pool: "forks",
    maxWorkers: 1,
    reporters: ["default"]
  }
})
