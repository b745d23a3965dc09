/**
 * The dashboard's history (pure): events per agent change, attestations per second from count
 * deltas (agents removed never make it negative), failures pruned after an hour, timelines bounded.
 */
import { describe, expect, it } from "@effect/vitest"
import { agentRecordOf, type AgentRecord, verdictOfRecord } from "../../src/dashboard/agents.js"
import { emptyHistory, MAX_EVENTS_PER_AGENT, recordSample } from "../../src/dashboard/history.js"

const agent = (id: string, o: Record<string, unknown> = {}): AgentRecord =>
  agentRecordOf(id, { operational_state: 3, attestation_count: 0, last_event_id: null, severity_level: null, ...o })
const fleet = (...agents: Array<AgentRecord>) => new Map(agents.map((a) => [a.id, a]))

describe("dashboard history", () => {
  it("an agent's status is the verifier's attestation_status when reported (push agents), else derived from its state", () => {
    expect([
      agent("push-failed", { attestation_status: "FAIL" }).status,
      agent("push-timeout", { attestation_status: "TIMEOUT" }).status,
      agent("push-new", { attestation_status: "PENDING" }).status,
      agent("pull-2.4").status,
      agent("pull-invalid", { operational_state: 9 }).status
    ]).toEqual(["FAIL", "FAIL", "PENDING", "PASS", "FAIL"])
  })

  it("derives attestations, failures and the rate from consecutive samples", () => {
    const h = emptyHistory()
    recordSample(h, fleet(agent("a"), agent("b")), 0)
    recordSample(h, fleet(agent("a", { attestation_count: 10 }), agent("b", { operational_state: 9, last_event_id: "ima.x", severity_level: 2 })), 2000)
    expect(h.samples.map((s) => [s.pass, s.fail, s.rate])).toEqual([[2, 0, 0], [1, 1, 5]])
    expect(h.timelines.get("a")!.map((e) => e.kind)).toEqual(["added", "attested"])
    expect(h.timelines.get("b")!.map((e) => [e.kind, e.type ?? null])).toEqual([["added", null], ["state", null], ["failure", "ima.x"]])
    expect(h.failures).toEqual([{ t: 2000, agentId: "b", type: "ima.x" }])
    // "a" deleted: the total falls, the rate is 0, not negative; its timeline says it went
    recordSample(h, fleet(agent("b", { operational_state: 9, last_event_id: "ima.x", severity_level: 2 })), 4000)
    expect(h.samples.at(-1)!.rate).toBe(0)
    expect(h.timelines.get("a")!.at(-1)!.kind).toBe("removed")
    // an hour later the failure is no longer counted
    recordSample(h, fleet(agent("b", { operational_state: 9, last_event_id: "ima.x", severity_level: 2 })), 4000 + 3_600_001)
    expect(h.failures).toEqual([])
  })

  it("keeps at most MAX_EVENTS_PER_AGENT events per agent", () => {
    const h = emptyHistory()
    for (let i = 0; i <= MAX_EVENTS_PER_AGENT + 50; i++) recordSample(h, fleet(agent("a", { attestation_count: i })), i * 1000)
    expect(h.timelines.get("a")!.length).toBe(MAX_EVENTS_PER_AGENT)
    expect(h.timelines.get("a")!.at(-1)!.count).toBe(1)
  })

  const push = (o: Record<string, unknown> = {}) =>
    agentRecordOf("p", {
      operational_state: 3, ip: null, port: null, attestation_model: "push", attestation_status: "PASS", attestation_count: 0,
      last_event_id: null, severity_level: null, last_evaluation: null, last_attestation_index: null, last_failure_reason: null, last_failure_at: null, ...o
    })

  it("a push agent: its acceptance as its state, no address, and a timeline of its attestations with their verdicts", () => {
    const failed = {
      attestation_status: "FAIL", attestation_count: 3, last_evaluation: "fail", last_attestation_index: 4, last_failure_reason: "policy_violation",
      last_failure_at: 1_790_000_010, last_event_id: "ima.validation.ima-ng.not_in_allowlist", last_event_message: "File not found in allowlist: /usr/bin/evil (entry 7)"
    }
    const record = push(failed)
    expect([record.model, record.stateName, record.status, record.ip, verdictOfRecord(record)]).toEqual(["push", "FAIL (push)", "FAIL", null, "fail"])
    const h = emptyHistory()
    recordSample(h, fleet(push({ attestation_count: 1, last_evaluation: "pass", last_attestation_index: 0 })), 0)
    recordSample(h, fleet(push({ attestation_count: 3, last_evaluation: "pass", last_attestation_index: 2 })), 2000)
    // two attestations fail between samples
    recordSample(h, fleet(push(failed)), 4000)
    recordSample(h, fleet(push(failed)), 6000)
    expect(h.timelines.get("p")!.map((e) => [e.kind, e.count ?? null, e.message])).toEqual([
      ["added", null, "seen in state PASS (push), 1 passed, latest pass"],
      ["attested", 2, "2 attestations passed"],
      ["state", null, "PASS → FAIL"],
      ["failure", 2, "2 attestations failed (the latest shown): policy_violation: ima.validation.ima-ng.not_in_allowlist: File not found in allowlist: /usr/bin/evil (entry 7)"]
    ])
    expect(h.failures).toEqual([{ t: 4000, agentId: "p", type: "ima.validation.ima-ng.not_in_allowlist" }])
  })
})
