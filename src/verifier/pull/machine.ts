/**
 * The pull loop's decisions as a pure function (keylime-wire.md §2): `step(state, event, config)`
 * gives the next state and the effects the loop performs, in order (persist before notify before
 * the next request). The loop (Poller.ts) only fetches, persists and waits; it stops performing a
 * step's effects when a persist loses to an admin change (`generation`) and feeds `Superseded`.
 *
 * attest departs from Keylime in three places, each for a reason:
 * - while retrying, the stored state is GET_QUOTE_RETRY (4) / PROVIDE_V_RETRY (6), not 3/5, so an
 *   administrator can tell an agent being retried from one being attested (keylime/keylime#697);
 * - after an invalid quote that does not stop polling, the next quote waits `quote_interval`
 *   (Keylime asks again at once);
 * - a revocation is notified when the severity rises or a new failure follows a valid quote
 *   (Keylime: only when the severity rises, so a recovered agent that fails again is not notified).
 */
import { OperationalState } from "../../attestation/states.js"
import type { EventRecord } from "../domain/notify/Notifications.js"

export interface MachineConfig {
  /** Seconds between quotes of one agent (`quote_interval`). */
  readonly quoteInterval: number
  readonly retryInterval: number
  readonly exponentialBackoff: boolean
  readonly maxRetries: number
  /** Severity (index into `severity_labels`) of an event id, per `severity_policy`. */
  readonly severityOf: (eventId: string) => number
  /** The highest severity (the last label): a failure of it stops polling. */
  readonly maxSeverity: number
}

/** What the machine remembers of an agent; all of it is in the agent's row (and evaluation state). */
export interface LoopState {
  readonly operationalState: OperationalState
  readonly retryCount: number
  readonly attestationCount: number
  readonly severityLevel: number | null
  readonly lastEventId: string | null
  /** A V key was given at creation. */
  readonly hasV: boolean
  readonly vDelivered: boolean
  /** The agent's NK public key is known (from an earlier full quote): later quotes may be partial. */
  readonly pubkeyKnown: boolean
  /** Next IMA measurement-list entry to ask for (`ima_ml_entry`). */
  readonly imaEntry: number
}

/** The evaluator's judgement of one quote, reduced to what the machine decides on. */
export type Verdict =
  | { readonly _tag: "Valid" }
  | {
    readonly _tag: "Invalid"
    /** The highest-severity event of the failure. */
    readonly eventId: string
    readonly severity: number
    readonly recoverable: boolean
  }

export type LoopEvent =
  /** The loop starts or resumes from the stored state. */
  | { readonly _tag: "Begin" }
  /** A `ScheduleNext` delay elapsed. */
  | { readonly _tag: "Tick" }
  | { readonly _tag: "QuoteReceived"; readonly verdict: Verdict; readonly imaEntry: number; readonly pubkeyKnown: boolean }
  /** Timeout, connection error, 408, 500 or another 5xx. */
  | { readonly _tag: "QuoteUnreachable"; readonly reason: string }
  /** Another non-200 answer; "version_not_supported" when the agent refused the API version. */
  | { readonly _tag: "QuoteRefused"; readonly reason: "no_quote" | "version_not_supported" }
  | { readonly _tag: "VDelivered" }
  | { readonly _tag: "VUnreachable"; readonly reason: string }
  | { readonly _tag: "VRefused" }
  /** The cycle failed inside the verifier (a defect, a store that does not answer). */
  | { readonly _tag: "Crashed"; readonly message: string }
  | { readonly _tag: "Stop" }
  | { readonly _tag: "Reactivate" }
  | { readonly _tag: "Delete" }
  /** A persist lost to an admin change; `storedState` is what the row says now. */
  | { readonly _tag: "Superseded"; readonly storedState: number }

export type FinishReason = "stopped" | "failed" | "invalid" | "deleted" | "superseded"

