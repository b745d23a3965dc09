/** The tenant's text output and its --state filter: aligned tables, ages, state names and numbers. */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Either } from "effect"
import { parseStateFilter, stateLabel } from "../../src/tenant/agentCommands.js"
import { age, fields, table } from "../../src/tenant/render.js"

describe("tenant output", () => {
  it("tables pad every column but the last; fields align their keys", () => {
    expect(table(["agent", "state", "n"], [["a", "Get Quote (3)", "12"], ["bbbbbb", "Failed (7)", "0"]]).split("\n")).toEqual([
      "agent   state          n",
      "a       Get Quote (3)  12",
      "bbbbbb  Failed (7)     0"
    ])
    expect(fields([["state", "Start (1)"], ["last success", "never"]])).toEqual("state:        Start (1)\nlast success: never")
  })

  it("ages from epoch seconds; 0 and null are never", () => {
    expect([age(1000, 0), age(1000, null), age(1000, 997), age(10_000, 10_000 - 600), age(100_000, 100_000 - 7200 * 2), age(1_000_000, 1_000_000 - 86_400 * 3)]).toEqual(
      ["never", "never", "3 s ago", "10 min ago", "4 h ago", "3 d ago"]
    )
  })

  it.effect("--state takes a number or Keylime's state name; anything else is a usage error listing them", () =>
    Effect.gen(function*() {
      expect(yield* parseStateFilter("3")).toEqual(3)
      expect(yield* parseStateFilter("get quote")).toEqual(3)
      expect(yield* parseStateFilter("GET_QUOTE_RETRY")).toEqual(4)
      expect(yield* parseStateFilter("Tenant Quote Failed")).toEqual(10)
      const bad = yield* Effect.either(parseStateFilter("11"))
      expect(Either.isLeft(bad) && bad.left.message).toMatch(/^--state 11: not a state; one of 0 Registered, 1 Start, .*10 Tenant Quote Failed$/)
      expect(stateLabel(9)).toEqual("Invalid Quote (9)")
    }))
})
