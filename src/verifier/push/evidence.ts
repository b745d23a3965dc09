/**
 * Phase 2's input check (push-model.md §1.4): the evidence must answer what was requested, item
 * for item in the same order; the quote's parts become the pull-style quote string, so the one
 * evaluator judges push evidence as it judges pull quotes. Pure.
 */
import { Either } from "effect"
import type { EvidenceCollected, EvidenceRequested, FailureReason } from "../../../schemas/Push.js"
import type { Failure } from "../../../schemas/Evidence.js"
import type { TpmEvidence } from "../../attestation/evaluate/types.js"
import { InvalidResourceData } from "./errors.js"

const POINTER = "/data/attributes/evidence_collected"

export interface EvidenceContext {
  /** Seconds since the epoch of the agent's boot (system_info.boot_time). */
  readonly bootTime: number | undefined
}

export const evidenceOf = (
  requested: ReadonlyArray<EvidenceRequested>,
  collected: ReadonlyArray<EvidenceCollected>,
  ctx: EvidenceContext
): Either.Either<TpmEvidence, InvalidResourceData> => {
  if (collected.length !== requested.length) {
    return Either.left(new InvalidResourceData({ pointer: POINTER, reason: "must contain a number of elements equal to that which were requested" }))
  }
  let evidence: { -readonly [K in keyof TpmEvidence]: TpmEvidence[K] } | undefined
  let ima: { list: string; entry: number } | undefined
  let uefi: string | undefined
  for (let i = 0; i < requested.length; i++) {
    const want = requested[i]!
    const got = collected[i]!
    if (got.evidence_type !== want.evidence_type || got.evidence_class !== want.evidence_class) {
      return Either.left(new InvalidResourceData({ pointer: `${POINTER}/${i}/evidence_type`, reason: "must appear in the same order as the evidence requested" }))
    }
    if (want.evidence_type === "tpm_quote" && got.evidence_type === "tpm_quote") {
      const p = want.chosen_parameters
      evidence = {
        _tag: "tpm",
        nonce: new Uint8Array(Buffer.from(p.challenge, "base64")),
        quote: `r${got.data.message}:${got.data.signature}:${got.data.subject_data}`,
        hash_alg: p.hash_algorithm,
        enc_alg: `${p.certification_key.key_algorithm ?? "rsa"}${p.certification_key.key_size}`,
        sign_alg: p.signature_scheme,
        boottime: ctx.bootTime
      }
    } else if (want.evidence_type === "ima_log" && got.evidence_type === "ima_log") {
      const entries = got.data.entries
      const lines = entries === "" ? 0 : entries.split("\n").filter((l) => l !== "").length
      if (got.data.entry_count !== undefined && got.data.entry_count !== lines) {
        return Either.left(new InvalidResourceData({ pointer: `${POINTER}/${i}/data/entry_count`, reason: `must equal the number of entries sent (${lines})` }))
      }
      // the Rust agent may omit the final newline; the IMA parser wants whole lines
      ima = { list: entries === "" || entries.endsWith("\n") ? entries : `${entries}\n`, entry: want.chosen_parameters.starting_offset }
    } else if (got.evidence_type === "uefi_log") {
      uefi = got.data.entries
    }
  }
  if (evidence === undefined) return Either.left(new InvalidResourceData({ pointer: POINTER, reason: "must include the tpm_quote requested" }))
  return Either.right({
    ...evidence,
    ...(ima === undefined ? {} : { ima_measurement_list: ima.list, ima_measurement_list_entry: ima.entry }),
    ...(uefi === undefined ? {} : { mb_measurement_list: uefi })
  })
}

/** Keylime's `_determine_failure_reason`: the evidence itself does not hold together, or it breaks policy. */
export const failureReasonOf = (failures: ReadonlyArray<Failure>): FailureReason =>
  failures.some((f) =>
      f.type === "qoute_validation.quote_validation" || f.type === "qoute_validation.invalid_quote" ||
      f.type.startsWith("measured_boot.invalid_pcr_") || f.type === "ima.pcr_mismatch"
    )
    ? "broken_evidence_chain"
    : "policy_violation"
