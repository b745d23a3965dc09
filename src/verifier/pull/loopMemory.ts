/**
 * One agent loop's working memory: the row it acts for, the generation it read, the owner epoch it
 * took, the machine's state, the evaluator's state, the compiled policy and the last judged quote.
 * The quote round (quoteRound.ts) and the writes (loopWrites.ts) read and update it.
 */
import { Either } from "effect"
import type { AgentTarget } from "./AgentClient.js"
import { decodeEvaluationState, type EvaluationState, initialEvaluationState } from "../../attestation/evaluate/state.js"
import type { Evaluation } from "../../attestation/evaluate/types.js"
import { type LoopState, loopStateOf } from "./machine.js"
import type { AgentView } from "../domain/repo/rows.js"
import type { CompiledAgent } from "./agentPolicy.js"

export interface LoopMemory {
  readonly agentId: string
  view: AgentView
  generation: number
  /** Taken when the loop started; every write is conditional on it. */
  readonly epoch: number
  state: LoopState
  prior: EvaluationState
  compiled: CompiledAgent | undefined
  /** The last judged quote, for PersistVerdict and Notify. */
  judged: { readonly evaluation: Evaluation; readonly receivedAt: number; readonly nonce: string } | undefined
  /** Milliseconds the last write waited for its batch (writeBatch.ts): the next sleep is that much shorter. */
  batchWaitMs: number
}

const priorOf = (view: AgentView): EvaluationState => {
  if (view.evaluation_state === null) return initialEvaluationState
  const decoded = decodeEvaluationState(view.evaluation_state)
  // a state that does not decode (written by another version): start over from entry 0
  return Either.isRight(decoded) ? decoded.right : initialEvaluationState
}

/** The memory of a loop (re)reading its row; the owner epoch stays the one it took. */
export const memoryOf = (view: AgentView, epoch: number): LoopMemory => {
  const prior = priorOf(view)
  return {
    agentId: view.agent_id,
    view,
    generation: view.generation,
    epoch,
    prior,
    state: loopStateOf(view, { pubkeyKnown: prior.nk !== null, imaEntry: prior.ima.nextEntry }),
    compiled: undefined,
    judged: undefined,
    batchWaitMs: 0
  }
}

/** The write guard of the memory: nobody changed the row since it was read, and no newer loop took it. */
export const fenceOf = (m: LoopMemory) => ({ generation: m.generation, ownerEpoch: m.epoch })

export const targetOf = (v: AgentView, defaultVersion: string): AgentTarget => ({
  agentId: v.agent_id,
  ip: v.ip,
  port: v.port,
  mtlsCert: v.mtls_cert,
  apiVersion: v.supported_version ?? defaultVersion
})
