/**
 * The verifier's bulk status (`GET /v2.x/agents/?bulk=true`, schemas/Verifier.ts AgentStatus or its
 * 2.0–2.4 shape) read into the dashboard's agent record. Read by hand, field by field with a
 * fallback, rather than Schema-decoded: it runs on every sample over the whole fleet and a field a
 * verifier leaves out should blank one cell, not the page. `runtime_policy_name`, `mb_policy_name`
 * and `pcrs` are read when a verifier reports them (Keylime's status has no such fields), and
 * attest's push fields (`attestation_model`, `last_evaluation`, `last_attestation_index`,
 * `last_failure_reason`, `last_failure_at`) for a push agent, and its loop facts
 * (`seconds_since_verified_quote`, `owner_runner`: issue 24) for a pull agent.
 */
import { attestationStatus, stateName } from "../attestation/states.js"

export interface AgentRecord {
  readonly id: string
  /** push: the agent sends its evidence (API 3.0; attest's `attestation_model`); pull otherwise. */
  readonly model: "pull" | "push"
  readonly state: number
  /** A pull agent's operational state name; a push agent's acceptance, e.g. "FAIL (push)" (its operational state means nothing). */
  readonly stateName: string
  /** The verifier's `attestation_status` as given (PASS, FAIL, TIMEOUT, PENDING), null when not reported. */
  readonly acceptance: string | null
  /** Verdict of the latest completed push attestation, null for pull agents and before the first. */
  readonly lastEvaluation: "pass" | "fail" | null
  /** Index of the latest completed push attestation. */
  readonly lastAttestationIndex: number | null
  /** Reason (policy_violation, broken_evidence_chain) and time (epoch seconds) of the latest failed push attestation. */
  readonly lastFailureReason: string | null
  readonly lastFailureAt: number | null
  /**
   * PASS / FAIL / PENDING: the verifier's `attestation_status` (2.5+; a push agent's comes from
   * its attestations, TIMEOUT counted as FAIL), else derived from the state as Keylime's pull mode does.
   */
  readonly status: "PASS" | "FAIL" | "PENDING"
  /** null for a push agent: it listens on no port. */
  readonly ip: string | null
  readonly port: number | null
  readonly attestationCount: number
  /** Epoch seconds, null before the first. */
  readonly lastReceivedQuote: number | null
  readonly lastSuccess: number | null
  readonly severityLevel: number | null
  /** The failure type of the most severe event (Keylime's `last_event_id`). */
  readonly lastEventId: string | null
  /** What that failure said, e.g. the IMA path and entry (attest's `last_event_message`). */
  readonly lastEventMessage: string | null
  readonly hashAlg: string
  readonly encAlg: string
  readonly signAlg: string
  readonly hasRuntimePolicy: boolean
  readonly hasMbPolicy: boolean
  readonly runtimePolicyName: string | null
  readonly mbPolicyName: string | null
  readonly tpmPolicy: string
  readonly metaData: string
  readonly attestationPeriod: string | null
  readonly verifierId: string
  /** PCR index → hex value of the last quote, when the verifier exposes them. */
  readonly pcrs: Readonly<Record<string, string>> | null
  /** A pull agent's seconds since its last verified quote as the verifier counted them when sampled (attest's status). */
  readonly secondsSinceVerifiedQuote: number | null
  /** The runner whose loop last took the agent (cluster mode, `host:port`); null otherwise. */
  readonly ownerRunner: string | null
}

const str = (v: unknown, d = ""): string => (typeof v === "string" ? v : d)
const strOrNull = (v: unknown): string | null => (typeof v === "string" ? v : null)
const num = (v: unknown, d = 0): number => (typeof v === "number" && Number.isFinite(v) ? v : d)
const numOrNull = (v: unknown): number | null => (typeof v === "number" && Number.isFinite(v) ? v : null)
/** Keylime stores 0 for "never": shown as null. */
const epochOrNull = (v: unknown): number | null => {
  const n = numOrNull(v)
  return n === null || n <= 0 ? null : n
}

