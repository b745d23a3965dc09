import { Either, Schema, Struct } from "effect"
import { describe, expect, it } from "vitest"
import { fastLatest, fastSession, memoizedFacts } from "../../src/verifier/domain/pushStore/fastRows.js"
import { LatestAttestation, PushAgentFacts, SessionRow } from "../../src/verifier/domain/pushStore/rows.js"
import { encodeEvaluationState, initialEvaluationState } from "../../src/attestation/evaluate/state.js"
import { makePriorStates } from "../../src/verifier/push/priorStates.js"

const decodeLatest = Schema.decodeUnknownEither(LatestAttestation)
const decodeSession = Schema.decodeUnknownEither(Schema.Struct(Struct.pick(SessionRow.fields, "agent_id", "active", "ended_reason", "token_expires_at")))

const latest = {
  agent_id: "a",
  idx: 5,
  stage: "verification_complete",
  evaluation: "pass",
  failure_reason: null,
  capabilities: "[]",
  evidence_requested: "[]",
  boot_time: "2026-01-01T00:00:00Z",
  capabilities_received_at: 1,
  challenges_expire_at: 2,
  evidence_received_at: 3,
  verification_completed_at: null
}
// SQLite's numbers, PostgreSQL's BIGINT strings, bigints, and values each schema refuses
const latestCases: ReadonlyArray<Record<string, unknown>> = [
  latest,
  { ...latest, idx: "7", capabilities_received_at: "1764230000000", evidence_received_at: 9n },
  { ...latest, stage: "evaluating_evidence", evaluation: "fail", failure_reason: "policy_violation" },
  { ...latest, idx: 1.5 },
  { ...latest, idx: "x" },
  { ...latest, stage: "done" },
  { ...latest, failure_reason: "other" },
  { ...latest, boot_time: null },
  { ...latest, evidence_received_at: undefined },
  { ...latest, challenges_expire_at: 2 ** 60 }
]
const session = { agent_id: "a", active: 1, ended_reason: null, token_expires_at: 5 }
const sessionCases: ReadonlyArray<Record<string, unknown>> = [
  session,
  { ...session, active: true, token_expires_at: "1764230000000" },
  { ...session, active: "0", ended_reason: "stopped", token_expires_at: null },
  { ...session, active: 2 },
  { ...session, ended_reason: "bored" },
  { ...session, token_expires_at: "soon" },
  { ...session, agent_id: 3 }
]

describe("the context row's fast decoders", () => {
  it("give the schema's value where they decide, and leave every row the schema refuses to it", () => {
    for (const r of latestCases) {
      const slow = decodeLatest(r)
      const fast = fastLatest(r)
      if (fast !== undefined) expect(Either.right(fast)).toEqual(slow)
      if (Either.isLeft(slow)) expect(fast).toEqual(undefined)
    }
    for (const r of sessionCases) {
      const slow = decodeSession(r)
      const fast = fastSession(r)
      if (fast !== undefined) expect(Either.right(fast)).toEqual(slow)
      if (Either.isLeft(slow)) expect(fast).toEqual(undefined)
    }
    // the rows of both databases are decided without the schema
    expect(fastLatest(latestCases[0]!)).not.toEqual(undefined)
    expect(fastLatest(latestCases[1]!)).not.toEqual(undefined)
    expect(fastSession(sessionCases[1]!)).not.toEqual(undefined)
  })

  it("reuse an agent's decoded facts only while its raw values are the same", () => {
    const facts = {
      agent_id: "a",
      operational_state: 3,
      ak_tpm: "AAAA",
      tpm_policy: "{}",
      ima_sign_verification_keys: "",
      accept_tpm_hash_algs: "[\"sha256\"]",
      accept_tpm_encryption_algs: "[\"rsa\"]",
      accept_tpm_signing_algs: "[\"rsassa\"]",
      runtime_policy_name: "p",
      runtime_policy_checksum: "c",
      runtime_policy_has_policy: 1,
      mb_policy_name: "",
      mb_policy_checksum: "",
      mb_policy_has_policy: 0
    }
    let decodes = 0
    const decode = (r: Record<string, unknown>) => (decodes++, Schema.decodeUnknownEither(PushAgentFacts)(r))
    const factsOf = memoizedFacts(Object.keys(PushAgentFacts.fields), decode)
    const first = factsOf("a", { ...facts })
    expect(Either.isRight(first)).toEqual(true)
    expect(factsOf("a", { ...facts })).toEqual(first)
    expect(decodes).toEqual(1)
    // an administrator's change: decoded again, and the new value kept
    const changed = factsOf("a", { ...facts, accept_tpm_hash_algs: "[\"sha384\"]" })
    expect(Either.map(changed, (f) => f.accept_tpm_hash_algs)).toEqual(Either.right(["sha384"]))
    expect(decodes).toEqual(2)
    // a refused row is never kept
    expect(Either.isLeft(factsOf("a", { ...facts, operational_state: "x" }))).toEqual(true)
    expect(Either.isLeft(factsOf("a", { ...facts, operational_state: "x" }))).toEqual(true)
    expect(decodes).toEqual(4)
  })

  it("prior states: the decoded state of the text last written, anything else decoded", () => {
    const states = makePriorStates()
    const next = { ...initialEvaluationState, count: 7 }
    const text = encodeEvaluationState(next)
    states.wrote("a", text, next)
    expect(states.stateOf("a", text)).toBe(next)
    const other = encodeEvaluationState({ ...initialEvaluationState, count: 8 })
    expect(states.stateOf("a", other).count).toEqual(8)
    expect(states.stateOf("a", null)).toEqual(initialEvaluationState)
    expect(states.stateOf("b", "not json")).toEqual(initialEvaluationState)
  })
})
