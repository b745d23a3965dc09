/**
 * The verifier's `operational_state` numbers and names (keylime-wire.md §2, Keylime's
 * keylime/common/states.py), the sets the domain and the poller decide with, and the
 * `attestation_status` rule of GET agent (pull mode).
 */

export const OperationalState = {
  REGISTERED: 0,
  START: 1,
  SAVED: 2,
  GET_QUOTE: 3,
  GET_QUOTE_RETRY: 4,
  PROVIDE_V: 5,
  PROVIDE_V_RETRY: 6,
  FAILED: 7,
  TERMINATED: 8,
  INVALID_QUOTE: 9,
  TENANT_FAILED: 10
} as const
export type OperationalState = (typeof OperationalState)[keyof typeof OperationalState]

/** Keylime's representations, for logs and `attest` output. */
export const stateName: Readonly<Record<OperationalState, string>> = {
  0: "Registered",
  1: "Start",
  2: "Saved",
  3: "Get Quote",
  4: "Get Quote (retry)",
  5: "Provide V",
  6: "Provide V (retry)",
  7: "Failed",
  8: "Terminated",
  9: "Invalid Quote",
  10: "Tenant Quote Failed"
}

export const isOperationalState = (n: number): n is OperationalState => Number.isInteger(n) && n >= 0 && n <= 10

/**
 * States whose loop runs: a verifier restart resumes the agents of its `verifier_id` in these
 * (Keylime's APPROVED_REACTIVATE_STATES).
 */
export const ACTIVE_STATES: ReadonlySet<OperationalState> = new Set([
  OperationalState.START,
  OperationalState.GET_QUOTE,
  OperationalState.GET_QUOTE_RETRY,
  OperationalState.PROVIDE_V,
  OperationalState.PROVIDE_V_RETRY
])

/** States in which no loop runs any more, so DELETE removes the row at once. */
export const DELETABLE_NOW_STATES: ReadonlySet<OperationalState> = new Set([
  OperationalState.SAVED,
  OperationalState.FAILED,
  OperationalState.INVALID_QUOTE,
  OperationalState.TENANT_FAILED
])

/**
 * States `reactivate` accepts. attest departs from Keylime here: TENANT_FAILED (after `stop`) is
 * reactivatable and polling restarts; Keylime answers 200 and leaves the agent at 10.
 * TERMINATED is not: that agent is being deleted.
 */
export const REACTIVATABLE_STATES: ReadonlySet<OperationalState> = new Set([
  OperationalState.REGISTERED,
  OperationalState.START,
  OperationalState.SAVED,
  OperationalState.GET_QUOTE,
  OperationalState.GET_QUOTE_RETRY,
  OperationalState.PROVIDE_V,
  OperationalState.PROVIDE_V_RETRY,
  OperationalState.FAILED,
  OperationalState.INVALID_QUOTE,
  OperationalState.TENANT_FAILED
])

export type AttestationStatus = "PASS" | "FAIL" | "PENDING"

/**
 * Pull mode (keylime-wire.md §1.4): PASS while the loop is in a quote/V state (even before the
 * first attestation — Keylime's quirk, kept because clients read it), FAIL after a failure or a
 * stop, PENDING otherwise (START, SAVED, TERMINATED).
 */
export const attestationStatus = (state: number): AttestationStatus => {
  switch (state) {
    case OperationalState.GET_QUOTE:
    case OperationalState.GET_QUOTE_RETRY:
    case OperationalState.PROVIDE_V:
    case OperationalState.PROVIDE_V_RETRY:
      return "PASS"
    case OperationalState.FAILED:
    case OperationalState.INVALID_QUOTE:
    case OperationalState.TENANT_FAILED:
      return "FAIL"
    default:
      return "PENDING"
  }
}
