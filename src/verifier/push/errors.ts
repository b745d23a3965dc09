/**
 * The push model's domain errors, with the facts (agent id, index, field, seconds to wait).
 * http/v3/PushHttp.ts maps each to its status, JSON:API code and Keylime's detail text (push-model.md
 * §1.3-1.6, §5).
 */
import { Schema } from "effect"
import { SessionEndReason } from "../domain/pushStore/rows.js"

export class PushAgentNotFound extends Schema.TaggedError<PushAgentNotFound>()("PushAgentNotFound", { agentId: Schema.String }) {}

export class AttestationNotFound extends Schema.TaggedError<AttestationNotFound>()("AttestationNotFound", {
  agentId: Schema.String,
  /** undefined: `latest` and there is none. */
  index: Schema.optional(Schema.Number)
}) {}

export class PrematureAttestation extends Schema.TaggedError<PrematureAttestation>()("PrematureAttestation", {
  agentId: Schema.String,
  waitSeconds: Schema.Number
}) {}

export class VerificationInProgress extends Schema.TaggedError<VerificationInProgress>()("VerificationInProgress", {
  agentId: Schema.String,
  waitSeconds: Schema.Number
}) {}

/** Another creation took the index (two POSTs at once). */
export class CreationConflict extends Schema.TaggedError<CreationConflict>()("CreationConflict", { agentId: Schema.String }) {}

export class OldAttestation extends Schema.TaggedError<OldAttestation>()("OldAttestation", { agentId: Schema.String, index: Schema.Number }) {}

export class EvidenceImmutable extends Schema.TaggedError<EvidenceImmutable>()("EvidenceImmutable", { agentId: Schema.String, index: Schema.Number }) {}

export class ChallengesExpired extends Schema.TaggedError<ChallengesExpired>()("ChallengesExpired", {
  agentId: Schema.String,
  index: Schema.Number,
  expiredAt: Schema.Number
}) {}

/** A field of the capabilities or evidence that cannot be used: `pointer` under /data/attributes. */
export class InvalidResourceData extends Schema.TaggedError<InvalidResourceData>()("InvalidResourceData", {
  pointer: Schema.String,
  reason: Schema.String
}) {}

// --- sessions ---

export class SessionRequestInvalid extends Schema.TaggedError<SessionRequestInvalid>()("SessionRequestInvalid", { detail: Schema.String }) {}

export class SessionNotFound extends Schema.TaggedError<SessionNotFound>()("SessionNotFound", { sessionId: Schema.String }) {}

/**
 * A session request over a limit: `ip`, creations from one client address; `proofs`, failed proofs
 * from one client address; `agent`, tokens issued to one agent (only its own proofs count).
 */
export class SessionRateLimited extends Schema.TaggedError<SessionRateLimited>()("SessionRateLimited", {
  scope: Schema.Literal("ip", "proofs", "agent"),
  retryAfterSeconds: Schema.Number
}) {}

/** A bearer token that does not authenticate; `reason` picks Keylime's text (`ended`: attest's, with why). */
export class TokenRefused extends Schema.TaggedError<TokenRefused>()("TokenRefused", {
  reason: Schema.Literal("format", "unknown", "inactive", "expired", "ended"),
  ended: Schema.optional(SessionEndReason)
}) {}

/** Phase 1 of an agent an administrator stopped (operational_state 10). */
export class AgentStopped extends Schema.TaggedError<AgentStopped>()("AgentStopped", { agentId: Schema.String }) {}

export type PushError =
  | PushAgentNotFound
  | AttestationNotFound
  | PrematureAttestation
  | VerificationInProgress
  | CreationConflict
  | OldAttestation
  | EvidenceImmutable
  | ChallengesExpired
  | InvalidResourceData
  | AgentStopped
  | TokenRefused
