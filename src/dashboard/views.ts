/**
 * The JSON the page reads (`/api/overview`, `/api/agents/<id>`, `/api/policies`, `/api/registrar`),
 * built from the latest snapshot and the history. Pure: `bench/dashboard.ts` times
 * `overviewView` against fetching and parsing the same bulk JSON.
 */
import { ACTIVE_STATES, type OperationalState } from "../attestation/states.js"
import type { AgentRecord } from "./agents.js"
import { stateKey, verdictOfRecord } from "./agents.js"
import type { History, TimelineEvent } from "./history.js"
import type { RegistrarEntry } from "./registrarRecords.js"

export interface ServiceStatus {
  readonly url: string
  readonly ok: boolean
  /** The last error (null when the last request succeeded) and since when the service has failed. */
  readonly error: string | null
  readonly failingSince: number | null
}

export interface Snapshot {
  /** Grows with every sample; the live-update events carry it. */
  readonly version: number
  readonly takenAt: number | null
  readonly verifier: ServiceStatus
  readonly registrar: ServiceStatus
  readonly agents: ReadonlyMap<string, AgentRecord>
  readonly runtimePolicies: ReadonlyArray<string> | null
  readonly mbPolicies: ReadonlyArray<string> | null
  readonly registrarAgents: ReadonlyMap<string, RegistrarEntry> | null
}

export const FRESHNESS_BUCKETS = ["under_1m", "1m_to_10m", "over_10m", "never"] as const
export type Freshness = (typeof FRESHNESS_BUCKETS)[number]

export const freshnessOf = (lastSuccess: number | null, nowSec: number): Freshness => {
  if (lastSuccess === null) return "never"
  const age = nowSec - lastSuccess
  return age < 60 ? "under_1m" : age < 600 ? "1m_to_10m" : "over_10m"
}

const services = (s: Snapshot) => ({ verifier: s.verifier, registrar: s.registrar })

/**
 * A pull agent's seconds since its last verified quote: the verifier's count when sampled, plus the
 * time since the sample (null when the verifier does not report it, as Keylime's does not).
 */
export const sinceVerifiedOf = (a: AgentRecord, takenAt: number | null, nowSec: number): number | null =>
  a.secondsSinceVerifiedQuote === null ? null : a.secondsSinceVerifiedQuote + (takenAt === null ? 0 : Math.max(0, nowSec - Math.floor(takenAt / 1000)))

export const overviewView = (s: Snapshot, h: History, now: number) => {
  const nowSec = Math.floor(now / 1000)
  // cluster mode: active pull agents by the runner whose loop took them (empty otherwise)
  const byRunner: Record<string, number> = {}
  const byState: Record<string, number> = {}
  const byStatus = { PASS: 0, FAIL: 0, PENDING: 0 }
  const freshness: Record<Freshness, number> = { under_1m: 0, "1m_to_10m": 0, over_10m: 0, never: 0 }
  const rows: Array<unknown> = []
  const registrar = s.registrarAgents
  for (const a of s.agents.values()) {
    const key = stateKey(a.stateName)
    byState[key] = (byState[key] ?? 0) + 1
    byStatus[a.status]++
    const fresh = freshnessOf(a.lastSuccess, nowSec)
    freshness[fresh]++
    const reg = registrar?.get(a.id)
    if (a.model === "pull" && a.ownerRunner !== null && ACTIVE_STATES.has(a.state as OperationalState)) byRunner[a.ownerRunner] = (byRunner[a.ownerRunner] ?? 0) + 1
    rows.push({
      id: a.id,
      model: a.model,
      state: a.state,
      stateName: a.stateName,
      status: a.status,
      acceptance: a.acceptance,
      verdict: verdictOfRecord(a),
      ip: a.ip,
      port: a.port,
      attestationCount: a.attestationCount,
      lastSuccess: a.lastSuccess,
      ageSeconds: a.lastSuccess === null ? null : Math.max(0, nowSec - a.lastSuccess),
      freshness: fresh,
      sinceVerifiedSeconds: sinceVerifiedOf(a, s.takenAt, nowSec),
      owner: a.ownerRunner,
      lastEventId: a.lastEventId,
      lastEventMessage: a.lastEventMessage,
      lastFailureReason: a.lastFailureReason,
      registered: registrar === null ? null : reg !== undefined,
      active: reg?.active ?? null
    })
  }
  const last = h.samples.at(-1)
  return {
    version: s.version,
    takenAt: s.takenAt,
    services: services(s),
    counts: { agents: s.agents.size, byStatus, byState, freshness, byRunner },
    failuresLastHour: h.failures.length,
    attestationsPerSecond: last?.rate ?? 0,
    series: h.samples,
    agents: rows
  }
}

