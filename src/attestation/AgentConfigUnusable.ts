/**
 * The one error of an agent configuration the verifier cannot fully honour (a row stored by a
 * laxer version, a policy gone, a measured-boot policy name it does not know, a bad key). Every
 * attestation path (pull loop, push verdict, verify/evidence) compiles through
 * compileAgentPolicy.ts and fails with this: closed, naming the field.
 */
import { Data } from "effect"

export class AgentConfigUnusable extends Data.TaggedError("AgentConfigUnusable")<{
  /** "" for verify/evidence, whose evidence names no agent. */
  readonly agentId: string
  /** The configuration field (creation-body or `[verifier]` option name) that cannot be honoured. */
  readonly field: string
  /** Completes "<field> <reason>". */
  readonly reason: string
}> {
  override get message(): string {
    return this.agentId === "" ? `${this.field} ${this.reason}` : `agent ${this.agentId}: ${this.field} ${this.reason}`
  }
}
