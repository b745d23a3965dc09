/**
 * What the dashboard remembers between samples, in memory only: a bounded series of fleet samples
 * (for the chart and attestations per second) and a bounded timeline per agent, derived by
 * comparing each verifier sample with the previous one (the verifier's v2 API serves no history):
 * an agent appears or goes, its attestation count grows, its state changes, or its `last_event_id`
 * (the failure type) changes; for a push agent, its attestations passed and failed since the last
 * sample (pushEvents) and its acceptance. Pure functions over plain data; the sampler owns the
 * one mutable instance.
 */
import type { AgentRecord } from "./agents.js"

export type EventKind = "added" | "removed" | "attested" | "state" | "failure"

export interface TimelineEvent {
  /** Epoch milliseconds of the sample that saw it. */
  readonly t: number
  readonly kind: EventKind
  readonly message: string
  /** For failures: the failure type (`last_event_id`) and severity. */
  readonly type?: string
  readonly severity?: number | null
  /** For attestations (passed, or for a push agent failed): how many since the previous sample. */
  readonly count?: number
}

export interface FleetSample {
  readonly t: number
  readonly total: number
  readonly pass: number
  readonly fail: number
  readonly pending: number
  /** Attestations per second since the previous sample (0 for the first). */
  readonly rate: number
}

export interface History {
  readonly samples: Array<FleetSample>
  readonly timelines: Map<string, Array<TimelineEvent>>
  /** Failure events of the whole fleet (time, agent, type), pruned to the last hour. */
  readonly failures: Array<{ readonly t: number; readonly agentId: string; readonly type: string }>
  /** The previous verifier sample and its attestation total. */
  previous: { readonly t: number; readonly agents: ReadonlyMap<string, AgentRecord>; readonly total: number } | null
}

export const MAX_SAMPLES = 900
export const MAX_EVENTS_PER_AGENT = 200
const HOUR_MS = 3_600_000

export const emptyHistory = (): History => ({ samples: [], timelines: new Map(), failures: [], previous: null })

const push = <A>(list: Array<A>, item: A, max: number) => {
  list.push(item)
  if (list.length > max) list.splice(0, list.length - max)
}

// FAILED and INVALID_QUOTE; TENANT_FAILED (10) is an admin's stop, not an attestation failure
const isFailedState = (a: AgentRecord) => a.state === 7 || a.state === 9

const failureMessage = (a: AgentRecord) =>
  `${a.lastFailureReason === null ? "" : `${a.lastFailureReason}: `}${a.lastEventId ?? "failed"}${a.lastEventMessage === null ? "" : `: ${a.lastEventMessage}`}`

/**
 * A push agent's attestations between two samples: the count grows by the passes, the index of
 * its latest completed attestation by all of them, and a new latest failure (its time changed)
 * is one of them; so each sample adds the passes and the failures with the latest one's reason,
 * type and message. A push agent's state is its acceptance; a change of it is a state event.
 */
const pushEvents = (before: AgentRecord, after: AgentRecord, t: number): Array<TimelineEvent> => {
  const out: Array<TimelineEvent> = []
  if (after.acceptance !== before.acceptance) out.push({ t, kind: "state", message: `${before.acceptance ?? "?"} → ${after.acceptance ?? "?"}` })
  const passed = Math.max(0, after.attestationCount - before.attestationCount)
  const completed = after.lastAttestationIndex === null ? passed : Math.max(passed, after.lastAttestationIndex - (before.lastAttestationIndex ?? -1))
  const newFailure = after.lastFailureAt !== null && after.lastFailureAt !== before.lastFailureAt
  const failed = newFailure ? Math.max(1, completed - passed) : 0
  if (passed > 0) out.push({ t, kind: "attested", count: passed, message: `${passed} attestation${passed === 1 ? "" : "s"} passed` })
  if (failed > 0) {
    out.push({
      t,
      kind: "failure",
      type: after.lastEventId ?? after.lastFailureReason ?? "failed",
      severity: null,
      count: failed,
      message: `${failed === 1 ? "attestation" : `${failed} attestations`} failed${failed === 1 ? "" : " (the latest shown)"}: ${failureMessage(after)}`
    })
  }
  return out
}

