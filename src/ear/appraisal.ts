/**
 * A verdict as an EAR appraisal (draft-ietf-rats-ear, AR4SI trustworthiness claims): the
 * trustworthiness vector claims attest's checks support, and the status.
 *
 * Claims (AR4SI values; tiers: -1..1 none, 2..31 affirming, 32..95 warning, 96..127 contraindicated):
 *
 * | claim | from | affirming | failures |
 * |---|---|---|---|
 * | instance-identity | quote signed by the AK (bound to the EK at registration), PCR 16 = the NK | 2 recognized | `qoute_validation.invalid_quote`, `default.*`: 1 unexpected evidence; other `qoute_validation.*`: 99 crypto failed; `pcr_validation.*_pcr_16`: 96 untrustworthy; `internal.*`: -1 verifier malfunction |
 * | executables | IMA list replayed to PCR 10 and judged by the runtime policy | 2 approved boot and run time | `ima.parser.*`, `ima.invalid_key`: 1; list not matching the quote (`ima.pcr_mismatch`, `ima.validation.ima_pcr`, `ima.validation.ima_hash`, `ima.quote_progress`): 99; `not_in_allowlist`, `tomtou`: 33 unrecognized; a known file with another digest (`runtime_policy_hash`), a bad signature: 96 contraindicated |
 * | hardware | boot log replayed to the quoted PCRs and judged by the measured-boot policy | 2 genuine | `measured_boot.parser.*`: 1; log not matching the quote (`invalid_pcr_*`, `missing_pcrs`): 99; the policy refuses it (`policy_*`): 96 |
 * | configuration | `tpm_policy` PCR values (a claim only when one is refused: the verdict cannot tell whether the policy constrained any PCR) | — | `pcr_validation.*` (not PCR 16): 96 unsupportable |
 * | hardware, instance-identity, runtime-opaque | TEE (SEV-SNP) evidence | 2 (runtime-opaque 2: encrypted memory) | `tee_attestation.policy.*`: hardware 96; `tee_attestation.missing_param`, `tee_attestation.invalid.*`: 1; other `tee_attestation.*`: instance-identity 99 |
 *
 * A check that did not run gives no claim. Status: `affirming` without failures; `none` when every
 * failure is a request problem (`default.*`: the evidence could not be appraised); otherwise
 * `contraindicated` when a failure is irrecoverable (quote, request, internal, TEE: Keylime's rule)
 * or the severity policy stops polling (by default every failure does: Keylime's single
 * `emergency` label), and `warning` when every failure is recoverable and below the severity that
 * stops polling. The status is then never better than the worst tier of the vector's claims (as
 * AR4SI asks), so a contraindicated claim always makes the result contraindicated.
 */
import type { Failure } from "../../schemas/Evidence.js"
import { isRecoverable } from "../attestation/evaluate/severity.js"
import type { Evaluation } from "../attestation/evaluate/types.js"

export type EarStatus = "affirming" | "warning" | "contraindicated" | "none"

export const TRUST_CLAIMS = [
  "instance-identity",
  "configuration",
  "executables",
  "file-system",
  "hardware",
  "runtime-opaque",
  "storage-opaque",
  "sourced-data"
] as const
export type TrustClaim = (typeof TRUST_CLAIMS)[number]

export type TrustVector = Partial<Record<TrustClaim, number>>

/** What a verdict says, from the evaluator's Evaluation (`fromEvaluation`) or given plainly. */
export interface EarVerdict {
  readonly agentId: string
  readonly failures: ReadonlyArray<Failure>
  /** Which checks ran; a check that did not run makes no claim. */
  readonly appraised: {
    readonly quote?: boolean | undefined
    readonly ima?: boolean | undefined
    readonly boot?: boolean | undefined
    readonly tee?: boolean | undefined
  }
  /**
   * The severity policy stops polling for these failures (the evaluator's
   * `severity.stopPolling`). Default true: Keylime's default policy gives every failure the maximum.
   */
  readonly stopPolling?: boolean | undefined
  /** The nonce the evidence answered: text as sent (10-74 characters) or bytes (8-64, base64url in the token). */
  readonly nonce?: string | Uint8Array | undefined
  /** The policy the evidence was judged by (`ear.appraisal-policy-id`), e.g. the runtime policy's name and checksum. */
  readonly policyId?: string | undefined
}

/** The verdict of one evaluation (pull cycle, push attestation, verify/evidence). */
export const fromEvaluation = (
  agentId: string,
  evaluation: Pick<Evaluation, "failures" | "severity" | "claims">,
  extra: { readonly nonce?: string | Uint8Array; readonly policyId?: string } = {}
): EarVerdict => {
  const claims = evaluation.claims
  return {
    agentId,
    failures: evaluation.failures,
    appraised: claims === undefined
      ? {}
      : claims.type === "tee"
      ? { tee: true }
      : { quote: true, ima: claims.ima !== undefined, boot: claims.boot_aggregates !== undefined },
    stopPolling: evaluation.severity.stopPolling,
    ...(extra.nonce === undefined ? {} : { nonce: extra.nonce }),
    ...(extra.policyId === undefined ? {} : { policyId: extra.policyId })
  }
}

