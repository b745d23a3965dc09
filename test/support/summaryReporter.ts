/**
 * Ends a run with one plain line, "N passed, N failed, N skipped", which any CI log reader
 * understands; vitest's own summary is for people. Before it, the slowest files: CI has a
 * 20-minute budget on two cores, and this list says where the time goes.
 */
import type { Reporter, TestModule } from "vitest/node"

const SLOWEST = 15

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
    const slowest = testModules
      .map((m) => ({ file: m.moduleId.replace(`${process.cwd()}/`, ""), seconds: m.diagnostic().duration / 1000 }))
      .sort((a, b) => b.seconds - a.seconds)
      .slice(0, SLOWEST)
      .map((m) => `  ${m.seconds.toFixed(1).padStart(6)} s  ${m.file}`)
    const line = `\nslowest files:\n${slowest.join("\n")}\n\n${passed} passed, ${failed} failed, ${skipped} skipped\n`
    // After the default reporter's summary, which it prints once this hook returns.
    process.once("beforeExit", () => process.stdout.write(line))
  }
}
