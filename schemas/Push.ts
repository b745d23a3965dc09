/**
 * API 3.0 (push model) documents, as the Rust push agent sends and reads them (push-model.md §1):
 * JSON:API request documents for sessions and the two attestation phases, and the attributes the
 * verifier answers with. Field names are Keylime's. Decoding a request body goes through
 * src/verifier/http/v3/documents.ts, which turns Schema issues into JSON:API errors with
 * `source.pointer`.
 */
import { Schema } from "effect"
import { AGENT_ID_RULE, isAgentId } from "./Common.js"

const NonNegativeInt = Schema.Int.pipe(Schema.nonNegative())
/** Standard base64 (the Rust agent's encoding of TPM structures and logs). */
export const B64_PATTERN = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
export const B64 = Schema.String.pipe(Schema.pattern(B64_PATTERN, { message: () => "must be base64" }))

// --- sessions (§1.6) -----------------------------------------------------------------------------

/** A session's agent id: given (Keylime's "is required"), then an agent id as on every route. */
const SessionAgentId = Schema.String.pipe(
  Schema.minLength(1, { message: () => "is required" }),
  Schema.filter((s) => isAgentId(s), { message: () => `is not valid: an agent id ${AGENT_ID_RULE}` })
)

export const AuthenticationMethod = Schema.Struct({
  authentication_class: Schema.String,
  authentication_type: Schema.String
})

export const SessionCreateDocument = Schema.Struct({
  data: Schema.Struct({
    type: Schema.Literal("session"),
    attributes: Schema.Struct({
      agent_id: SessionAgentId,
      authentication_supported: Schema.Array(AuthenticationMethod)
    })
  })
})
export type SessionCreateDocument = typeof SessionCreateDocument.Type

export const PopProof = Schema.Struct({
  authentication_class: Schema.String,
  authentication_type: Schema.String,
  data: Schema.Struct({ message: B64, signature: B64 })
})

export const SessionUpdateDocument = Schema.Struct({
  data: Schema.Struct({
    type: Schema.Literal("session"),
    id: Schema.optional(Schema.String),
    attributes: Schema.Struct({
      agent_id: SessionAgentId,
      /** Absent when an existing token extends the session (Authorization header). */
      authentication_provided: Schema.optional(Schema.Array(PopProof))
    })
  })
})
export type SessionUpdateDocument = typeof SessionUpdateDocument.Type

// --- phase 1: capabilities (§1.3) ----------------------------------------------------------------

export const CertificationKey = Schema.Struct({
  key_class: Schema.Literal("asymmetric", "symmetric"),
  key_size: NonNegativeInt,
  key_algorithm: Schema.optional(Schema.String),
  server_identifier: Schema.optional(Schema.String),
  local_identifier: Schema.optional(Schema.String),
  public: Schema.optional(B64),
  allowable_hash_algorithms: Schema.optional(Schema.Array(Schema.String)),
  allowable_signature_schemes: Schema.optional(Schema.Array(Schema.String))
})
export type CertificationKey = typeof CertificationKey.Type

export const TpmQuoteCapabilities = Schema.Struct({
  component_version: Schema.String,
  hash_algorithms: Schema.Array(Schema.String),
  signature_schemes: Schema.Array(Schema.String),
  available_subjects: Schema.Record({ key: Schema.String, value: Schema.Array(Schema.Int.pipe(Schema.between(0, 23))) }),
  certification_keys: Schema.Array(CertificationKey)
})
export type TpmQuoteCapabilities = typeof TpmQuoteCapabilities.Type

export const LogCapabilities = Schema.Struct({
  evidence_version: Schema.optional(Schema.String),
  entry_count: Schema.optional(NonNegativeInt),
  supports_partial_access: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  appendable: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  formats: Schema.Array(Schema.String)
})
export type LogCapabilities = typeof LogCapabilities.Type

export const EvidenceSupported = Schema.Union(
  Schema.Struct({
    evidence_class: Schema.Literal("certification"),
    evidence_type: Schema.Literal("tpm_quote"),
    capabilities: TpmQuoteCapabilities
  }),
  Schema.Struct({
    evidence_class: Schema.Literal("log"),
    evidence_type: Schema.Literal("uefi_log", "ima_log"),
    capabilities: LogCapabilities
  })
)
export type EvidenceSupported = typeof EvidenceSupported.Type

