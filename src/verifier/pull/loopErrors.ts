/**
 * What the pull loop fails with, as types the loop and the poller handle by tag. A step of the
 * loop fails with the database (waited out: the row is read again) or with a configuration the
 * verifier cannot honour (the machine's `Crashed`: the agent FAILED, naming the field); a loop
 * that cannot start fails with `AgentLoopNotStarted` and the poller starts it again.
 */
import { Data } from "effect"
import type { AgentConfigUnusable } from "../../attestation/AgentConfigUnusable.js"
import type { VerifierStoreError } from "../domain/errors.js"

/** What one effect of the loop (a write, a quote round, a deletion) fails with. */
export type LoopStepError = VerifierStoreError | AgentConfigUnusable

/** The loop of `agentId` did not start: the database failed at `operation` (reading its row, taking its owner epoch). */
export class AgentLoopNotStarted extends Data.TaggedError("AgentLoopNotStarted")<{
  readonly agentId: string
  readonly operation: string
  readonly reason: string
}> {
  override get message(): string {
    return `agent ${this.agentId}: the loop did not start: ${this.operation} failed: ${this.reason}`
  }
}

/** A database failure at a loop's start → AgentLoopNotStarted with its facts. */
export const notStarted = (agentId: string) => (e: VerifierStoreError): AgentLoopNotStarted =>
  new AgentLoopNotStarted({ agentId, operation: e.operation, reason: e.reason })
