import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    setupFiles: ["test/support/setup.ts"],
    // the executable spawned tests run is the bundle, built here once (test/support/attestBin.ts)
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: swtpm, PostgreSQL and the servers under test share them with the workers.
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    reporters: ["default", "./test/support/summaryReporter.ts"],
    // what servers log during a test (Effect's logger writes through the console) is kept and
    // printed only when that test fails: a passing run reads as its results (test/meta/quietLogs.test.ts)
    silent: "passed-only"
  }
})
