/**
 * The suite's own output: what a test's servers log is printed only when that test fails
 * (vitest.config.ts `silent: "passed-only"`), so `npm test` reads as its results, not ~1,100
 * blocks of INFO lines. Runs vitest on test/meta/logsFixture.test.ts with the project's config.
 */
import { describe, expect, it } from "@effect/vitest"
import { spawn } from "node:child_process"
import { join, resolve } from "node:path"

const root = resolve(__dirname, "../..")

const vitest = () =>
  new Promise<string>((done, reject) => {
    const child = spawn(process.execPath, [join(root, "node_modules/vitest/vitest.mjs"), "run", "test/meta/logsFixture.test.ts", "--reporter", "default"], {
      cwd: root,
      env: { ...process.env, ATTEST_LOGS_FIXTURE: "1", FORCE_COLOR: "0", NO_COLOR: "1" }
    })
    let out = ""
    child.stdout.on("data", (d: Buffer) => (out += d.toString()))
    child.stderr.on("data", (d: Buffer) => (out += d.toString()))
    child.once("error", reject)
    child.once("close", () => done(out))
  })

describe("test output", () => {
  it("shows a test's log lines only when it fails", async () => {
    const out = await vitest()
    expect({
      failingShown: out.includes("server line of the failing test"),
      passingShown: out.includes("server line of the passing test"),
      failed: /1 failed/.test(out)
    }).toEqual({ failingShown: true, passingShown: false, failed: true })
  }, 120_000)
})
