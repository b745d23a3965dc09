/**
 * The decoded evaluation state of each push agent, keyed by the text stored in its push row: phase 1
 * reads that text with every attestation, and decoding it through the state's schema cost more
 * than the rest of the context read (measured 50–160 µs, against ~15 µs to write it). The text
 * this process last wrote or read for an agent is remembered with its decoded value; a different
 * text (another process judged, an administrator reset it) is decoded and replaces it. The texts
 * are compared whole, so a hit is exactly what decoding would return.
 */
import { Either } from "effect"
import { decodeEvaluationState, type EvaluationState, initialEvaluationState } from "../../attestation/evaluate/state.js"

/** More agents than this and the map starts afresh (a verifier's push fleet fits; a bound on memory all the same). */
const MAX_AGENTS = 200_000

export const makePriorStates = () => {
  const known = new Map<string, { readonly text: string; readonly state: EvaluationState }>()
  const remember = (agentId: string, text: string, state: EvaluationState) => {
    if (known.size >= MAX_AGENTS && !known.has(agentId)) known.clear()
    known.set(agentId, { text, state })
  }
  return {
    /** The state of stored `text` (null or undecodable: the initial state). */
    stateOf: (agentId: string, text: string | null): EvaluationState => {
      if (text === null) return initialEvaluationState
      const hit = known.get(agentId)
      if (hit !== undefined && hit.text === text) return hit.state
      const decoded = decodeEvaluationState(text)
      if (Either.isLeft(decoded)) return initialEvaluationState
      remember(agentId, text, decoded.right)
      return decoded.right
    },
    /** A verdict wrote `text`, the encoding of `state`. */
    wrote: remember
  }
}
