import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { defineConfig } from "vitest/config"
import LongestFirst from "./test/support/sequencer.js"

/**
 * Every `effect` / `@effect/*` specifier src/ and test/ import, subpaths included. Each test file
 * runs in a fresh process that loads Effect anew: from its separate ES modules that costs ~1.2 s
 * of CPU a file (effect alone; @effect/* add more), from one prebundle ~0.4 s. Every specifier
 * must be in the prebundle: one left out would load the unbundled `effect` beside the bundled one
 * (two copies, tags and classes that do not match), so the list is read from the sources.
 */
const effectSpecifiers = (): Array<string> => {
  const found = new Set<string>(["effect", "@effect/vitest"])
  const walk = (dir: string): void => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name)
      if (entry.isDirectory()) walk(path)
      else if (entry.name.endsWith(".ts")) {
        for (const m of readFileSync(path, "utf8").matchAll(/from "((?:effect|@effect\/[\w-]+)(?:\/[\w/-]+)?)"/g)) {
          found.add(m[1]!)
        }
      }
    }
  }
  for (const dir of ["src", "test"]) walk(join(__dirname, dir))
  return [...found].sort()
}

export default defineConfig({
  // in the checkout, not node_modules: worktrees that share one node_modules would otherwise rebuild
  // each other's prebundle (and mix their durations, test/support/sequencer.ts) mid-run
  cacheDir: ".vite",
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
    sequence: { sequencer: LongestFirst },
    // ATTEST_TEST_PREBUNDLE=0 loads Effect from its separate modules instead (to rule the prebundle
    // out when a failure looks like two copies of a module)
    deps: {
      optimizer: {
        ssr: {
          enabled: process.env["ATTEST_TEST_PREBUNDLE"] !== "0",
          include: effectSpecifiers(),
          // vitest keeps its runner state in its own module; the CommonJS and native-addon packages
          // load as they are (better-sqlite3 finds its addon from __filename, msgpackr's own
          // createRequire import collides with the one the prebundle adds), none of them imports Effect
          exclude: ["vitest", "msgpackr", "better-sqlite3", "pg"]
        }
      }
    },
    reporters: ["default", "./test/support/summaryReporter.ts"],
    // what servers log during a test (Effect's logger writes through the console) is kept and
    // printed only when that test fails: a passing run reads as its results (test/meta/quietLogs.test.ts)
    silent: "passed-only"
  }
})
