/**
 * What phase 1 of an agent's attestation read and created, kept for its phase 2 in this process:
 * phase 2 then reads nothing before its guarded accept (the store still decides: the accept
 * writes only while that attestation awaits evidence and is the agent's latest). One entry per
 * agent, taken by phase 2 or replaced by the next phase 1; an agent whose phase 2 reaches another
 * process, or comes after the challenge expired, goes the reading way.
 */
import type { EvaluationState } from "../../attestation/evaluate/state.js"
import type { LatestAttestation, PushAgentFacts } from "../domain/pushStore/rows.js"

export interface Handoff {
  readonly latest: LatestAttestation
  readonly agent: PushAgentFacts
  readonly prior: EvaluationState
  readonly priorEncoded: string | null
}

/** Bound on the entries kept: an agent that never sends phase 2 is dropped oldest first. */
export const HANDOFF_CAPACITY = 100_000

export const makeHandoffs = (capacity: number = HANDOFF_CAPACITY) => {
  const byAgent = new Map<string, Handoff>()
  return {
    put: (agentId: string, h: Handoff): void => {
      byAgent.delete(agentId)
      if (byAgent.size >= capacity) byAgent.delete(byAgent.keys().next().value!)
      byAgent.set(agentId, h)
    },
    /** The handoff for phase 2 of `index` at `now`, removed; undefined when phase 2 must read the store. */
    take: (agentId: string, index: number | "latest", now: number): Handoff | undefined => {
      const h = byAgent.get(agentId)
      if (h === undefined) return undefined
      byAgent.delete(agentId)
      if ((index !== "latest" && index !== h.latest.idx) || now >= h.latest.challenges_expire_at) return undefined
      return h
    },
    size: () => byAgent.size
  }
}
