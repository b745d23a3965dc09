/**
 * The context row every push attestation reads (attestationStatements.ts), decoded without the
 * schema's interpreter where the values allow: measured, the Schema decodes of its four parts cost
 * more CPU than the statement that read them (the agent's facts ~3x, the latest attestation and the
 * session ~1–2x). Each fast decoder accepts exactly what its schema (rows.ts, DbInteger, DbBoolean)
 * accepts and yields the same value; anything else goes to the schema, which decides and words the
 * error. The agent's facts change only when an administrator changes the agent: the decoded value
 * is kept per agent with the raw values it came from, and reused while they are the same.
 */
import { Either } from "effect"
import type { LatestAttestation, PushAgentFacts, SessionState } from "./rows.js"

/** DbInteger's decode: a number, numeric string or bigint that is a safe integer. */
const int = (v: unknown): number | undefined => {
  if (typeof v !== "number" && typeof v !== "string" && typeof v !== "bigint") return undefined
  const n = typeof v === "number" ? v : Number(v)
  return Number.isSafeInteger(n) ? n : undefined
}
const STAGES = new Set(["awaiting_evidence", "evaluating_evidence", "verification_complete"])
const EVALUATIONS = new Set(["pending", "pass", "fail"])
const FAILURE_REASONS = new Set(["broken_evidence_chain", "policy_violation"])
const END_REASONS = new Set(["deleted", "stopped", "reactivated", "enrolled", "reconfigured", "replaced"])
const isString = (v: unknown): v is string => typeof v === "string"
/** A NullOr(DbInteger) column: null, the integer, or undefined when neither. */
const nullableInt = (v: unknown): number | null | undefined => (v === null ? null : int(v))

/** LatestAttestation from `r` when every field is as its schema decodes it, else undefined. */
export const fastLatest = (r: Record<string, unknown>): LatestAttestation | undefined => {
  const idx = int(r["idx"])
  const received = int(r["capabilities_received_at"])
  const expires = int(r["challenges_expire_at"])
  const evidenceAt = nullableInt(r["evidence_received_at"])
  const completedAt = nullableInt(r["verification_completed_at"])
  const { agent_id, stage, evaluation, failure_reason, capabilities, evidence_requested, boot_time } = r
  if (
    idx === undefined || received === undefined || expires === undefined || evidenceAt === undefined || completedAt === undefined ||
    !isString(agent_id) || !isString(stage) || !STAGES.has(stage) || !isString(evaluation) || !EVALUATIONS.has(evaluation) ||
    (failure_reason !== null && !(isString(failure_reason) && FAILURE_REASONS.has(failure_reason))) ||
    !isString(capabilities) || !isString(evidence_requested) || !isString(boot_time)
  ) return undefined
  return {
    agent_id,
    idx,
    stage: stage as LatestAttestation["stage"],
    evaluation: evaluation as LatestAttestation["evaluation"],
    failure_reason: failure_reason as LatestAttestation["failure_reason"],
    capabilities,
    evidence_requested,
    boot_time,
    capabilities_received_at: received,
    challenges_expire_at: expires,
    evidence_received_at: evidenceAt,
    verification_completed_at: completedAt
  }
}

/** `fast`'s value when it has one, else the schema's `decode` (which decides and words the error). */
export const fastOr = <A, E>(r: Record<string, unknown>, fast: (r: Record<string, unknown>) => A | undefined, decode: (r: unknown) => Either.Either<A, E>): Either.Either<A, E> => {
  const value = fast(r)
  return value !== undefined ? Either.right(value) : decode(r)
}

/** DbBoolean's decode. */
const bool = (v: unknown): boolean | undefined => v === 1 || v === true || v === "1" ? true : v === 0 || v === false || v === "0" ? false : undefined

/** SessionState from `r` when every field is as its schema decodes it, else undefined. */
export const fastSession = (r: Record<string, unknown>): SessionState | undefined => {
  const active = bool(r["active"])
  const expires = nullableInt(r["token_expires_at"])
  const { agent_id, ended_reason } = r
  if (active === undefined || expires === undefined || !isString(agent_id) || (ended_reason !== null && !(isString(ended_reason) && END_REASONS.has(ended_reason)))) return undefined
  return { agent_id, active, ended_reason: ended_reason as SessionState["ended_reason"], token_expires_at: expires }
}

/**
 * `decode` of an agent's facts row, kept per agent with its raw values (`columns` of `r`) and
 * reused while they are equal (strings and numbers compared by value). Bounded: more than
 * `max` agents and it starts afresh.
 */
export const memoizedFacts = <E>(columns: ReadonlyArray<string>, decode: (r: Record<string, unknown>) => Either.Either<PushAgentFacts, E>, max = 200_000) => {
  const known = new Map<string, { readonly raw: ReadonlyArray<unknown>; readonly facts: PushAgentFacts }>()
  return (agentId: string, r: Record<string, unknown>): Either.Either<PushAgentFacts, E> => {
    const hit = known.get(agentId)
    if (hit !== undefined && columns.every((c, i) => r[c] === hit.raw[i])) return Either.right(hit.facts)
    const decoded = decode(r)
    // only plain values are kept: a Buffer or bigint would never compare equal, and is left to decode
    if (Either.isRight(decoded) && columns.every((c) => r[c] === null || typeof r[c] === "string" || typeof r[c] === "number")) {
      if (known.size >= max && hit === undefined) known.clear()
      known.set(agentId, { raw: columns.map((c) => r[c]), facts: decoded.right })
    }
    return decoded
  }
}