const pcrsOf = (v: unknown): Record<string, string> | null => {
  if (typeof v !== "object" || v === null || Array.isArray(v)) return null
  const out: Record<string, string> = {}
  for (const [k, x] of Object.entries(v)) if (typeof x === "string") out[k] = x
  return out
}

const statusOf = (reported: unknown, state: number): AgentRecord["status"] =>
  reported === "PASS" || reported === "FAIL" || reported === "PENDING" ? reported : reported === "TIMEOUT" ? "FAIL" : attestationStatus(state)

export const agentRecordOf = (id: string, s: Record<string, unknown>): AgentRecord => {
  const state = num(s["operational_state"], -1)
  const push = s["attestation_model"] === "push"
  const acceptance = strOrNull(s["attestation_status"])
  const evaluation = s["last_evaluation"]
  return {
    id,
    model: push ? "push" : "pull",
    state,
    stateName: push ? `${acceptance ?? "unknown"} (push)` : (stateName as Record<number, string>)[state] ?? `state ${state}`,
    acceptance,
    lastEvaluation: evaluation === "pass" || evaluation === "fail" ? evaluation : null,
    lastAttestationIndex: numOrNull(s["last_attestation_index"]),
    lastFailureReason: strOrNull(s["last_failure_reason"]),
    lastFailureAt: epochOrNull(s["last_failure_at"]),
    status: statusOf(s["attestation_status"], state),
    ip: push ? null : str(s["ip"]),
    port: numOrNull(s["port"]),
    attestationCount: num(s["attestation_count"]),
    lastReceivedQuote: epochOrNull(s["last_received_quote"]),
    lastSuccess: epochOrNull(s["last_successful_attestation"]),
    severityLevel: numOrNull(s["severity_level"]),
    lastEventId: strOrNull(s["last_event_id"]),
    lastEventMessage: strOrNull(s["last_event_message"]),
    hashAlg: str(s["hash_alg"]),
    encAlg: str(s["enc_alg"]),
    signAlg: str(s["sign_alg"]),
    hasRuntimePolicy: s["has_runtime_policy"] === 1 || num(s["allowlist_len"]) > 0,
    hasMbPolicy: s["has_mb_refstate"] === 1 || num(s["mb_refstate_len"]) > 0,
    runtimePolicyName: strOrNull(s["runtime_policy_name"]),
    mbPolicyName: strOrNull(s["mb_policy_name"]),
    tpmPolicy: str(s["tpm_policy"]),
    metaData: str(s["meta_data"]),
    attestationPeriod: strOrNull(s["attestation_period"]),
    verifierId: str(s["verifier_id"]),
    pcrs: pcrsOf(s["pcrs"]),
    secondsSinceVerifiedQuote: numOrNull(s["seconds_since_verified_quote"]),
    ownerRunner: strOrNull(s["owner_runner"])
  }
}

/** The bulk results (`{id: status}`); anything but an object of objects is no agents. */
export const agentsOfBulk = (results: unknown): Map<string, AgentRecord> => {
  const out = new Map<string, AgentRecord>()
  if (typeof results !== "object" || results === null) return out
  for (const [id, s] of Object.entries(results as Record<string, unknown>)) {
    if (typeof s === "object" && s !== null) out.set(id, agentRecordOf(id, s as Record<string, unknown>))
  }
  return out
}

/**
 * The verdict of the agent's latest quote (pull: failed when it is newer than the last success,
 * or judged invalid) or completed attestation (push); pending before the first.
 */
export const verdictOfRecord = (a: AgentRecord): "pass" | "fail" | "pending" => {
  if (a.model === "push") return a.lastEvaluation ?? "pending"
  if (a.state === 9) return "fail"
  if (a.lastReceivedQuote === null) return "pending"
  return a.lastReceivedQuote > (a.lastSuccess ?? 0) ? "fail" : "pass"
}

/** Snake-case state key, as the metrics' `state` label spells it ("Get Quote (retry)" → get_quote_retry). */
export const stateKey = (name: string): string => name.toLowerCase().replace(/[^a-z0-9]+/g, "_").replace(/^_|_$/g, "")
