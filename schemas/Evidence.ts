/**
 * The one attestation failure type shared by every evidence check (quote, PCRs, IMA, measured boot,
 * TEE reports) and every path that reports them (pull loop, push attestations, `verify/evidence`):
 * Keylime's dotted type string (keylime-wire.md §3.4, its spellings included) and a context with a
 * human-readable message plus whatever facts the check adds (entry, path, pcr, expected, got…).
 * A failed attestation is a value of this type, never an exception.
 */
import { Schema } from "effect"

export const FailureContext = Schema.Struct(
  { message: Schema.String },
  Schema.Record({ key: Schema.String, value: Schema.Unknown })
).annotations({ identifier: "FailureContext" })
export type FailureContext = typeof FailureContext.Type

/** `{ type, context: { message, … } }`, the shape of verify/evidence `failures` items (spec §2.5). */
export const Failure = Schema.Struct({
  type: Schema.String,
  context: FailureContext
}).annotations({ identifier: "Failure" })
export type Failure = typeof Failure.Type

// --- verify/evidence and verify/identity (spec §2.5, §4.1; keylime-wire.md §1.4) -----------------

/** The POST verify/evidence body. Presence and order of the checks are Keylime's (src/verifier/stateless/evidenceRequest.ts). */
export const VerifyEvidenceRequest = Schema.Struct({
  type: Schema.String,
  data: Schema.Record({ key: Schema.String, value: Schema.Unknown })
}).annotations({ identifier: "VerifyEvidenceRequest" })
export type VerifyEvidenceRequest = typeof VerifyEvidenceRequest.Type

/**
 * `data` of a `tpm` request. Every field optional here: a missing one is a `default.missing_param`
 * failure in Keylime's order, not a decode error. `mb_log` is the name Keylime reads for the binary
 * boot log (base64); the spec calls it `mb_list`, which is accepted too.
 */
export const TpmEvidenceData = Schema.Struct({
  quote: Schema.optional(Schema.String),
  nonce: Schema.optional(Schema.String),
  hash_alg: Schema.optional(Schema.String),
  tpm_ek: Schema.optional(Schema.String),
  tpm_ak: Schema.optional(Schema.String),
  tpm_policy: Schema.optional(Schema.String),
  runtime_policy: Schema.optional(Schema.String),
  mb_policy: Schema.optional(Schema.String),
  ima_measurement_list: Schema.optional(Schema.String),
  mb_log: Schema.optional(Schema.String),
  mb_list: Schema.optional(Schema.String)
}).annotations({ identifier: "TpmEvidenceData" })
export type TpmEvidenceData = typeof TpmEvidenceData.Type

/** Result of verify/evidence from API 2.5: boolean `valid`; `claims` echo the submitted data when valid (`{}` otherwise). */
export const VerifyEvidenceResult = Schema.Struct({
  valid: Schema.Boolean,
  claims: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  failures: Schema.Array(Failure)
}).annotations({ identifier: "VerifyEvidenceResult" })
export type VerifyEvidenceResult = typeof VerifyEvidenceResult.Type

/** Result of verify/evidence in API 2.4 (experimental): integer `valid`, no claims. */
export const VerifyEvidenceResultV24 = Schema.Struct({
  valid: Schema.Literal(0, 1),
  failures: Schema.Array(Failure)
}).annotations({ identifier: "VerifyEvidenceResultV24" })
export type VerifyEvidenceResultV24 = typeof VerifyEvidenceResultV24.Type

/** The verify/evidence result of either version (the 200 body's `results`). */
export const EvidenceResults = Schema.Union(VerifyEvidenceResult, VerifyEvidenceResultV24).annotations({ identifier: "EvidenceResults" })

/** GET verify/identity query; every parameter is required (checked in this order, with Keylime's texts). */
export const VerifyIdentityQuery = Schema.Struct({
  agent_uuid: Schema.optional(Schema.String),
  quote: Schema.optional(Schema.String),
  nonce: Schema.optional(Schema.String),
  hash_alg: Schema.optional(Schema.String)
}).annotations({ identifier: "VerifyIdentityQuery" })
export type VerifyIdentityQuery = typeof VerifyIdentityQuery.Type

/** `{valid: 1}`, or `{valid: 0, reason}` where reason is the failure contexts as JSON text joined with "; " (a string, as Keylime). */
export const VerifyIdentityResult = Schema.Union(
  Schema.Struct({ valid: Schema.Literal(1) }),
  Schema.Struct({ valid: Schema.Literal(0), reason: Schema.String })
).annotations({ identifier: "VerifyIdentityResult" })
export type VerifyIdentityResult = typeof VerifyIdentityResult.Type

