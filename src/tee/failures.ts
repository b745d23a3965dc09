/**
 * Failure types of TEE evidence: dotted, under Keylime's component `tee_attestation.`, with Keylime's ids where it has one
 * (keylime-wire.md §3.4: missing_param, invalid.tee, invalid_input, invalid_public_key,
 * invalid_signature, freshness_hash_failed) and attest's own for the checks Keylime lacks.
 */
export const TEE_FAILURE = {
  /** A required request field is absent, null or empty. */
  missingParam: "tee_attestation.missing_param",
  /** `tee-evidence.tee` names a TEE attest does not verify. */
  invalidTee: "tee_attestation.invalid.tee",
  /** A field is malformed: not base64, not a report, not a VCEK, a policy that does not decode. */
  invalidInput: "tee_attestation.invalid_input",
  /** The VCEK's key is not P-384, or the TEE public key is not a point of a NIST curve. */
  invalidPublicKey: "tee_attestation.invalid_public_key",
  /** The report's signature does not verify with the VCEK. */
  invalidSignature: "tee_attestation.invalid_signature",
  /** report_data is not SHA-512(x ‖ y ‖ nonce). */
  freshnessHashFailed: "tee_attestation.freshness_hash_failed",
  /** No VCEK in the request and none in `snp_vcek_dir` for the report's chip and TCB. */
  vcekNotFound: "tee_attestation.vcek_not_found",
  /** The VCEK does not chain to AMD's ARK and ASK of its product line (or is outside its validity). */
  vcekChain: "tee_attestation.vcek_chain",
  /** The VCEK was derived for another TCB than the report's reported_tcb. */
  tcbMismatch: "tee_attestation.tcb_mismatch",
  /** The VCEK belongs to another chip than the report's chip_id. */
  chipIdMismatch: "tee_attestation.chip_id_mismatch"
} as const

/** One violated rule of `snp_policy`: `tee_attestation.policy.<rule>`. */
export const policyFailureType = (rule: string) => `tee_attestation.policy.${rule}`
