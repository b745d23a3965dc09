/**
 * API 3.0 administration documents (spec §4.4): agents, IMA policies and UEFI reference states as
 * JSON:API resources. Attributes mirror the v2 bodies (spec §2.3, §2.4) field for field, so the
 * same domain checks them (src/verifier/domain/Agents.ts, domain/policy/Policies.ts, AgentAdmin.ts); the
 * resource id is the agent id or the policy name. The `*Document` schemas describe the wire for
 * clients and the OpenAPI document; the server reads bodies with the `Read*` schemas (shape only)
 * and lets the domain judge the attributes, so a refusal names the field in one voice.
 */
import { Schema } from "effect"
import { AgentCreateBody, AgentStatus, MbPolicyRequest, RuntimePolicyRequest } from "./Verifier.js"

/** Resource types of the administration routes. */
export const V3Type = { agent: "agent", imaPolicy: "ima_policy", uefiRefstate: "uefi_refstate" } as const

const Attributes = Schema.Record({ key: Schema.String, value: Schema.Unknown })
const Id = Schema.String.pipe(Schema.minLength(1, { message: () => "is required (the resource's id)" }))

/** What the server reads of a creation document: type, id, attributes as an object. */
export const ReadCreateDocument = <T extends string>(type: T) =>
  Schema.Struct({ data: Schema.Struct({ type: Schema.Literal(type), id: Id, attributes: Attributes }) })

/** What the server reads of a PATCH document: the id may be left out (it is the path's). */
export const ReadUpdateDocument = <T extends string>(type: T) =>
  Schema.Struct({ data: Schema.Struct({ type: Schema.Literal(type), id: Schema.optional(Schema.String), attributes: Attributes }) })

// --- agents ----------------------------------------------------------------------------------------

/** POST /v3/agents: `data.id` is the agent id, the attributes are a v2 creation body. */
export const AgentCreateDocument = Schema.Struct({
  data: Schema.Struct({ type: Schema.Literal(V3Type.agent), id: Schema.String, attributes: AgentCreateBody })
}).annotations({ identifier: "V3AgentCreateDocument" })

/**
 * PATCH /v3/agents/:id: what an admin may change on an enrolled agent. Every field is optional;
 * values are checked as at creation. The AK, V and inline policies are not changed here (the AK is
 * the agent's identity; policies are changed by name, their texts under /v3/policies/ima and
 * /v3/refstates/uefi).
 */
export const AgentPatchAttributes = Schema.Struct({
  cloudagent_ip: Schema.optional(Schema.String),
  cloudagent_port: Schema.optional(Schema.Union(Schema.Int, Schema.String)),
  tpm_policy: Schema.optional(Schema.String),
  vtpm_policy: Schema.optional(Schema.NullOr(Schema.String)),
  metadata: Schema.optional(Schema.String),
  ima_sign_verification_keys: Schema.optional(Schema.String),
  revocation_key: Schema.optional(Schema.String),
  accept_tpm_hash_algs: Schema.optional(Schema.Array(Schema.String)),
  accept_tpm_encryption_algs: Schema.optional(Schema.Array(Schema.String)),
  accept_tpm_signing_algs: Schema.optional(Schema.Array(Schema.String)),
  mtls_cert: Schema.optional(Schema.NullOr(Schema.String)),
  supported_version: Schema.optional(Schema.NullOr(Schema.String)),
  runtime_policy_name: Schema.optional(Schema.String),
  mb_policy_name: Schema.optional(Schema.String),
  /** Push agents: false refuses their attestations (as a missed deadline does), true accepts them again. */
  accept_attestations: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "V3AgentPatchAttributes" })
export type AgentPatchAttributes = typeof AgentPatchAttributes.Type

export const AgentPatchDocument = Schema.Struct({
  data: Schema.Struct({ type: Schema.Literal(V3Type.agent), id: Schema.optional(Schema.String), attributes: AgentPatchAttributes })
}).annotations({ identifier: "V3AgentPatchDocument" })

/** The fields of an agent resource: its v2 status (API 2.6 shape, without V), its policy names, and for a push agent its push state. */
export const AgentAttributes = Schema.Struct({
  ...AgentStatus.omit("v").fields,
  runtime_policy_name: Schema.String,
  mb_policy_name: Schema.String,
  push: Schema.NullOr(Schema.Struct({
    accept_attestations: Schema.Boolean,
    consecutive_attestation_failures: Schema.Int,
    last_received_attestation: Schema.NullOr(Schema.String),
    attestation_deadline: Schema.NullOr(Schema.String),
    latest_attestation: Schema.NullOr(Schema.Struct({ index: Schema.Int, stage: Schema.String, evaluation: Schema.String, failure_reason: Schema.NullOr(Schema.String) }))
  }))
}).annotations({ identifier: "V3AgentAttributes" })

// --- policies --------------------------------------------------------------------------------------

/** POST /v3/policies/ima (id = name) and PATCH /v3/policies/ima/:name (the whole policy again). */
export const ImaPolicyDocument = Schema.Struct({
  data: Schema.Struct({ type: Schema.Literal(V3Type.imaPolicy), id: Schema.optional(Schema.String), attributes: RuntimePolicyRequest })
}).annotations({ identifier: "V3ImaPolicyDocument" })

/** POST /v3/refstates/uefi (id = name) and PATCH /v3/refstates/uefi/:name: `mb_policy` is the reference state JSON text. */
export const UefiRefstateDocument = Schema.Struct({
  data: Schema.Struct({ type: Schema.Literal(V3Type.uefiRefstate), id: Schema.optional(Schema.String), attributes: MbPolicyRequest })
}).annotations({ identifier: "V3UefiRefstateDocument" })
