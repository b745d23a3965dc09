/**
 * What the registrar's domain fails with: facts (which agent, which field, why), no HTTP. The
 * handlers in Http.ts choose the status and the exact Keylime text for each.
 */
import { Data } from "effect"
import type { RepoError } from "./Repo.js"

/** A registration field that cannot be accepted (bad TPM structure, untrusted EK certificate, …). */
export class InvalidRegistrationData extends Data.TaggedError("InvalidRegistrationData")<{
  readonly agentId: string
  readonly field: string
  readonly reason: string
}> {
  override get message(): string {
    return `agent ${this.agentId}: ${this.field} ${this.reason}`
  }
}

/** Another EK or AK under an id that is registered already. */
export class DifferentTpmIdentity extends Data.TaggedError("DifferentTpmIdentity")<{ readonly agentId: string }> {}

/** The id was taken or removed between the check and the write (a concurrent registration). */
export class ConcurrentRegistration extends Data.TaggedError("ConcurrentRegistration")<{ readonly agentId: string }> {}

export class AgentNotFound extends Data.TaggedError("AgentNotFound")<{ readonly agentId: string }> {}

/** Registered, but its challenge was never answered. */
export class AgentNotActivated extends Data.TaggedError("AgentNotActivated")<{ readonly agentId: string }> {}

/**
 * The auth_tag does not prove the challenge. `registrationDeleted`: a first registration that was
 * never activated was removed (Keylime's behaviour); otherwise nothing changed.
 */
export class AuthTagMismatch extends Data.TaggedError("AuthTagMismatch")<{
  readonly agentId: string
  readonly authTag: string
  readonly caller: string
  readonly registrationDeleted: boolean
}> {}

/** The agent registered again while this activation was being checked: the newest blob must be used. */
export class ActivationRaced extends Data.TaggedError("ActivationRaced")<{ readonly agentId: string }> {}

export type RegistrarError =
  | InvalidRegistrationData
  | DifferentTpmIdentity
  | ConcurrentRegistration
  | AgentNotFound
  | AgentNotActivated
  | AuthTagMismatch
  | ActivationRaced
  | RepoError
