import { configDefaults, defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // The deployment topology needs haproxy: `npm run test:deploy` (vitest.deploy.config.ts).
    exclude: [...configDefaults.exclude, "test/deploy/**"],
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: files run in parallel, each against its own database.
    pool: "forks",
    maxWorkers: 2,
    reporters: ["default"]
  }
})
