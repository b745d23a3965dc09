/**
 * The push model's rows as read from its tables (migrations 0020-0022, 0024), and what the attestation
 * path writes: shared by the repository (repo.ts), the hot statements (attestationStatements.ts),
 * the rendering and the domain. Times are epoch ms.
 */
import { type Option, Schema, Struct } from "effect"
import { DbBoolean, DbInteger } from "../../../db/dialect.js"
import { AgentView } from "../repo/rows.js"

/** Why a token ended before its expiry: an administrator's change of its agent, or a newer session of the agent. */
export const SessionEndReason = Schema.Literal("deleted", "stopped", "reactivated", "enrolled", "reconfigured", "replaced")
export type SessionEndReason = typeof SessionEndReason.Type

export const SessionRow = Schema.Struct({
  session_id: Schema.String,
  agent_id: Schema.String,
  challenge: Schema.String,
  created_at: DbInteger,
  challenges_expire_at: DbInteger,
  response_received_at: Schema.NullOr(DbInteger),
  token_hash: Schema.NullOr(Schema.String),
  token_expires_at: Schema.NullOr(DbInteger),
  active: DbBoolean,
  /** Set when the session ended before its token expired (an admin change, a newer session). */
  ended_reason: Schema.NullOr(SessionEndReason)
})
export type SessionRow = typeof SessionRow.Type

export const PushAgentRow = Schema.Struct({
  agent_id: Schema.String,
  accept_attestations: DbBoolean,
  consecutive_failures: DbInteger,
  attestation_count: DbInteger,
  last_received_at: Schema.NullOr(DbInteger),
  last_success_at: Schema.NullOr(DbInteger),
  deadline_at: Schema.NullOr(DbInteger),
  evaluation_state: Schema.NullOr(Schema.String),
  /** Written 0 at creation and no longer advanced: the next index follows the latest attestation (its key refuses a duplicate). */
  next_index: DbInteger,
  updated_at: DbInteger
})
export type PushAgentRow = typeof PushAgentRow.Type

export const AttestationRow = Schema.Struct({
  agent_id: Schema.String,
  idx: DbInteger,
  stage: Schema.Literal("awaiting_evidence", "evaluating_evidence", "verification_complete"),
  evaluation: Schema.Literal("pending", "pass", "fail"),
  failure_reason: Schema.NullOr(Schema.Literal("broken_evidence_chain", "policy_violation")),
  capabilities: Schema.String,
  evidence_requested: Schema.String,
  evidence: Schema.NullOr(Schema.String),
  failures: Schema.NullOr(Schema.String),
  boot_time: Schema.String,
  capabilities_received_at: DbInteger,
  challenges_expire_at: DbInteger,
  evidence_received_at: Schema.NullOr(DbInteger),
  verification_completed_at: Schema.NullOr(DbInteger)
})
export type AttestationRow = typeof AttestationRow.Type

/** What negotiation and verification read of the agent's enrolment: no policy text, no pull-loop state. */
export const PushAgentFacts = Schema.Struct(Struct.pick(AgentView.fields,
  "agent_id",
  "operational_state",
  "ak_tpm",
  "tpm_policy",
  "ima_sign_verification_keys",
  "accept_tpm_hash_algs",
  "accept_tpm_encryption_algs",
  "accept_tpm_signing_algs",
  "runtime_policy_name",
  "runtime_policy_checksum",
  "runtime_policy_has_policy",
  "mb_policy_name",
  "mb_policy_checksum",
  "mb_policy_has_policy"
))
export type PushAgentFacts = typeof PushAgentFacts.Type

/** The latest attestation without its stored evidence and failures (large; the hot path never reads them). */
export const LatestAttestation = Schema.Struct(Struct.omit(AttestationRow.fields, "evidence", "failures"))
export type LatestAttestation = typeof LatestAttestation.Type

/** What the attestation path reads of the session whose token the request carries. */
export type SessionState = Pick<SessionRow, "agent_id" | "active" | "ended_reason" | "token_expires_at">

/**
 * Everything phase 1 and phase 2 read before they write, in one statement: the agent's facts,
 * its push row (absent before its first attestation), its latest attestation and, when the
 * request names one, the session of its token (absent when there is no such session).
 */
export interface AttestationContext {
  readonly agent: PushAgentFacts
  readonly push: Option.Option<Pick<PushAgentRow, "evaluation_state">>
  readonly latest: Option.Option<LatestAttestation>
  readonly session: Option.Option<SessionState>
}

export interface NewAttestation {
  readonly agent_id: string
  readonly idx: number
  readonly capabilities: string
  readonly evidence_requested: string
  readonly boot_time: string
  readonly capabilities_received_at: number
  readonly challenges_expire_at: number
}

/** After a verdict: the push state of a pass or a fail (push-model.md §2.1). */
export interface OutcomeWrite {
  readonly pass: boolean
  readonly at: number
  readonly deadlineAt: number
  readonly evaluationState: string | null
  /** `auto_recover_attestation_failures`: a pass clears earlier failures. */
  readonly clearFailures: boolean
}

/** An attestation's verdict as stored on it. */
export interface VerdictWrite {
  readonly pass: boolean
  readonly reason: string | null
  readonly failures: string
  readonly at: number
}

/** Everything a verdict writes: the attestation, the agent's push state and, for a pass that extends tokens, its active token. */
export interface VerdictWrites {
  readonly verdict: VerdictWrite
  readonly outcome: OutcomeWrite
  readonly tokenExpiresAt: number | undefined
}
