/**
 * The v2 view of an agent that pushes (push-model.md §2.3): its attestation_status and the fields of
 * its v2 status that come from the push tables. Read by the v2 domain (Agents) and the v3 admin routes.
 */
import type { PushAgentRow } from "./rows.js"
import { NO_PUSH_FACTS, type PushStatusFacts } from "./statusFacts.js"

export type PushStatus = "PASS" | "FAIL" | "TIMEOUT" | "PENDING"

/** push-model.md §2.3: the v2 `attestation_status` of a push agent. */
export const pushAttestationStatus = (p: Pick<PushAgentRow, "accept_attestations" | "consecutive_failures" | "attestation_count">): PushStatus =>
  p.consecutive_failures > 0 ? "FAIL" : !p.accept_attestations ? "TIMEOUT" : p.attestation_count > 0 ? "PASS" : "PENDING"

/**
 * A v2 status (GET /v2.x/agents/:id) of an agent that pushes: its push counters and the push
 * attestation_status (TIMEOUT after a missed deadline) replace the pull loop's (Keylime's
 * process_get_status for push agents; timestamps in epoch seconds as in 2.x), no address (it
 * listens on none; Keylime's push mode stores none), and what its attestations said
 * (statusFacts.ts): its latest failure's type and message as `last_event_id` and
 * `last_event_message`, as a pull agent's status gives them, and attest's push fields.
 */
export const withPushStatus = <
  S extends {
    readonly ip: string | null
    readonly port: number | null
    readonly last_event_id: string | null
    readonly attestation_count: number | null
    readonly last_received_quote: number | null
    readonly last_successful_attestation: number | null
  }
>(
  status: S,
  push: PushAgentRow,
  facts: PushStatusFacts = NO_PUSH_FACTS
): S => {
  const failure = facts.lastFailure
  return {
    ...status,
    ip: null,
    port: null,
    last_event_id: failure === null ? null : failure.type ?? failure.reason,
    ...(failure?.message == null ? {} : { last_event_message: failure.message }),
    attestation_count: push.attestation_count,
    last_received_quote: push.last_received_at === null ? 0 : Math.floor(push.last_received_at / 1000),
    last_successful_attestation: push.last_success_at === null ? 0 : Math.floor(push.last_success_at / 1000),
    ...("attestation_status" in status ? { attestation_status: pushAttestationStatus(push) } : {}),
    attestation_model: "push",
    last_evaluation: facts.lastEvaluation,
    last_attestation_index: facts.lastAttestationIndex,
    last_failure_reason: failure?.reason ?? null,
    last_failure_at: failure?.at == null ? null : Math.floor(failure.at / 1000)
  }
}