/**
 * The name of an agent's policy: the one the verifier reports, else the policy stored under the
 * agent's id (Keylime's name for a policy given without one), else "(unnamed)" when the status says
 * the agent has one; marked when it is empty (Keylime stores an empty policy for an agent given none).
 */
const policyOf = (reported: string | null, has: boolean, names: ReadonlyArray<string> | null, id: string): string | null => {
  const name = reported ?? (names?.includes(id) ? id : has ? "(unnamed)" : null)
  return name === null ? null : has ? name : `${name} (empty: nothing checked)`
}

export const agentView = (s: Snapshot, h: History, id: string, now: number) => {
  const a = s.agents.get(id)
  const reg = s.registrarAgents?.get(id) ?? null
  const timeline: ReadonlyArray<TimelineEvent> = h.timelines.get(id) ?? []
  if (a === undefined && reg === null && timeline.length === 0) return null
  return {
    version: s.version,
    takenAt: s.takenAt,
    services: services(s),
    id,
    onVerifier: a !== undefined,
    verifier: a === undefined ? null : {
      ...a,
      verdict: verdictOfRecord(a),
      ageSeconds: a.lastSuccess === null ? null : Math.max(0, Math.floor(now / 1000) - a.lastSuccess),
      sinceVerifiedSeconds: sinceVerifiedOf(a, s.takenAt, Math.floor(now / 1000))
    },
    registrar: reg,
    policies: a === undefined ? null : {
      runtime: policyOf(a.runtimePolicyName, a.hasRuntimePolicy, s.runtimePolicies, id),
      measuredBoot: policyOf(a.mbPolicyName, a.hasMbPolicy, s.mbPolicies, id),
      tpmPolicy: a.tpmPolicy
    },
    // newest first
    timeline: [...timeline].reverse()
  }
}

export const policiesView = (s: Snapshot) => {
  const users = (pick: (a: AgentRecord) => string | null) => {
    const m = new Map<string, Array<string>>()
    for (const a of s.agents.values()) {
      const name = pick(a)
      if (name === null) continue
      const list = m.get(name)
      if (list === undefined) m.set(name, [a.id])
      else list.push(a.id)
    }
    return m
  }
  const runtimeUsers = users((a) => a.runtimePolicyName)
  const mbUsers = users((a) => a.mbPolicyName)
  // Keylime's status does not name an agent's policies; then only the has_* flags are known
  const namesReported = [...s.agents.values()].some((a) => a.runtimePolicyName !== null || a.mbPolicyName !== null)
  // Keylime stores a policy given without a name under the agent's id: such a policy is that agent's
  const rows = (kind: "runtime" | "measured_boot", names: ReadonlyArray<string> | null, m: Map<string, Array<string>>) =>
    (names ?? []).map((name) => ({
      kind,
      name,
      agents: namesReported ? (m.get(name) ?? []) : s.agents.has(name) ? [name] : null
    }))
  let withRuntime = 0
  let withMb = 0
  for (const a of s.agents.values()) {
    if (a.hasRuntimePolicy) withRuntime++
    if (a.hasMbPolicy) withMb++
  }
  return {
    version: s.version,
    takenAt: s.takenAt,
    services: services(s),
    usersKnown: namesReported,
    agentsWithRuntimePolicy: withRuntime,
    agentsWithMbPolicy: withMb,
    policies: [...rows("runtime", s.runtimePolicies, runtimeUsers), ...rows("measured_boot", s.mbPolicies, mbUsers)]
  }
}

export const registrarView = (s: Snapshot) => {
  const entries = s.registrarAgents === null ? [] : [...s.registrarAgents.values()]
  return {
    version: s.version,
    takenAt: s.takenAt,
    services: services(s),
    counts: { registered: entries.length, active: entries.filter((e) => e.active).length },
    agents: entries.map((e) => ({ ...e, onVerifier: s.agents.has(e.id) }))
  }
}
