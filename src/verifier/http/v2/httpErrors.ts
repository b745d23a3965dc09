/**
 * The verifier's domain errors → envelope errors: status and text (texts.ts) chosen here, per
 * operation where Keylime answers the same fact differently (an unknown agent is 404 on GET but
 * 400 "No row was found…" on stop/reactivate; an unknown mb policy is 404 on GET but 409 on PUT).
 */
import { Effect, Match } from "effect"
import {
  BadRequest,
  Conflict,
  Forbidden,
  InternalError,
  NotFound,
  ServiceUnavailable,
  Unauthorized
} from "../../../../schemas/Envelope.js"
import { isTransientSqlError } from "../../../db/transient.js"
import { AuthorizationText } from "../../../http/authorization.js"
import type {
  AgentAlreadyExists,
  AgentBeingDeleted,
  AgentNotFound,
  AgentOfOtherVerifier,
  InvalidAgentBody,
  InvalidAgentId,
  InvalidMbPolicy,
  InvalidPolicyName,
  InvalidRuntimePolicy,
  MbPolicyExists,
  MbPolicyInUse,
  MbPolicyNotFound,
  RuntimePolicyExists,
  RuntimePolicyInUse,
  RuntimePolicyNotFound,
  VerifierStoreError
} from "../../domain/errors.js"
import { invalidAgentBodyText, invalidMbPolicyText, invalidRuntimePolicyStatus, invalidRuntimePolicyText, VerifierText } from "../../domain/texts.js"

export type VerifierDomainError =
  | InvalidAgentId
  | InvalidAgentBody
  | AgentAlreadyExists
  | AgentNotFound
  | AgentOfOtherVerifier
  | AgentBeingDeleted
  | InvalidPolicyName
  | RuntimePolicyNotFound
  | RuntimePolicyExists
  | RuntimePolicyInUse
  | InvalidRuntimePolicy
  | MbPolicyNotFound
  | MbPolicyExists
  | MbPolicyInUse
  | InvalidMbPolicy
  | VerifierStoreError

export type VerifierHttpError = BadRequest | Unauthorized | Forbidden | NotFound | Conflict | InternalError | ServiceUnavailable

/** Which request the error answers: the few facts Keylime words differently per operation. */
export type Operation =
  | "agentAdd"
  | "agentRead"
  | "agentDelete"
  | "agentStopOrReactivate"
  | "runtimeAdd"
  | "runtimeUpdate"
  | "runtimeOther"
  | "mbAdd"
  | "mbUpdate"
  | "mbOther"
  | "identity"

export const UNAVAILABLE_TEXT = "The verifier database is unavailable at the moment; retry later"

/**
 * A request the database failed, logged with the driver's reason and code (storeError): the 503's
 * text says only "retry later", and an operator needs to know what PostgreSQL said.
 */
export const logStoreFailure = (e: VerifierDomainError): Effect.Effect<void> =>
  e._tag !== "VerifierStoreError"
    ? Effect.void
    : isTransientSqlError(e.cause)
    ? Effect.logWarning(`answered 503 (the database is momentarily unavailable): ${e.message}`)
    : Effect.logError(`answered 500: ${e.message}`)

export const httpErrorOf = (operation: Operation) =>
  Match.type<VerifierDomainError>().pipe(
    Match.tagsExhaustive({
      InvalidAgentId: () => new BadRequest({ message: VerifierText.badAgentId }),
      InvalidAgentBody: (e) => new BadRequest({ message: invalidAgentBodyText(e) }),
      AgentAlreadyExists: (e) => new Conflict({ message: VerifierText.agentExists(e.agentId) }),
      AgentNotFound: () =>
        operation === "agentStopOrReactivate"
          ? new BadRequest({ message: VerifierText.noRow })
          : new NotFound({ message: VerifierText.agentNotFound }),
      AgentOfOtherVerifier: () => new NotFound({ message: VerifierText.agentOfOtherVerifier }),
      AgentBeingDeleted: (e) => new Conflict({ message: VerifierText.agentBeingDeleted(e.agentId) }),
      InvalidPolicyName: (e) => new BadRequest({ message: e.message }),
      RuntimePolicyNotFound: (e) =>
        operation === "agentAdd"
          ? new NotFound({ message: VerifierText.imaPolicyNotFound(e.name) })
          : operation === "runtimeUpdate"
          ? new NotFound({ message: VerifierText.runtimePolicyUpdateUnknown(e.name) })
          : new NotFound({ message: VerifierText.runtimePolicyNotFound(e.name) }),
      RuntimePolicyExists: (e) =>
        new Conflict({ message: operation === "agentAdd" ? VerifierText.imaPolicyExists(e.name) : VerifierText.runtimePolicyExists(e.name) }),
      RuntimePolicyInUse: (e) => new Conflict({ message: VerifierText.runtimePolicyInUse(e.agentId) }),
      InvalidRuntimePolicy: (e) =>
        invalidRuntimePolicyStatus(e) === 401
          ? new Unauthorized({ message: invalidRuntimePolicyText(e) })
          : new BadRequest({ message: invalidRuntimePolicyText(e) }),
      MbPolicyNotFound: (e) =>
        operation === "agentAdd"
          ? new NotFound({ message: VerifierText.mbPolicyNotFoundOnAdd(e.name) })
          : operation === "mbUpdate"
          ? new Conflict({ message: VerifierText.mbPolicyUpdateUnknown(e.name) })
          : new NotFound({ message: VerifierText.mbPolicyNotFound(e.name) }),
      MbPolicyExists: (e) =>
        new Conflict({ message: operation === "agentAdd" ? VerifierText.mbPolicyExistsOnAdd(e.name) : VerifierText.mbPolicyExists(e.name) }),
      MbPolicyInUse: (e) => new Conflict({ message: VerifierText.mbPolicyInUse(e.agentId) }),
      InvalidMbPolicy: (e) => new BadRequest({ message: invalidMbPolicyText(e) }),
      // a database still unreachable after the retry is a 503 (come back later), anything else a 500
      VerifierStoreError: (e) =>
        isTransientSqlError(e.cause) ? new ServiceUnavailable({ message: UNAVAILABLE_TEXT }) : new InternalError({ message: e.message })
    })
  )

/** Keylime's verifier names the action in its 403 text ("Action list_agents requires admin authentication …"). */
export const forbiddenText = (action: string, denial: string): string =>
  denial === AuthorizationText.adminRequired
    ? action === "read_agent" ? VerifierText.authenticationRequired(action) : VerifierText.adminRequired(action)
    : denial
