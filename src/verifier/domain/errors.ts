/**
 * The verifier's domain errors. Each carries the facts a person acts on (agent id, policy name,
 * field, reason); each Http.ts maps them to a status code and a text of `texts.ts`.
 */
import { Schema } from "effect"
import { codeOf, reasonsOf } from "../../ops/errorText.js"

/** A path agent id with characters outside [A-Za-z0-9._-] (texts.ts badAgentId). */
export class InvalidAgentId extends Schema.TaggedError<InvalidAgentId>()("InvalidAgentId", {
  agentId: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `agent id ${JSON.stringify(this.agentId)} ${this.reason}`
  }
}

/**
 * A creation-body field that cannot be accepted. `problem` says which kind of refusal it is, so
 * texts.ts can give Keylime's words for the kinds a recorded exchange fixes:
 * - missing: a required key is absent (or `runtime_policy` is null)
 * - mtls_required: `enable_agent_mtls` and no agent certificate
 * - not_an_integer: `cloudagent_port` is not a port number (`value` holds what was sent)
 * - not_json: an inline document is not JSON (`jsonPosition` when Python would say "Expecting value")
 * - invalid: anything else; `reason` completes "<field> <reason>"
 */
export class InvalidAgentBody extends Schema.TaggedError<InvalidAgentBody>()("InvalidAgentBody", {
  agentId: Schema.String,
  field: Schema.String,
  problem: Schema.Literal("missing", "mtls_required", "not_an_integer", "not_json", "invalid"),
  reason: Schema.String,
  value: Schema.optional(Schema.Unknown),
  jsonPosition: Schema.optional(Schema.Struct({ line: Schema.Number, column: Schema.Number, char: Schema.Number }))
}) {
  override get message(): string {
    return `agent ${this.agentId}: ${this.field} ${this.reason}`
  }
}

export class AgentAlreadyExists extends Schema.TaggedError<AgentAlreadyExists>()("AgentAlreadyExists", {
  agentId: Schema.String
}) {
  override get message(): string {
    return `agent ${this.agentId} already exists`
  }
}

export class AgentNotFound extends Schema.TaggedError<AgentNotFound>()("AgentNotFound", {
  agentId: Schema.String
}) {
  override get message(): string {
    return `agent ${this.agentId} not found`
  }
}

/** The agent is polled by another verifier (`verifier_id`); this one does not delete it. */
export class AgentOfOtherVerifier extends Schema.TaggedError<AgentOfOtherVerifier>()("AgentOfOtherVerifier", {
  agentId: Schema.String,
  verifierId: Schema.String
}) {
  override get message(): string {
    return `agent ${this.agentId} belongs to verifier ${this.verifierId}`
  }
}

/** The agent is TERMINATED (8): its deletion is under way in the process that polls it. */
export class AgentBeingDeleted extends Schema.TaggedError<AgentBeingDeleted>()("AgentBeingDeleted", {
  agentId: Schema.String
}) {
  override get message(): string {
    return `agent ${this.agentId} is being deleted`
  }
}

/** A policy name (path or `*_policy_name`) that attest does not store. */
export class InvalidPolicyName extends Schema.TaggedError<InvalidPolicyName>()("InvalidPolicyName", {
  kind: Schema.Literal("runtime", "mb"),
  name: Schema.String,
  field: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `${this.field} ${this.reason}`
  }
}

export class RuntimePolicyNotFound extends Schema.TaggedError<RuntimePolicyNotFound>()("RuntimePolicyNotFound", {
  name: Schema.String
}) {
  override get message(): string {
    return `runtime policy ${this.name} not found`
  }
}

export class RuntimePolicyExists extends Schema.TaggedError<RuntimePolicyExists>()("RuntimePolicyExists", {
  name: Schema.String
}) {
  override get message(): string {
    return `runtime policy ${this.name} already exists`
  }
}

export class RuntimePolicyInUse extends Schema.TaggedError<RuntimePolicyInUse>()("RuntimePolicyInUse", {
  name: Schema.String,
  agentId: Schema.String
}) {
  override get message(): string {
    return `runtime policy ${this.name} is used by agent ${this.agentId}`
  }
}

/**
 * A runtime policy refused at upload (or inline at agent creation). `problem`:
 * not_json | malformatted (schema; `keylimeDetail` holds jsonschema's words where attest can say
 * them) | key_required | not_signed | bad_signature | invalid (a request field, e.g. a key that is
 * not base64).
 */
export class InvalidRuntimePolicy extends Schema.TaggedError<InvalidRuntimePolicy>()("InvalidRuntimePolicy", {
  name: Schema.String,
  field: Schema.String,
  problem: Schema.Literal("not_json", "malformatted", "key_required", "not_signed", "bad_signature", "invalid"),
  reason: Schema.String,
  keylimeDetail: Schema.optional(Schema.String)
}) {
  override get message(): string {
    return `runtime policy ${this.name}: ${this.field} ${this.reason}`
  }
}

export class MbPolicyNotFound extends Schema.TaggedError<MbPolicyNotFound>()("MbPolicyNotFound", {
  name: Schema.String
}) {
  override get message(): string {
    return `measured-boot policy ${this.name} not found`
  }
}

export class MbPolicyExists extends Schema.TaggedError<MbPolicyExists>()("MbPolicyExists", {
  name: Schema.String
}) {
  override get message(): string {
    return `measured-boot policy ${this.name} already exists`
  }
}

export class MbPolicyInUse extends Schema.TaggedError<MbPolicyInUse>()("MbPolicyInUse", {
  name: Schema.String,
  agentId: Schema.String
}) {
  override get message(): string {
    return `measured-boot policy ${this.name} is used by agent ${this.agentId}`
  }
}

/** An mb policy refused at upload: attest stores only JSON objects (or nothing). */
export class InvalidMbPolicy extends Schema.TaggedError<InvalidMbPolicy>()("InvalidMbPolicy", {
  name: Schema.String,
  field: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `measured-boot policy ${this.name}: ${this.field} ${this.reason}`
  }
}

/** The database failed (connection, constraint, a row that does not decode): a 500. */
export class VerifierStoreError extends Schema.TaggedError<VerifierStoreError>()("VerifierStoreError", {
  operation: Schema.String,
  reason: Schema.String,
  cause: Schema.optional(Schema.Defect)
}) {
  override get message(): string {
    return `verifier database: ${this.operation} failed: ${this.reason}`
  }
}

/**
 * The failure of `operation`, its reason what the driver said below the SqlError's own "Failed to
 * execute statement", with its code: "Failed to execute statement: canceling statement due to user
 * request (57014)". The operator reading the log, and the admin reading a 500, need the cause.
 */
export const storeError = (operation: string) => (cause: unknown): VerifierStoreError => {
  const code = codeOf(cause)
  return new VerifierStoreError({
    operation,
    reason: `${reasonsOf(cause)}${code === undefined ? "" : ` (${code})`}`,
    cause
  })
}
