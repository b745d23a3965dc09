import { describe, expect, it } from "vitest"
import { changeLine, redraw, renderTable, type StatusRow } from "../../src/cli/up/statusTable.js"

const row = (over: Partial<StatusRow> = {}): StatusRow => ({
  n: 1,
  agentId: "d432fbb3-d2f1-4a97-9ef7-75bd81c00000",
  stateName: "Get Quote",
  state: 3,
  attestations: 4,
  lastSuccess: 1_000,
  lastFailure: null,
  ...over
})

describe("attest up status table", () => {
  it("pads columns to the widest cell and shows ages relative to now", () => {
    const lines = renderTable([row(), row({ n: 2, agentId: "b", stateName: "Invalid Quote", state: 9, lastFailure: "ima.validation.ima-ng.not_in_allowlist /usr/bin/evil" })], 1_030)
    expect(lines).toEqual([
      "#  agent                                 state              attestations  last success  last failure",
      "1  d432fbb3-d2f1-4a97-9ef7-75bd81c00000  Get Quote (3)      4             30s ago       -",
      "2  b                                     Invalid Quote (9)  4             30s ago       ima.validation.ima-ng.not_in_allowlist /usr/bin/evil"
    ])
  })

  it("says never before the first success and switches to minutes and hours", () => {
    expect(renderTable([row({ lastSuccess: null })], 0)[1]).toContain("never")
    expect(renderTable([row({ lastSuccess: 0 })], 600)[1]).toContain("10m ago")
    expect(renderTable([row({ lastSuccess: 0 })], 4 * 3600)[1]).toContain("4h ago")
  })

  it("prints a plain line only when the state or the failure changes", () => {
    expect(changeLine(undefined, row())).toEqual("agent 1  d432fbb3-d2f1-4a97-9ef7-75bd81c00000  Get Quote (3), 4 attestations")
    expect(changeLine(row(), row({ attestations: 9, lastSuccess: 2_000 }))).toBeNull()
    expect(changeLine(row(), row({ state: 9, stateName: "Invalid Quote", lastFailure: "ima.validation.ima-ng.not_in_allowlist /x" }))).toEqual(
      "agent 1  d432fbb3-d2f1-4a97-9ef7-75bd81c00000  Invalid Quote (9), 4 attestations, last failure ima.validation.ima-ng.not_in_allowlist /x"
    )
  })

  it("redraws in place over the previous drawing", () => {
    expect(redraw(0, ["a", "b"])).toEqual("a\nb\n")
    expect(redraw(2, ["c"])).toEqual("\x1b[2A\x1b[Jc\n")
  })
})
