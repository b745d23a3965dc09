/**
 * Verifier wire formats (spec §2.2–§2.4, §4.1; keylime-wire.md §1.4 and the recorded exchanges).
 * The request Schemas describe what clients send (the tenant encodes with them); the creation body
 * is the one AgentConfig of src/attestation/, which the verifier decodes too (agentBody.ts keeps
 * Keylime's key order and texts around it).
 * Keylime's spellings are kept where clients read them: `uuids` as a list of 1-element lists,
 * `tmp_policy`, `runtimepolicy names`, `mbpolicy names`.
 */
import { Schema } from "effect"

const NullableString = Schema.NullOr(Schema.String)
const optionalNullable = <A, I, R>(s: Schema.Schema<A, I, R>) => Schema.optionalWith(Schema.NullOr(s), { exact: true })

/**
 * The creation body: the one agent configuration schema (src/attestation/AgentConfig.ts) that the
 * verifier decodes and the tenant and the v3 administration encode, with its variants.
 */
export { AgentConfig, AgentCreateBody, AgentCreateRequest, LegacyAgentCreateRequest, PortField } from "../src/attestation/AgentConfig.js"

const StatusCommon = {
  operational_state: Schema.Int,
  v: NullableString,
  /** null for a push agent, which listens on no port (Keylime's push mode too). */
  ip: NullableString,
  port: Schema.NullOr(Schema.Int),
  tpm_policy: Schema.String
}

const StatusTail = {
  accept_tpm_hash_algs: Schema.Array(Schema.String),
  accept_tpm_encryption_algs: Schema.Array(Schema.String),
  accept_tpm_signing_algs: Schema.Array(Schema.String),
  hash_alg: Schema.String,
  enc_alg: Schema.String,
  sign_alg: Schema.String,
  verifier_id: Schema.String,
  verifier_ip: Schema.String,
  verifier_port: Schema.Int,
  severity_level: Schema.NullOr(Schema.Int),
  last_event_id: NullableString,
  /** attest: what the last failure said (e.g. the IMA path and entry); Keylime has no such field. */
  last_event_message: Schema.optional(NullableString),
  attestation_count: Schema.Int,
  last_received_quote: Schema.NullOr(Schema.Int),
  last_successful_attestation: Schema.NullOr(Schema.Int),
  /**
   * attest's additions for a pull agent only (issue 24): seconds since its last verified quote
   * (from its creation before the first), and the runner whose loop last took it
   * (`cluster_runner_host:cluster_runner_port`; null in single-process mode).
   */
  seconds_since_verified_quote: Schema.optional(Schema.Int),
  owner_runner: Schema.optional(NullableString),
  /**
   * attest's additions for a push agent only (absent for pull agents, whose bodies stay Keylime's):
   * `push`; the verdict and index of its latest completed attestation; the reason and time
   * (epoch seconds) of its latest failed one, whose failure type and message are
   * `last_event_id` and `last_event_message`.
   */
  attestation_model: Schema.optional(Schema.Literal("push")),
  last_evaluation: Schema.optional(Schema.NullOr(Schema.Literal("pass", "fail"))),
  last_attestation_index: Schema.optional(Schema.NullOr(Schema.Int)),
  last_failure_reason: Schema.optional(NullableString),
  last_failure_at: Schema.optional(Schema.NullOr(Schema.Int))
}

/** GET agent results from API 2.5 (spec §2.2, field order as Keylime renders it). */
export const AgentStatus = Schema.Struct({
  ...StatusCommon,
  meta_data: Schema.String,
  has_mb_refstate: Schema.Literal(0, 1),
  has_runtime_policy: Schema.Literal(0, 1),
  ...StatusTail,
  /** TIMEOUT: a push agent missed its deadline (push-model.md §2.3). */
  attestation_status: Schema.Literal("PASS", "FAIL", "PENDING", "TIMEOUT"),
  attestation_period: Schema.String,
  maximum_attestation_interval: Schema.String
}).annotations({ identifier: "AgentStatus" })
export type AgentStatus = typeof AgentStatus.Type

/**
 * GET agent results for API 2.0–2.4 (spec §2.2 "earlier documented variant"): `allowlist_len` and
 * `mb_refstate_len` instead of the has_* flags, `enc_alg` without a bit length, `vtpm_policy`.
 */
export const LegacyAgentStatus = Schema.Struct({
  ...StatusCommon,
  vtpm_policy: NullableString,
  meta_data: Schema.String,
  allowlist_len: Schema.Int,
  mb_refstate_len: Schema.Int,
  ...StatusTail
}).annotations({ identifier: "LegacyAgentStatus" })
export type LegacyAgentStatus = typeof LegacyAgentStatus.Type