export type LoopEffect =
  | { readonly _tag: "RequestQuote"; readonly partial: 0 | 1; readonly imaEntry: number }
  | { readonly _tag: "DeliverV" }
  /** Record the verdict (AgentRepo.recordVerdict); `nextPollAfter` seconds from now, or null. */
  | {
    readonly _tag: "PersistVerdict"
    readonly operationalState: OperationalState
    readonly valid: boolean
    readonly event: EventRecord | undefined
    readonly nextPollAfter: number | null
  }
  /** AgentRepo.recordRetry: the attempt number and when it is due. */
  | { readonly _tag: "PersistRetry"; readonly operationalState: OperationalState; readonly retryCount: number; readonly after: number }
  /** AgentRepo.markFailed. */
  | { readonly _tag: "PersistFailed"; readonly event: EventRecord }
  /** AgentRepo.setState. */
  | {
    readonly _tag: "PersistState"
    readonly operationalState: OperationalState
    readonly vDelivered?: boolean
    readonly retryCount?: number
    readonly nextPollAfter?: number | null
  }
  | { readonly _tag: "Notify"; readonly kind: "revocation" | "comm_error"; readonly event: EventRecord }
  /** Wait, then feed `Tick`. */
  | { readonly _tag: "ScheduleNext"; readonly after: number }
  /** Read the row again and feed `Begin` with it (an admin change the loop must follow). */
  | { readonly _tag: "Reload" }
  | { readonly _tag: "DeleteAgent" }
  | { readonly _tag: "Finish"; readonly reason: FinishReason }

export interface Step {
  readonly state: LoopState
  readonly effects: ReadonlyArray<LoopEffect>
}

export const EVENT = {
  notReachable: "internal.verifier.not_reachable",
  notReachableV: "internal.verifier.not_reachable_v",
  noQuote: "internal.verifier.no_quote",
  noV: "internal.verifier.no_v",
  versionNotSupported: "internal.verifier.version_not_supported",
  exception: "internal.verifier.exception"
} as const

/**
 * Keylime's retry_time: `retry_interval ** n` with exponential backoff when retry_interval > 1,
 * otherwise |retry_interval| (n = the retry about to be made, from 1).
 */
export const retryDelay = (n: number, retryInterval: number, exponentialBackoff: boolean): number =>
  exponentialBackoff && retryInterval > 1 ? retryInterval ** n : Math.abs(retryInterval)

const S = OperationalState

/** States in which the loop asks for quotes. INVALID_QUOTE: a failure that did not stop polling. */
const QUOTING: ReadonlySet<number> = new Set([S.START, S.GET_QUOTE, S.GET_QUOTE_RETRY, S.INVALID_QUOTE])
const DELIVERING_V: ReadonlySet<number> = new Set([S.PROVIDE_V, S.PROVIDE_V_RETRY])

/** partial=1 only when the NK public key is known and this is not a retry (Keylime: need_pubkey). */
const requestQuote = (s: LoopState): LoopEffect => ({
  _tag: "RequestQuote",
  partial: s.pubkeyKnown && s.retryCount === 0 ? 1 : 0,
  imaEntry: s.imaEntry
})

const none = (state: LoopState): Step => ({ state, effects: [] })

/** A failure event recorded as the stored one only rises (AgentRepo keeps the higher severity). */
const withEvent = (s: LoopState, event: EventRecord): LoopState =>
  s.severityLevel === null || event.severityLevel > s.severityLevel
    ? { ...s, severityLevel: event.severityLevel, lastEventId: event.eventId }
    : s

const fail = (s: LoopState, eventId: string, config: MachineConfig, notify: boolean): Step => {
  const event = { eventId, severityLevel: config.severityOf(eventId) }
  const state = withEvent({ ...s, operationalState: S.FAILED }, event)
  return {
    state,
    effects: [
      { _tag: "PersistFailed", event },
      ...(notify ? [{ _tag: "Notify", kind: "comm_error", event } as const] : []),
      { _tag: "Finish", reason: "failed" }
    ]
  }
}

