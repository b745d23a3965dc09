import { describe, expect, it } from "vitest"
import { pullRow, pushRow, type Watched } from "../../src/cli/up/status.js"
import { verdictOf } from "../../src/tenant/agentStatus.js"
import { age, changeLine, renderTable, type StatusRow } from "../../src/cli/up/statusTable.js"

const row = (over: Partial<StatusRow> = {}): StatusRow => ({
  n: 1,
  model: "pull",
  agentId: "d432fbb3-d2f1-4a97-9ef7-75bd81c00000",
  stateName: "Get Quote",
  state: 3,
  evaluation: "pass",
  attestations: 4,
  lastSuccess: 1_000,
  lastFailure: null,
  ...over
})

const pushed = (over: Partial<StatusRow> = {}): StatusRow =>
  row({ n: 3, model: "push", agentId: "p", stateName: "PASS", state: null, evaluation: "pass", ...over })

describe("attest up status table", () => {
  it("pads columns to the widest cell and shows ages relative to now", () => {
    const lines = renderTable([row(), row({ n: 2, agentId: "b", stateName: "Invalid Quote", state: 9, evaluation: "fail", lastFailure: "ima.validation.ima-ng.not_in_allowlist /usr/bin/evil" })], 1_030)
    expect(lines).toEqual([
      "#  model  agent                                 state              verdict  attestations  last success  last failure",
      "1  pull   d432fbb3-d2f1-4a97-9ef7-75bd81c00000  Get Quote (3)      pass     4             30s ago       -",
      "2  pull   b                                     Invalid Quote (9)  fail     4             30s ago       ima.validation.ima-ng.not_in_allowlist /usr/bin/evil"
    ])
  })

  it("shows push agents beside pull agents: acceptance, last verdict, count and failure type", () => {
    const lines = renderTable([
      row({ agentId: "a" }),
      pushed({ n: 2, agentId: "b" }),
      pushed({ agentId: "c", stateName: "FAIL", evaluation: "fail", attestations: 5, lastFailure: "policy_violation" }),
      pushed({ n: 4, agentId: "d", stateName: "TIMEOUT", evaluation: "pass", lastSuccess: 900 }),
      pushed({ n: 5, agentId: "e", stateName: "PENDING", evaluation: "pending", attestations: 0, lastSuccess: null })
    ], 1_030)
    expect(lines).toEqual([
      "#  model  agent  state          verdict  attestations  last success  last failure",
      "1  pull   a      Get Quote (3)  pass     4             30s ago       -",
      "2  push   b      PASS           pass     4             30s ago       -",
      "3  push   c      FAIL           fail     5             30s ago       policy_violation",
      "4  push   d      TIMEOUT        pass     4             2m ago        -",
      "5  push   e      PENDING        pending  0             never         -"
    ])
  })

  it("with several verifier runners (cluster mode): a runner column, and a change line when an agent moves to another runner", () => {
    const a = row({ agentId: "a", owner: "127.0.0.1:40001" })
    const b = row({ n: 2, agentId: "b", owner: null })
    expect(renderTable([a, b], 1_030)).toEqual([
      "#  model  agent  state          verdict  attestations  last success  runner           last failure",
      "1  pull   a      Get Quote (3)  pass     4             30s ago       127.0.0.1:40001  -",
      "2  pull   b      Get Quote (3)  pass     4             30s ago       -                -"
    ])
    expect(changeLine(a, a)).toBeNull()
    expect(changeLine(a, { ...a, owner: "127.0.0.1:40002" })).toEqual("agent 1  a  Get Quote (3), verdict pass, 4 attestations, runner 127.0.0.1:40002")
  })

  it("says never before the first success and switches to minutes and hours", () => {
    expect(renderTable([row({ lastSuccess: null })], 0)[1]).toContain("never")
    expect(renderTable([row({ lastSuccess: 1 })], 601)[1]).toContain("10m ago")
    expect(renderTable([row({ lastSuccess: 1 })], 4 * 3600 + 1)[1]).toContain("4h ago")
  })

  it("says never for a time of 0 (the verifier's 'none'), not hundreds of thousands of hours ago", () => {
    expect([age(1_795_000_000, 0), age(1_795_000_000, null), age(1_795_000_000, 1_794_999_990)]).toEqual(["never", "never", "10s ago"])
    const agent: Watched = { n: 1, model: "pull", agentId: "a", machine: undefined as never }
    const status = { operational_state: 3, attestation_count: 0, last_received_quote: 0, last_successful_attestation: 0, last_event_id: null } as never
    expect(renderTable([pullRow(agent, status)], 1_795_000_000)[1]).toEqual("1  pull   a      Get Quote (3)  pending  0             never         -")
  })

  it("fills a pull agent's verdict from its status: pending before a quote, fail when the latest quote failed, pass otherwise", () => {
    const s = (operational_state: number, last_received_quote: number, last_successful_attestation: number) =>
      ({ operational_state, last_received_quote, last_successful_attestation }) as never
    expect([verdictOf(s(3, 0, 0)), verdictOf(s(3, 100, 100)), verdictOf(s(3, 102, 100)), verdictOf(s(9, 100, 100)), verdictOf(s(7, 100, 100))])
      .toEqual(["pending", "pass", "fail", "fail", "pass"])
  })

  const wide = [
    row({ agentId: "d432fbb3-d2f1-4a97-9ef7-75bd81c00001" }),
    row({ n: 2, agentId: "d432fbb3-d2f1-4a97-9ef7-75bd81c00002", stateName: "Invalid Quote", state: 9, evaluation: "fail", lastFailure: "ima.validation.ima-ng.not_in_allowlist: File not found in allowlist: /usr/local/bin/tampered-2 (entry 7)" })
  ]

  it("keeps full ids when the screen leaves room for the failure column", () => {
    const lines = renderTable(wide, 1_030, 200)
    expect(lines[0]).toEqual("#  model  agent                                 state              verdict  attestations  last success  last failure")
    expect(lines[2]!.startsWith("2  pull   d432fbb3-d2f1-4a97-9ef7-75bd81c00002  Invalid Quote (9)  fail")).toBe(true)
  })

  it("shortens ids and headers on a narrow screen so the failure column starts within 80 columns", () => {
    expect(renderTable(wide, 1_030, 80)).toEqual([
      "#  model  agent     state              verdict  count  last ok  last failure",
      "1  pull   d432fbb3  Get Quote (3)      pass     4      30s ago  -",
      "2  pull   d432fbb3  Invalid Quote (9)  fail     4      30s ago  ima.validation.ima-ng.not_in_allowlist: File not found in allowlist: /usr/local/bin/tampered-2 (entry 7)"
    ])
  })

  it("prints a plain line only when the state or the failure changes", () => {
    expect(changeLine(undefined, row())).toEqual("agent 1  d432fbb3-d2f1-4a97-9ef7-75bd81c00000  Get Quote (3), verdict pass, 4 attestations")
    expect(changeLine(row(), row({ attestations: 9, lastSuccess: 2_000 }))).toBeNull()
    expect(changeLine(row(), row({ state: 9, stateName: "Invalid Quote", evaluation: "fail", lastFailure: "ima.validation.ima-ng.not_in_allowlist /x" }))).toEqual(
      "agent 1  d432fbb3-d2f1-4a97-9ef7-75bd81c00000  Invalid Quote (9), verdict fail, 4 attestations, last failure ima.validation.ima-ng.not_in_allowlist /x"
    )
  })

  it("prints a push agent's line when its acceptance or verdict changes, not when only its count does", () => {
    expect(changeLine(undefined, pushed())).toEqual("agent 3  p  push, PASS, verdict pass, 4 attestations")
    expect(changeLine(pushed(), pushed({ attestations: 8, lastSuccess: 2_000 }))).toBeNull()
    expect(changeLine(pushed(), pushed({ stateName: "FAIL", evaluation: "fail", lastFailure: "policy_violation" }))).toEqual(
      "agent 3  p  push, FAIL, verdict fail, 4 attestations, last failure policy_violation"
    )
    expect(changeLine(pushed(), pushed({ stateName: "TIMEOUT" }))).toEqual("agent 3  p  push, TIMEOUT, verdict pass, 4 attestations")
  })
})

