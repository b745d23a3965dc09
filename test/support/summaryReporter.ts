/**
 * Ends a run with one plain line, "N passed, N failed, N skipped", which any CI log reader
 * understands; vitest's own summary is for people.
 */
import type { Reporter, TestModule } from "vitest/node"

export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>, unhandledErrors: ReadonlyArray<unknown>): void {
    let passed = 0
    let failed = unhandledErrors.length
    let skipped = 0
    for (const module of testModules) {
      if (module.state() === "failed" && [...module.children.allTests()].length === 0) failed++
      for (const test of module.children.allTests()) {
        const state = test.result().state
        if (state === "passed") passed++
        else if (state === "failed") failed++
        else skipped++
      }
    }
    const line = `\n${passed} passed, ${failed} failed, ${skipped} skipped\n`
    // After the default reporter's summary, which it prints once this hook returns.
    process.once("beforeExit", () => process.stdout.write(line))
  }
}