export const AnyAgentStatus = Schema.Union(AgentStatus, LegacyAgentStatus).annotations({ identifier: "AnyAgentStatus" })
export type AnyAgentStatus = typeof AnyAgentStatus.Type

/** GET /agents/ results: Keylime nests each id in a 1-element list. */
export const VerifierAgentList = Schema.Struct({
  uuids: Schema.Array(Schema.Tuple(Schema.String))
}).annotations({ identifier: "VerifierAgentList" })
export type VerifierAgentList = typeof VerifierAgentList.Type

/** GET /agents/?bulk=true results: status per agent id ({} when none). */
export const VerifierAgentBulk = Schema.Record({ key: Schema.String, value: AnyAgentStatus }).annotations({
  identifier: "VerifierAgentBulk"
})
export type VerifierAgentBulk = typeof VerifierAgentBulk.Type

const STATUS_KEYS = Object.keys(AgentStatus.fields)
const LEGACY_STATUS_KEYS = Object.keys(LegacyAgentStatus.fields)
/**
 * The bulk status with each agent's fields in its schema's order, as encoding it would give them,
 * without the encode's checks (the route answers the domain's values as they are; encoding 1,200
 * agents' statuses held the event loop ~64 ms, this ~2).
 */
export const bulkInSchemaOrder = (bulk: VerifierAgentBulk): VerifierAgentBulk => {
  const out: Record<string, AnyAgentStatus> = {}
  for (const id in bulk) {
    const status = bulk[id] as unknown as Record<string, unknown>
    const keys = "allowlist_len" in status ? LEGACY_STATUS_KEYS : STATUS_KEYS
    const ordered: Record<string, unknown> = {}
    for (const k of keys) if (k in status && status[k] !== undefined) ordered[k] = status[k]
    out[id] = ordered as unknown as AnyAgentStatus
  }
  return out
}

/** POST / PUT /allowlists/:name body (spec §2.4): the policy JSON in base64. */
export const RuntimePolicyRequest = Schema.Struct({
  runtime_policy: Schema.String,
  runtime_policy_key: optionalNullable(Schema.String),
  runtime_policy_sig: optionalNullable(Schema.String),
  tpm_policy: optionalNullable(Schema.String)
}).annotations({ identifier: "RuntimePolicyRequest" })
export type RuntimePolicyRequest = typeof RuntimePolicyRequest.Type

/** GET /allowlists/:name results; `tmp_policy` (sic) is the policy's tpm_policy. */
export const RuntimePolicyResponse = Schema.Struct({
  name: Schema.String,
  tmp_policy: NullableString,
  runtime_policy: Schema.String
}).annotations({ identifier: "RuntimePolicyResponse" })
export type RuntimePolicyResponse = typeof RuntimePolicyResponse.Type

export const RuntimePolicyNames = Schema.Struct({
  "runtimepolicy names": Schema.Array(Schema.String)
}).annotations({ identifier: "RuntimePolicyNames" })
export type RuntimePolicyNames = typeof RuntimePolicyNames.Type

/** POST / PUT /mbpolicies/:name body: the reference state as a JSON string (absent or null: empty). */
export const MbPolicyRequest = Schema.Struct({
  mb_policy: optionalNullable(Schema.String)
}).annotations({ identifier: "MbPolicyRequest" })
export type MbPolicyRequest = typeof MbPolicyRequest.Type

export const MbPolicyResponse = Schema.Struct({
  name: Schema.String,
  mb_policy: NullableString
}).annotations({ identifier: "MbPolicyResponse" })
export type MbPolicyResponse = typeof MbPolicyResponse.Type

export const MbPolicyNames = Schema.Struct({
  "mbpolicy names": Schema.Array(Schema.String)
}).annotations({ identifier: "MbPolicyNames" })
export type MbPolicyNames = typeof MbPolicyNames.Type

// --- API descriptions (src/verifier/http/Api.ts) ---------------------------------------------------

/** GET /agents/ query: `verifier` filters by verifier_id (empty: no filter); `bulk` (any value, as Keylime reads it) answers every agent's status. */
export const AgentListQuery = Schema.Struct({
  verifier: Schema.optional(Schema.String),
  bulk: Schema.optional(Schema.String)
}).annotations({ identifier: "AgentListQuery" })
export type AgentListQuery = typeof AgentListQuery.Type

/** GET /agents/ results: ids, or statuses by id with `?bulk=true`. */
export const AgentListResults = Schema.Union(VerifierAgentList, VerifierAgentBulk).annotations({ identifier: "AgentListResults" })
export type AgentListResults = typeof AgentListResults.Type