/** Unreachable: retry after the backoff, or give up after max_retries. */
const unreachable = (s: LoopState, config: MachineConfig, delivering: boolean): Step => {
  if (s.retryCount >= config.maxRetries) {
    return delivering
      ? fail(s, EVENT.notReachableV, config, true)
      // Keylime: a comm_error only for an agent that was attested at least once
      : fail(s, EVENT.notReachable, config, s.attestationCount > 0)
  }
  const retryCount = s.retryCount + 1
  const after = retryDelay(retryCount, config.retryInterval, config.exponentialBackoff)
  const operationalState = delivering ? S.PROVIDE_V_RETRY : S.GET_QUOTE_RETRY
  return {
    state: { ...s, operationalState, retryCount },
    effects: [
      { _tag: "PersistRetry", operationalState, retryCount, after },
      { _tag: "ScheduleNext", after }
    ]
  }
}

const quoteReceived = (s: LoopState, e: Extract<LoopEvent, { _tag: "QuoteReceived" }>, config: MachineConfig): Step => {
  const base: LoopState = { ...s, retryCount: 0, imaEntry: e.imaEntry, pubkeyKnown: e.pubkeyKnown }
  const verdict = e.verdict
  if (verdict._tag === "Valid") {
    const counted = { ...base, attestationCount: s.attestationCount + 1 }
    if (counted.hasV && !counted.vDelivered && counted.pubkeyKnown) {
      return {
        state: { ...counted, operationalState: S.PROVIDE_V },
        effects: [
          { _tag: "PersistVerdict", operationalState: S.PROVIDE_V, valid: true, event: undefined, nextPollAfter: null },
          { _tag: "DeliverV" }
        ]
      }
    }
    return {
      state: { ...counted, operationalState: S.GET_QUOTE },
      effects: [
        { _tag: "PersistVerdict", operationalState: S.GET_QUOTE, valid: true, event: undefined, nextPollAfter: config.quoteInterval },
        { _tag: "ScheduleNext", after: config.quoteInterval }
      ]
    }
  }
  const event = { eventId: verdict.eventId, severityLevel: verdict.severity }
  const raised = s.severityLevel === null || verdict.severity > s.severityLevel
  const newEpisode = s.operationalState !== S.INVALID_QUOTE
  const state = withEvent({ ...base, operationalState: S.INVALID_QUOTE }, event)
  const stopPolling = !verdict.recoverable || verdict.severity >= config.maxSeverity
  return {
    state,
    effects: [
      {
        _tag: "PersistVerdict",
        operationalState: S.INVALID_QUOTE,
        valid: false,
        event,
        nextPollAfter: stopPolling ? null : config.quoteInterval
      },
      ...(raised || newEpisode ? [{ _tag: "Notify", kind: "revocation", event } as const] : []),
      stopPolling ? { _tag: "Finish", reason: "invalid" } : { _tag: "ScheduleNext", after: config.quoteInterval }
    ]
  }
}