/** The events one agent's change between two samples makes (pure). */
export const agentEvents = (before: AgentRecord | undefined, after: AgentRecord, t: number): Array<TimelineEvent> => {
  const out: Array<TimelineEvent> = []
  if (before === undefined) {
    const verdict = after.model === "push" && after.lastEvaluation !== null ? `, ${after.attestationCount} passed, latest ${after.lastEvaluation}` : ""
    out.push({ t, kind: "added", message: `seen in state ${after.stateName}${verdict}` })
    if (after.lastEventId !== null) {
      const what = after.model === "push" ? failureMessage(after) : after.lastEventId
      out.push({ t, kind: "failure", type: after.lastEventId, severity: after.severityLevel, message: `failure ${what} (already recorded)` })
    }
    return out
  }
  if (after.model === "push") return pushEvents(before, after, t)
  // in the order they are shown oldest first: the state change, then what it came with
  if (after.state !== before.state) out.push({ t, kind: "state", message: `${before.stateName} → ${after.stateName}` })
  const attested = after.attestationCount - before.attestationCount
  if (attested > 0) out.push({ t, kind: "attested", count: attested, message: `${attested} attestation${attested === 1 ? "" : "s"} passed` })
  if (after.lastEventId !== null && (after.lastEventId !== before.lastEventId || after.severityLevel !== before.severityLevel)) {
    out.push({
      t,
      kind: "failure",
      type: after.lastEventId,
      severity: after.severityLevel,
      message: `failure ${after.lastEventId} (severity ${after.severityLevel ?? "?"})${after.lastEventMessage === null ? "" : `: ${after.lastEventMessage}`}`
    })
  } else if (isFailedState(after) && !isFailedState(before)) {
    out.push({ t, kind: "failure", type: after.stateName, severity: after.severityLevel, message: `attestation failed: ${after.stateName}` })
  }
  return out
}

/** Adds one verifier sample taken at `t` (epoch ms): events, failures, the fleet sample. */
export const recordSample = (h: History, agents: ReadonlyMap<string, AgentRecord>, t: number): void => {
  const prev = h.previous
  let total = 0
  let pass = 0
  let fail = 0
  let pending = 0
  for (const a of agents.values()) {
    total += a.attestationCount
    if (a.status === "PASS") pass++
    else if (a.status === "FAIL") fail++
    else pending++
    const events = agentEvents(prev?.agents.get(a.id), a, t)
    if (events.length === 0) continue
    let timeline = h.timelines.get(a.id)
    if (timeline === undefined) h.timelines.set(a.id, (timeline = []))
    for (const e of events) {
      push(timeline, e, MAX_EVENTS_PER_AGENT)
      if (e.kind === "failure") h.failures.push({ t, agentId: a.id, type: e.type ?? "unknown" })
    }
  }
  if (prev !== null) {
    for (const id of prev.agents.keys()) {
      if (!agents.has(id)) {
        const timeline = h.timelines.get(id)
        if (timeline !== undefined) push(timeline, { t, kind: "removed", message: "no longer on the verifier" }, MAX_EVENTS_PER_AGENT)
      }
    }
  }
  // a count that went down is agents removed, not negative attestations
  const rate = prev === null || t <= prev.t ? 0 : Math.max(0, total - prev.total) / ((t - prev.t) / 1000)
  push(h.samples, { t, total: agents.size, pass, fail, pending, rate }, MAX_SAMPLES)
  const cutoff = t - HOUR_MS
  let drop = 0
  while (drop < h.failures.length && h.failures[drop]!.t < cutoff) drop++
  if (drop > 0) h.failures.splice(0, drop)
  h.previous = { t, agents, total }
  // timelines of agents gone for an hour are forgotten
  if (h.timelines.size > agents.size) {
    for (const [id, events] of h.timelines) {
      if (!agents.has(id) && (events.at(-1)?.t ?? 0) < cutoff) h.timelines.delete(id)
    }
  }
}
