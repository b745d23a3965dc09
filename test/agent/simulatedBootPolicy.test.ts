/**
 * `attest up` enrols each simulated machine with a reference state made from its own boot log and
 * the `example` measured-boot policy: that pair must pass (as it must for a real machine's log), and
 * the reference state must say what it is made from (PK/KEK certificates, initrd, kernel).
 */
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import { encodeEventLog, simulatedBootEvents } from "../../src/agent/measurements/bootLog.js"
import { createRefState } from "../../src/boot/createRefState.js"
import { evaluateMeasuredBoot } from "../../src/boot/evaluate.js"
import { parseEventLog } from "../../src/boot/eventLog.js"
import { examplePolicy } from "../../src/boot/examplePolicy.js"
import { replayPcrs } from "../../src/boot/replay.js"

describe("simulated machine boot log", () => {
  it("passes the example policy against a reference state made from itself, without warnings", () => {
    for (const name of ["agent-1", "agent-2"]) {
      const log = Either.getOrThrow(parseEventLog(encodeEventLog(simulatedBootEvents(name), ["sha1", "sha256"]).log))
      const created = Either.getOrThrow(createRefState(log))
      expect(created.warnings).toEqual([])
      const result = evaluateMeasuredBoot({ log, quotedPcrs: replayPcrs(log), refstate: created.refstate }, examplePolicy)
      expect(result.failures).toEqual([])
    }
  })

  it("fails the example policy against another machine's reference state (its kernel command line differs)", () => {
    const mine = Either.getOrThrow(parseEventLog(encodeEventLog(simulatedBootEvents("agent-1"), ["sha256"]).log))
    const other = Either.getOrThrow(parseEventLog(encodeEventLog(simulatedBootEvents("agent-2"), ["sha256"]).log))
    const result = evaluateMeasuredBoot({ log: mine, quotedPcrs: replayPcrs(mine), refstate: Either.getOrThrow(createRefState(other)).refstate }, examplePolicy)
    expect(result.failures.map((f) => f.type)).toEqual(["measured_boot.policy_example"])
  })
})