export const AttestationCreateDocument = Schema.Struct({
  data: Schema.Struct({
    type: Schema.Literal("attestation"),
    attributes: Schema.Struct({
      evidence_supported: Schema.Array(EvidenceSupported),
      system_info: Schema.optional(Schema.Struct({ boot_time: Schema.String }))
    })
  })
})
export type AttestationCreateDocument = typeof AttestationCreateDocument.Type

// --- the verifier's choice (201) -----------------------------------------------------------------

export interface TpmQuoteParameters {
  readonly signature_scheme: string
  readonly challenge: string
  readonly hash_algorithm: string
  readonly selected_subjects: Readonly<Record<string, ReadonlyArray<number> | null>>
  readonly certification_key: CertificationKey
}

export type EvidenceRequested =
  | { readonly evidence_class: "certification"; readonly evidence_type: "tpm_quote"; readonly chosen_parameters: TpmQuoteParameters }
  | { readonly evidence_class: "log"; readonly evidence_type: "uefi_log"; readonly chosen_parameters: { readonly format: string } }
  | {
    readonly evidence_class: "log"
    readonly evidence_type: "ima_log"
    readonly chosen_parameters: { readonly starting_offset: number; readonly format: string }
  }

// --- phase 2: evidence (§1.4) --------------------------------------------------------------------

export const TpmQuoteData = Schema.Struct({ subject_data: B64, message: B64, signature: B64 })
export const UefiLogData = Schema.Struct({ entries: B64 })
export const ImaLogData = Schema.Struct({ entry_count: Schema.optional(NonNegativeInt), entries: Schema.String })

export const EvidenceCollected = Schema.Union(
  Schema.Struct({ evidence_class: Schema.Literal("certification"), evidence_type: Schema.Literal("tpm_quote"), data: TpmQuoteData }),
  Schema.Struct({ evidence_class: Schema.Literal("log"), evidence_type: Schema.Literal("uefi_log"), data: UefiLogData }),
  Schema.Struct({ evidence_class: Schema.Literal("log"), evidence_type: Schema.Literal("ima_log"), data: ImaLogData })
)
export type EvidenceCollected = typeof EvidenceCollected.Type

export const AttestationEvidenceDocument = Schema.Struct({
  data: Schema.Struct({
    type: Schema.Literal("attestation"),
    attributes: Schema.Struct({ evidence_collected: Schema.Array(EvidenceCollected) })
  })
})
export type AttestationEvidenceDocument = typeof AttestationEvidenceDocument.Type

// --- stored/rendered vocabulary (§1.5, §2.1) -----------------------------------------------------

export const AttestationStage = Schema.Literal("awaiting_evidence", "evaluating_evidence", "verification_complete")
export type AttestationStage = typeof AttestationStage.Type
export const AttestationEvaluation = Schema.Literal("pending", "pass", "fail")
export type AttestationEvaluation = typeof AttestationEvaluation.Type
export const FailureReason = Schema.Literal("broken_evidence_chain", "policy_violation")
export type FailureReason = typeof FailureReason.Type

/** The attestation resource's attributes as the verifier renders them (render_state plus attest's additions). */
export const AttestationAttributes = Schema.Struct({
  stage: AttestationStage,
  evaluation: AttestationEvaluation,
  /** attest renders it (Keylime stores it without rendering: push-model.md §0.4). */
  failure_reason: Schema.optional(Schema.NullOr(FailureReason)),
  evidence: Schema.Array(Schema.Unknown),
  system_info: Schema.Struct({ boot_time: Schema.String }),
  capabilities_received_at: Schema.String,
  challenges_expire_at: Schema.String,
  evidence_received_at: Schema.optional(Schema.String),
  verification_completed_at: Schema.optional(Schema.String)
})
export type AttestationAttributes = typeof AttestationAttributes.Type

/** A resource object of any type, as clients read it. */
export const JsonApiResource = Schema.Struct({
  type: Schema.String,
  id: Schema.optional(Schema.String),
  attributes: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  links: Schema.optional(Schema.Struct({ self: Schema.String }))
})

export const JsonApiErrorObject = Schema.Struct({
  status: Schema.String,
  code: Schema.optional(Schema.String),
  title: Schema.optional(Schema.String),
  detail: Schema.String,
  source: Schema.optional(Schema.Struct({ pointer: Schema.String }))
})

export const JsonApiErrorDocument = Schema.Struct({
  errors: Schema.NonEmptyArray(JsonApiErrorObject),
  links: Schema.optional(Schema.Struct({ self: Schema.String })),
  jsonapi: Schema.optional(Schema.Struct({ version: Schema.String }))
})
export type JsonApiErrorDocument = typeof JsonApiErrorDocument.Type