/** `message` comes first in the context, as in Keylime's (its JSON text is compared by clients). */
export const makeFailure = (type: string, message: string, facts: Readonly<Record<string, unknown>> = {}): Failure => ({
  type,
  context: { message, ...facts, ...(facts["message"] === undefined ? {} : { message }) }
})

// ---------------------------------------------------------------------------------------------
// TEE evidence (verify/evidence with `type: "tee"`), in Keylime's request shape so its clients work.

const BASE64_PADDING_OPTIONAL = /^[A-Za-z0-9+/]*={0,2}$/
/** Characters before the padding; a length of 4n + 1 is no byte string. */
const unpadded = (s: string) => s.length - (s.endsWith("==") ? 2 : s.endsWith("=") ? 1 : 0)

/** Standard base64 (padding optional), as Keylime's `base64.b64decode` reads `nonce` and `snp-report`. */
export const TeeBase64 = Schema.String.pipe(
  Schema.filter((s) => s.length > 0 && BASE64_PADDING_OPTIONAL.test(s) && unpadded(s) % 4 !== 1, {
    message: () => "is not base64"
  })
).annotations({ identifier: "TeeBase64" })

/** URL-safe base64 without padding (RFC 7515 base64url): the TEE public key coordinates. */
export const UrlBase64NoPad = Schema.String.pipe(
  Schema.filter((s) => s.length > 0 && /^[A-Za-z0-9_-]*$/.test(s) && s.length % 4 !== 1, {
    message: () => "is not URL-safe base64 without padding"
  })
).annotations({ identifier: "UrlBase64NoPad" })

const Spl = Schema.Int.pipe(Schema.between(0, 255))

/**
 * attest's optional SEV-SNP appraisal policy (`data.snp_policy`; Keylime has none). Every rule given
 * is checked and each violated rule is one failure `tee_attestation.policy.<rule>`.
 */
export const SnpPolicy = Schema.Struct({
  /** The launch measurement (hex, 48 bytes) must be one of these. */
  allowed_measurements: Schema.optional(
    Schema.Array(Schema.String.pipe(Schema.pattern(/^[0-9a-fA-F]{96}$/, { message: () => "must be 96 hex digits (a 48-byte measurement)" })))
  ),
  /** Each given part of the report's reported_tcb must be at least this. */
  minimum_tcb: Schema.optional(
    Schema.Struct({
      bootloader: Schema.optional(Spl),
      tee: Schema.optional(Spl),
      snp: Schema.optional(Spl),
      microcode: Schema.optional(Spl),
      fmc: Schema.optional(Spl)
    })
  ),
  /** Default false: the guest policy must not allow debugging. */
  allow_debug: Schema.optional(Schema.Boolean),
  /** Default true; false: the platform must run with SMT disabled. */
  allow_smt: Schema.optional(Schema.Boolean),
  /** Default false; true: the guest policy must restrict the guest to a single socket. */
  require_single_socket: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "SnpPolicy" })
export type SnpPolicy = typeof SnpPolicy.Type

/** `data["tee-evidence"].evidence` for `tee: "snp"`; `vcek` is attest's addition (else the configured directory). */
export const SnpEvidence = Schema.Struct({
  "snp-report": TeeBase64,
  vcek: Schema.optional(TeeBase64)
}).annotations({ identifier: "SnpEvidence" })

export const TeeEvidence = Schema.Struct({
  tee: Schema.Literal("snp"),
  evidence: SnpEvidence
}).annotations({ identifier: "TeeEvidence" })

/**
 * The request's `data` for `type: "tee"`. `report_data` of the SNP report must be
 * SHA-512(x ‖ y ‖ nonce), binding the TEE's public key and the caller's nonce.
 */
export const TeeEvidenceData = Schema.Struct({
  nonce: TeeBase64,
  "tee-pubkey-x-b64": UrlBase64NoPad,
  "tee-pubkey-y-b64": UrlBase64NoPad,
  "tee-evidence": TeeEvidence,
  snp_policy: Schema.optional(SnpPolicy)
}).annotations({ identifier: "TeeEvidenceData" })
export type TeeEvidenceData = typeof TeeEvidenceData.Type

/** `POST verify/evidence` with `type: "tee"`. */
export const TeeEvidenceRequest = Schema.Struct({
  type: Schema.Literal("tee"),
  data: TeeEvidenceData
}).annotations({ identifier: "TeeEvidenceRequest" })
export type TeeEvidenceRequest = typeof TeeEvidenceRequest.Type
