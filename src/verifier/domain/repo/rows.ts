/**
 * Rows of the verifier's tables as Schemas: what a SELECT returns, decoded the same on SQLite and
 * PostgreSQL (integers through DbInteger, 0/1 through DbBoolean, JSON lists from TEXT).
 */
import { Schema } from "effect"
import { DbBoolean, DbInteger } from "../../../db/dialect.js"

const StringList = Schema.parseJson(Schema.Array(Schema.String))

/** verifier_agents, every column. `revocation_key` (a private key) stays Redacted in memory. */
export const AgentRow = Schema.Struct({
  agent_id: Schema.String,
  verifier_id: Schema.String,
  operational_state: DbInteger,
  v: Schema.NullOr(Schema.String),
  ip: Schema.String,
  port: DbInteger,
  tpm_policy: Schema.String,
  vtpm_policy: Schema.NullOr(Schema.String),
  meta_data: Schema.String,
  ak_tpm: Schema.String,
  mtls_cert: Schema.NullOr(Schema.String),
  runtime_policy_name: Schema.String,
  mb_policy_name: Schema.String,
  ima_sign_verification_keys: Schema.String,
  revocation_key: Schema.Redacted(Schema.String),
  accept_tpm_hash_algs: StringList,
  accept_tpm_encryption_algs: StringList,
  accept_tpm_signing_algs: StringList,
  supported_version: Schema.NullOr(Schema.String),
  hash_alg: Schema.String,
  enc_alg: Schema.String,
  sign_alg: Schema.String,
  severity_level: Schema.NullOr(DbInteger),
  last_event_id: Schema.NullOr(Schema.String),
  last_event_message: Schema.NullOr(Schema.String),
  attestation_count: DbInteger,
  last_received_quote: DbInteger,
  last_successful_attestation: DbInteger,
  evaluation_state: Schema.NullOr(Schema.String),
  v_delivered: DbBoolean,
  retry_count: DbInteger,
  next_poll_at: Schema.NullOr(DbInteger),
  generation: DbInteger,
  /** The runner whose loop last took the agent (cluster mode, migration 0028); null in single-process mode. */
  owner_runner: Schema.NullOr(Schema.String),
  created_at: DbInteger,
  updated_at: DbInteger
})
export type AgentRow = typeof AgentRow.Type

export const AGENT_COLUMNS = Object.keys(AgentRow.fields)

/** An agent with the facts of its two policies that rendering and the loop need (not their text). */
export const AgentView = Schema.Struct({
  ...AgentRow.fields,
  runtime_policy_checksum: Schema.String,
  runtime_policy_has_policy: DbBoolean,
  runtime_policy_digest_count: DbInteger,
  mb_policy_checksum: Schema.String,
  mb_policy_has_policy: DbBoolean,
  /** Top-level keys of the reference state (API 2.0–2.4 `mb_refstate_len`); 0 when none. */
  mb_policy_key_count: DbInteger
})
export type AgentView = typeof AgentView.Type

/** verifier_runtime_policies with the policy text. */
export const RuntimePolicyRow = Schema.Struct({
  name: Schema.String,
  runtime_policy: Schema.String,
  tpm_policy: Schema.NullOr(Schema.String),
  checksum: Schema.String,
  has_policy: DbBoolean,
  digest_count: DbInteger,
  created_at: DbInteger,
  updated_at: DbInteger
})
export type RuntimePolicyRow = typeof RuntimePolicyRow.Type

/** verifier_mb_policies. */
export const MbPolicyRow = Schema.Struct({
  name: Schema.String,
  mb_policy: Schema.NullOr(Schema.String),
  checksum: Schema.String,
  has_policy: DbBoolean,
  key_count: DbInteger,
  created_at: DbInteger,
  updated_at: DbInteger
})
export type MbPolicyRow = typeof MbPolicyRow.Type

/** verifier_notifications. */
export const NotificationRow = Schema.Struct({
  id: DbInteger,
  notifier: Schema.String,
  agent_id: Schema.String,
  payload: Schema.String,
  attempts: DbInteger,
  next_attempt_at: DbInteger,
  last_error: Schema.NullOr(Schema.String),
  created_at: DbInteger
})
export type NotificationRow = typeof NotificationRow.Type