/** A plain verdict `{ valid, failures, claims, nonce, agentId }` (claims as the evaluator gives them). */
export const fromPlainVerdict = (v: {
  readonly agentId: string
  readonly valid: boolean
  readonly failures: ReadonlyArray<Failure>
  readonly claims?: unknown
  readonly nonce?: string | Uint8Array
}): EarVerdict => {
  const claims = (typeof v.claims === "object" && v.claims !== null ? v.claims : {}) as Record<string, unknown>
  const tee = claims["type"] === "tee"
  const tpm = claims["type"] === "tpm"
  return {
    agentId: v.agentId,
    // a verdict said invalid without a failure still fails
    failures: v.valid || v.failures.length > 0 ? v.failures : [{ type: "internal.invalid_verdict", context: { message: "verdict invalid without a failure" } }],
    appraised: tee ? { tee: true } : tpm ? { quote: true, ima: claims["ima"] !== undefined, boot: claims["boot_aggregates"] !== undefined } : {},
    ...(v.nonce === undefined ? {} : { nonce: v.nonce })
  }
}

const TIERS: ReadonlyArray<EarStatus> = ["none", "affirming", "warning", "contraindicated"]

/** The AR4SI tier of a claim value. */
export const tierOf = (value: number): EarStatus =>
  value >= 96 ? "contraindicated" : value >= 32 ? "warning" : value >= 2 ? "affirming" : "none"

const worse = (a: EarStatus, b: EarStatus): EarStatus => (TIERS.indexOf(a) >= TIERS.indexOf(b) ? a : b)

/** Of two claim values, the one of the worse tier (the later one on a tie). */
const worseValue = (a: number | undefined, b: number): number =>
  a === undefined || TIERS.indexOf(tierOf(b)) >= TIERS.indexOf(tierOf(a)) ? b : a

/** The claim a failure type bears on, and its value; undefined when it bears on none. */
export const claimOfFailure = (type: string): readonly [TrustClaim, number] | undefined => {
  if (type === "qoute_validation.invalid_quote" || type.startsWith("default.")) return ["instance-identity", 1]
  if (type.startsWith("qoute_validation.")) return ["instance-identity", 99]
  if (type.startsWith("internal.")) return ["instance-identity", -1]
  if (/^pcr_validation\.(invalid|missing)_pcr_16$/.test(type)) return ["instance-identity", 96]
  if (type.startsWith("pcr_validation.")) return ["configuration", 96]
  if (type.startsWith("ima.parser.") || type === "ima.invalid_key") return ["executables", 1]
  if (type === "ima.pcr_mismatch" || type === "ima.validation.ima_pcr" || type === "ima.validation.ima_hash" || type === "ima.quote_progress") return ["executables", 99]
  if (type.endsWith(".not_in_allowlist") || type === "ima.validation.tomtou") return ["executables", 33]
  if (type.startsWith("ima.")) return ["executables", 96]
  if (type.startsWith("measured_boot.parser.")) return ["hardware", 1]
  if (type.startsWith("measured_boot.policy")) return ["hardware", 96]
  if (type.startsWith("measured_boot.")) return ["hardware", 99]
  if (type.startsWith("tee_attestation.policy.")) return ["hardware", 96]
  if (type === "tee_attestation.missing_param" || type.startsWith("tee_attestation.invalid.")) return ["instance-identity", 1]
  if (type.startsWith("tee_attestation.")) return ["instance-identity", 99]
  return undefined
}

export interface Appraisal {
  readonly status: EarStatus
  readonly vector: TrustVector
}

/** The trustworthiness vector and status of a verdict (rules in the module header). */
export const appraise = (v: EarVerdict): Appraisal => {
  const vector: TrustVector = {}
  if (v.appraised.quote === true) vector["instance-identity"] = 2
  if (v.appraised.ima === true) vector.executables = 2
  if (v.appraised.boot === true) vector.hardware = 2
  if (v.appraised.tee === true) {
    vector["instance-identity"] = 2
    vector.hardware = 2
    vector["runtime-opaque"] = 2
  }
  const failed = new Map<TrustClaim, number>()
  for (const f of v.failures) {
    const hit = claimOfFailure(f.type)
    if (hit !== undefined) failed.set(hit[0], worseValue(failed.get(hit[0]), hit[1]))
  }
  for (const [claim, value] of failed) vector[claim] = value

  let status: EarStatus
  if (v.failures.length === 0) status = "affirming"
  else if (v.failures.every((f) => f.type.startsWith("default."))) status = "none"
  else if (v.failures.some((f) => !isRecoverable(f.type)) || v.stopPolling !== false) status = "contraindicated"
  else status = "warning"
  if (status !== "none") for (const value of Object.values(vector)) status = worse(status, tierOf(value))
  return { status, vector }
}