export const step = (state: LoopState, event: LoopEvent, config: MachineConfig): Step => {
  const s = state
  switch (event._tag) {
    case "Begin": {
      if (QUOTING.has(s.operationalState) && s.operationalState !== S.INVALID_QUOTE) {
        const operationalState = s.operationalState === S.GET_QUOTE_RETRY ? S.GET_QUOTE_RETRY : S.GET_QUOTE
        const next = { ...s, operationalState }
        return {
          state: next,
          effects: [
            ...(operationalState !== s.operationalState ? [{ _tag: "PersistState", operationalState } as const] : []),
            requestQuote(next)
          ]
        }
      }
      if (DELIVERING_V.has(s.operationalState)) {
        if (s.pubkeyKnown) return { state: s, effects: [{ _tag: "DeliverV" }] }
        const next = { ...s, operationalState: S.GET_QUOTE, retryCount: 0 }
        return { state: next, effects: [{ _tag: "PersistState", operationalState: S.GET_QUOTE, retryCount: 0 }, requestQuote(next)] }
      }
      return finishFor(s, s.operationalState)
    }
    case "Tick":
      if (QUOTING.has(s.operationalState)) return { state: s, effects: [requestQuote(s)] }
      if (DELIVERING_V.has(s.operationalState)) return { state: s, effects: [{ _tag: "DeliverV" }] }
      return none(s)
    case "QuoteReceived":
      return QUOTING.has(s.operationalState) ? quoteReceived(s, event, config) : none(s)
    case "QuoteUnreachable":
      return QUOTING.has(s.operationalState) ? unreachable(s, config, false) : none(s)
    case "QuoteRefused":
      return QUOTING.has(s.operationalState)
        ? fail(s, event.reason === "version_not_supported" ? EVENT.versionNotSupported : EVENT.noQuote, config, false)
        : none(s)
    case "VDelivered":
      if (!DELIVERING_V.has(s.operationalState)) return none(s)
      return {
        state: { ...s, operationalState: S.GET_QUOTE, vDelivered: true, retryCount: 0 },
        effects: [
          { _tag: "PersistState", operationalState: S.GET_QUOTE, vDelivered: true, retryCount: 0, nextPollAfter: config.quoteInterval },
          { _tag: "ScheduleNext", after: config.quoteInterval }
        ]
      }
    case "VUnreachable":
      return DELIVERING_V.has(s.operationalState) ? unreachable(s, config, true) : none(s)
    case "VRefused":
      return DELIVERING_V.has(s.operationalState) ? fail(s, EVENT.noV, config, false) : none(s)
    case "Crashed":
      return isLooping(s.operationalState) ? fail(s, EVENT.exception, config, false) : none(s)
    case "Stop":
      return { state: { ...s, operationalState: S.TENANT_FAILED }, effects: [{ _tag: "Finish", reason: "stopped" }] }
    case "Reactivate": {
      const next: LoopState = { ...s, operationalState: S.GET_QUOTE, retryCount: 0, vDelivered: false, pubkeyKnown: false, imaEntry: 0 }
      return { state: next, effects: [{ _tag: "PersistState", operationalState: S.GET_QUOTE, retryCount: 0, vDelivered: false }, requestQuote(next)] }
    }
    case "Delete":
      return { state: { ...s, operationalState: S.TERMINATED }, effects: [{ _tag: "DeleteAgent" }, { _tag: "Finish", reason: "deleted" }] }
    case "Superseded": {
      if (event.storedState === S.TERMINATED || event.storedState === S.TENANT_FAILED) return finishFor(s, event.storedState)
      if (isLooping(event.storedState)) return { state: s, effects: [{ _tag: "Reload" }] }
      return { state: s, effects: [{ _tag: "Finish", reason: "superseded" }] }
    }
  }
}

const isLooping = (state: number): boolean => QUOTING.has(state) || DELIVERING_V.has(state)

/** A loop that finds its agent in a state it does not poll in. */
const finishFor = (s: LoopState, stored: number): Step => {
  switch (stored) {
    case S.TERMINATED:
      return { state: { ...s, operationalState: S.TERMINATED }, effects: [{ _tag: "DeleteAgent" }, { _tag: "Finish", reason: "deleted" }] }
    case S.TENANT_FAILED:
      return { state: { ...s, operationalState: S.TENANT_FAILED }, effects: [{ _tag: "Finish", reason: "stopped" }] }
    case S.FAILED:
      return { state: s, effects: [{ _tag: "Finish", reason: "failed" }] }
    case S.INVALID_QUOTE:
      return { state: s, effects: [{ _tag: "Finish", reason: "invalid" }] }
    default:
      return { state: s, effects: [{ _tag: "Finish", reason: "superseded" }] }
  }
}

/** The machine's state from an agent row and the evaluator's progress. */
export const loopStateOf = (row: {
  readonly operational_state: number
  readonly retry_count: number
  readonly attestation_count: number
  readonly severity_level: number | null
  readonly last_event_id: string | null
  readonly v: string | null
  readonly v_delivered: boolean
}, progress: { readonly pubkeyKnown: boolean; readonly imaEntry: number }): LoopState => ({
  operationalState: row.operational_state as OperationalState,
  retryCount: row.retry_count,
  attestationCount: row.attestation_count,
  severityLevel: row.severity_level,
  lastEventId: row.last_event_id,
  hasV: row.v !== null,
  vDelivered: row.v_delivered,
  pubkeyKnown: progress.pubkeyKnown,
  imaEntry: progress.imaEntry
})
