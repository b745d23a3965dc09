/**
 * What every view says of an agent's v2 status, pull or push alike (the tenant's status and list,
 * `attest up`'s table): its model, its verdict, its last failure as one line, and the state a
 * person reads. A push agent's status carries attest's push fields (`attestation_model: "push"`,
 * `last_evaluation`, `last_failure_reason`; src/verifier/http/v3/pushRender.ts); its operational state is
 * not its state (the pull loop never runs for it): its acceptance is. Pure.
 */
import type { AnyAgentStatus } from "../../schemas/Verifier.js"
import { isOperationalState, OperationalState, stateName } from "../attestation/states.js"

export type Verdict = "pass" | "fail" | "pending"

/** The agent sends its evidence (API 3.0) rather than being polled. */
export const isPushStatus = (s: AnyAgentStatus): boolean => s.attestation_model === "push"

/** Keylime's state name and number, e.g. "Get Quote (3)". */
export const stateLabel = (n: number): string => `${isOperationalState(n) ? stateName[n] : "unknown"} (${n})`

/** A push agent's acceptance (PASS, FAIL, TIMEOUT, PENDING) as its v2 status words it. */
export const acceptanceOf = (s: AnyAgentStatus): string => ("attestation_status" in s ? s.attestation_status : "unknown")

/** The state a person reads: a pull agent's operational state, a push agent's acceptance. */
export const stateText = (s: AnyAgentStatus): string => (isPushStatus(s) ? `${acceptanceOf(s)} (push)` : stateLabel(s.operational_state))

/**
 * The verdict of the agent's latest quote (pull) or completed attestation (push); pending before
 * the first. A pull agent's latest quote failed when it is newer than its last success, or when
 * the verifier judged it invalid.
 */
export const verdictOf = (s: AnyAgentStatus): Verdict => {
  if (isPushStatus(s)) return s.last_evaluation ?? "pending"
  if (s.operational_state === OperationalState.INVALID_QUOTE) return "fail"
  const received = s.last_received_quote ?? 0
  if (received <= 0) return "pending"
  return received > (s.last_successful_attestation ?? 0) ? "fail" : "pass"
}

/**
 * The last failure as one line, null when there was none: pull, its type and message
 * (`ima.validation.ima-ng.not_in_allowlist: File not found in allowlist: /usr/bin/evil`); push,
 * the attestation's reason first (`policy_violation: ima.validation…: …`).
 */
export const failureText = (s: AnyAgentStatus, o: { readonly severity?: boolean } = {}): string | null => {
  if (s.last_event_id === null || s.last_event_id === "") return null
  const message = s.last_event_message ? `: ${s.last_event_message}` : ""
  const severity = o.severity === true && s.severity_level !== null ? ` (severity ${s.severity_level})` : ""
  const reason = isPushStatus(s) && s.last_failure_reason && s.last_failure_reason !== s.last_event_id ? `${s.last_failure_reason}: ` : ""
  return `${reason}${s.last_event_id}${severity}${message}`
}