describe("attest up push rows", () => {
  const agent: Watched = { n: 2, model: "push", agentId: "p", machine: undefined as never }
  const status = (attestation_status: "PASS" | "FAIL" | "TIMEOUT" | "PENDING", count: number, last: number, more: Record<string, unknown> = {}) =>
    ({ attestation_status, attestation_count: count, last_successful_attestation: last, last_event_id: null, attestation_model: "push", ...more }) as never

  it("is 'not at the verifier' before enrolment", () => {
    const r = pushRow(agent, undefined)
    expect([r.stateName, r.evaluation, r.attestations, r.lastSuccess, r.lastFailure]).toEqual(["not at the verifier", null, 0, null, null])
  })

  it("shows the acceptance and the verdict of the latest completed attestation", () => {
    const r = pushRow(agent, status("PASS", 1, 100, { last_evaluation: "pass" }))
    expect([r.stateName, r.evaluation, r.attestations, r.lastSuccess]).toEqual(["PASS", "pass", 1, 100])
  })

  it("shows the failure with its reason, type and message", () => {
    const r = pushRow(agent, status("FAIL", 3, 100, {
      last_evaluation: "fail",
      last_failure_reason: "policy_violation",
      last_event_id: "ima.validation.ima-ng.not_in_allowlist",
      last_event_message: "File not found in allowlist: /usr/local/bin/tampered-2 (entry 7)"
    }))
    expect([r.stateName, r.evaluation, r.lastFailure]).toEqual([
      "FAIL",
      "fail",
      "policy_violation: ima.validation.ima-ng.not_in_allowlist: File not found in allowlist: /usr/local/bin/tampered-2 (entry 7)"
    ])
  })

  it("is pending before the first verdict; a verifier's 0 for 'never' is no success", () => {
    const r = pushRow(agent, status("PENDING", 0, 0, { last_evaluation: null }))
    expect([r.stateName, r.evaluation, r.lastSuccess]).toEqual(["PENDING", "pending", null])
  })
})
