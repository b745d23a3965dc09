/**
 * Run by test/meta/quietLogs.test.ts only (ATTEST_LOGS_FIXTURE=1): a passing and a failing test,
 * each logging through Effect's logger as a server under test does.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"

const fixture = process.env["ATTEST_LOGS_FIXTURE"] === "1"

describe.skipIf(!fixture)("logs fixture", () => {
  it.live("passes after logging", () => Effect.logInfo("server line of the passing test"))
  it.live("fails after logging", () =>
    Effect.gen(function*() {
      yield* Effect.logInfo("server line of the failing test")
      expect("this test").toEqual("fails on purpose")
    }))
})
